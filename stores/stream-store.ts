/**
 * Where `file` stream sinks put their chunks, one JSON line per chunk. The sink's name is a plain
 * file name (contracts/job-types.ts); the store decides where it lives:
 * - locally, lines are appended to `<dir>/<name>` (one file a reader can tail);
 * - in a bucket, which has no append, each batch of chunks is an object of its own,
 *   `<prefix>/streams/<name>/<first chunk index, 12 digits>.jsonl`, so the objects list in chunk
 *   order and a batch delivered again (the activity retried) replaces its object instead of adding
 *   a copy.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';

export interface StreamStore {
  /** Puts the lines of one batch of chunks of the sink `name`, whose first chunk is `firstIndex`. */
  write(name: string, firstIndex: number, lines: readonly string[]): Promise<void>;
}

export function createLocalStreamStore(dir: string): StreamStore {
  const root = path.resolve(dir);
  return {
    async write(name, _firstIndex, lines) {
      const file = path.join(root, name);
      await mkdir(path.dirname(file), { recursive: true });
      await appendFile(file, `${lines.join('\n')}\n`, 'utf8');
    },
  };
}

/** The key of one batch of chunks in a bucket, under the store's prefix. */
export function streamObjectKey(prefix: string, name: string, firstIndex: number): string {
  return `${prefix ? `${prefix}/` : ''}streams/${name}/${String(firstIndex).padStart(12, '0')}.jsonl`;
}
