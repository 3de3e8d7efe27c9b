import { isPlainObject } from './schemas';
import type { StreamChunk } from './store';

// Stream chunks: the spec caps one chunk at 1 MB and says larger output is split into several.
// Size is the UTF-8 length of the chunk's serialized `output`.

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');

/** Splits one handler output into pieces whose serialized size is at most `maxBytes`. */
export function splitOutput(output: unknown, maxBytes: number): unknown[] {
  if (byteLength(output) <= maxBytes) return [output];
  if (typeof output === 'string') return splitString(output, maxBytes);
  if (
    isPlainObject(output) &&
    Array.isArray(output.text) &&
    output.text.every((t) => typeof t === 'string')
  ) {
    return splitTextOutput(output, output.text as string[], maxBytes);
  }
  // Anything else travels as pieces of its JSON text, in order; the reader joins and parses them.
  return splitString(JSON.stringify(output), maxBytes);
}

/** A text-generation output keeps its shape: the `text` array is spread over several chunks. */
function splitTextOutput(output: Record<string, unknown>, text: string[], maxBytes: number): unknown[] {
  const budget = maxBytes - byteLength({ ...output, text: [] });
  if (budget < 16) return splitString(JSON.stringify(output), maxBytes);
  const pieces = text.flatMap((t) => (byteLength(t) + 1 > budget ? splitString(t, budget - 1) : [t]));
  const groups: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const piece of pieces) {
    const cost = byteLength(piece) + (current.length > 0 ? 1 : 0);
    if (current.length > 0 && size + cost > budget) {
      groups.push(current);
      current = [];
      size = 0;
    }
    size += byteLength(piece) + (current.length > 0 ? 1 : 0);
    current.push(piece);
  }
  if (current.length > 0) groups.push(current);
  return groups.map((group) => ({ ...output, text: group }));
}

/** Pieces of a string, each at most `maxBytes` once JSON-encoded; never splits a surrogate pair. */
export function splitString(text: string, maxBytes: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let length = Math.min(text.length - start, Math.max(1, maxBytes - 2));
    for (;;) {
      let end = start + length;
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff && length > 1) end--;
      const piece = text.slice(start, end);
      const size = byteLength(piece);
      if (size <= maxBytes || end - start <= 1) {
        pieces.push(piece);
        start = end;
        break;
      }
      length = Math.max(1, Math.floor(((end - start) * (maxBytes - 2)) / size) - 1);
    }
  }
  return pieces;
}

/** Chunks with the spec's metrics fields, as a text-generation worker reports them. */
export function makeChunks(output: unknown, firstIndex: number, maxBytes: number): StreamChunk[] {
  const tokens = (key: string) =>
    isPlainObject(output) && Number.isInteger(output[key]) ? (output[key] as number) : 0;
  return splitOutput(output, maxBytes).map((piece, i) => ({
    output: piece,
    metrics: {
      avg_gen_throughput: 42.5,
      avg_prompt_throughput: 128,
      cpu_kv_cache_usage: 0,
      gpu_kv_cache_usage: 0.12,
      input_tokens: tokens('input_tokens'),
      output_tokens: tokens('output_tokens') || firstIndex + i + 1,
      pending: 0,
      running: 1,
      stream_index: firstIndex + i,
      swapped: 0,
      scenario: 'stream',
    },
  }));
}
