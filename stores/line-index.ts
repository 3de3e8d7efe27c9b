/**
 * Where the non-blank lines of a JSONL object start and end, found by feeding its bytes in chunks:
 * the local store reads a file a chunk at a time, the S3 store a response body as it streams, and
 * both read lines by these offsets afterwards. A blank line (spaces, tabs, CR only) is no item.
 */
export interface LineOffsets {
  /** Start offset of each non-blank line. */
  starts: number[];
  /** End offset (exclusive, before the newline) of each non-blank line. */
  ends: number[];
}

export function createLineScanner() {
  const starts: number[] = [];
  const ends: number[] = [];
  let offset = 0;
  let start = 0;
  let blank = true;
  return {
    feed(chunk: Uint8Array, length = chunk.length): void {
      for (let k = 0; k < length; k++) {
        const byte = chunk[k];
        if (byte === 0x0a) {
          if (!blank) {
            starts.push(start);
            ends.push(offset + k);
          }
          start = offset + k + 1;
          blank = true;
        } else if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) blank = false;
      }
      offset += length;
    },
    finish(): LineOffsets {
      if (!blank) {
        starts.push(start);
        ends.push(offset);
        blank = true;
      }
      return { starts, ends };
    },
  };
}

/** The contiguous runs of wanted line numbers (a page of a manifest is usually one), in the order asked. */
export function contiguousRuns(wanted: readonly number[]): Array<{ first: number; last: number }> {
  const runs: Array<{ first: number; last: number }> = [];
  let k = 0;
  while (k < wanted.length) {
    let end = k;
    while (end + 1 < wanted.length && wanted[end + 1] === (wanted[end] as number) + 1) end++;
    runs.push({ first: wanted[k] as number, last: wanted[end] as number });
    k = end + 1;
  }
  return runs;
}

/** The text of lines `first..last` from a buffer that holds the bytes from offset `from`. */
export function linesOf(
  buffer: Buffer,
  from: number,
  offsets: LineOffsets,
  first: number,
  last: number,
): string[] {
  const out: string[] = [];
  for (let n = first; n <= last; n++)
    out.push(
      buffer.toString('utf8', (offsets.starts[n] as number) - from, (offsets.ends[n] as number) - from),
    );
  return out;
}
