/**
 * Where batches keep their item lists (manifests) and results: JSONL files under keys. The
 * interface is small so that a bucket or a database can stand in for the local directory:
 * - a manifest is read a few lines at a time, by line number, so a million items never sit in
 *   memory nor in workflow history;
 * - results are written as whole parts under stable keys (one per activity), so a retried activity
 *   replaces its part instead of appending a second copy.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { storeKeySchema } from '../contracts/batch-input';
import { contiguousRuns, createLineScanner, type LineOffsets, linesOf } from './line-index';

export interface BatchStore {
  /** Which store this is, as result references name it (`local`). */
  readonly name: string;
  /** Number of items (non-blank lines) under `key`. */
  countLines(key: string): Promise<number>;
  /** The lines at these item indexes (0-based among non-blank lines), in the order asked. */
  readLines(key: string, indexes: readonly number[]): Promise<string[]>;
  /** Writes `lines` as the whole content of `key` (replacing it), atomically. */
  writeLines(key: string, lines: readonly string[]): Promise<void>;
  /** Keys directly under `prefix/`, sorted. */
  list(prefix: string): Promise<string[]>;
}

export class BatchStoreError extends Error {
  override readonly name = 'BatchStoreError';
  /**
   * The store could not be reached or answered with a passing fault (a server stopped, throttling
   * beyond the client's retries): the same call may succeed later. False for a key that is not
   * there, a bad key or a store refused by its configuration.
   */
  readonly retryable: boolean;
  constructor(message: string, options: { retryable?: boolean } = {}) {
    super(message);
    this.retryable = options.retryable ?? false;
  }
}

/** The store key of a batch's own files: stable per workflow id, whatever characters it holds. */
export function batchKeyFor(workflowId: string): string {
  return `batch-${createHash('sha256').update(workflowId).digest('hex').slice(0, 32)}`;
}

/** The store a worker uses when none is given: `batches` beside its result store's files. */
export function defaultBatchStore(resultStoreDir: string): BatchStore {
  return createLocalBatchStore(path.join(resultStoreDir, 'batches'));
}

interface LineIndex extends LineOffsets {
  size: number;
  mtimeMs: number;
}

/** Line indexes a store keeps: its manifests and other files over one read. */
const INDEXES_KEPT = 64;
/** Bytes read at a time while indexing a file: a manifest is never in memory whole. */
const INDEX_CHUNK_BYTES = 1 << 20;
/**
 * Files up to this size are indexed at each read and not kept: indexing one costs a single read,
 * and a pipeline reads thousands of one-line files a second, which in a shared cache would push
 * out the index of the manifest that every page reads (a million-line manifest re-scanned at
 * each page).
 */
const UNKEPT_INDEX_BYTES = 64 * 1024;

type FileHandle = Awaited<ReturnType<typeof open>>;

/** The start and end offsets of a file's non-blank lines, read a chunk at a time. */
async function lineOffsets(handle: FileHandle, size: number): Promise<LineOffsets> {
  const scanner = createLineScanner();
  const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(INDEX_CHUNK_BYTES, size)));
  let offset = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, offset);
    if (bytesRead === 0) break;
    scanner.feed(chunk, bytesRead);
    offset += bytesRead;
  }
  return scanner.finish();
}

/** A file's lines as read once: a small file's whole bytes with their offsets, a large one's kept index. */
type OpenedLines = { index: LineOffsets; whole: Buffer } | { index: LineIndex; whole: undefined };

/** A store in a local directory: a key is a relative path under `root`. */
export function createLocalBatchStore(root: string): BatchStore {
  const dir = path.resolve(root);
  // Line offsets per file, built once per process (a manifest does not change under a batch).
  const indexes = new LRUCache<string, LineIndex>({ max: INDEXES_KEPT });

  function fileOf(key: string): string {
    const checked = storeKeySchema.safeParse(key);
    if (!checked.success) throw new BatchStoreError(`invalid store key ${JSON.stringify(key)}`);
    return path.join(dir, key);
  }

  /** Opens `key` once and runs `use` with its lines' offsets (and a small file's bytes). */
  async function withLines<T>(
    key: string,
    use: (lines: OpenedLines, handle: FileHandle) => Promise<T>,
  ): Promise<T> {
    const file = fileOf(key);
    let handle: FileHandle;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      throw new BatchStoreError(`${key} is not in the batch store ${dir}: ${(error as Error).message}`);
    }
    try {
      const info = await handle.stat();
      if (info.size <= UNKEPT_INDEX_BYTES) {
        // One read serves both the index and the lines: a pipeline reads thousands of these a second.
        const whole = await handle.readFile();
        const scanner = createLineScanner();
        scanner.feed(whole);
        return await use({ index: scanner.finish(), whole }, handle);
      }
      const cached = indexes.get(file);
      if (cached && cached.size === info.size && cached.mtimeMs === info.mtimeMs)
        return await use({ index: cached, whole: undefined }, handle);
      const { starts, ends } = await lineOffsets(handle, info.size);
      const index = { size: info.size, mtimeMs: info.mtimeMs, starts, ends };
      indexes.set(file, index);
      return await use({ index, whole: undefined }, handle);
    } finally {
      await handle.close();
    }
  }

  return {
    name: 'local',
    async countLines(key) {
      return withLines(key, async ({ index }) => index.starts.length);
    },
    async readLines(key, wanted) {
      return withLines(key, async ({ index, whole }, handle) => {
        const out: string[] = [];
        // Contiguous runs are read in one go (a page of a manifest usually is one run).
        for (const { first, last } of contiguousRuns(wanted)) {
          if (first < 0 || last >= index.starts.length)
            throw new BatchStoreError(`${key} has no item ${first < 0 ? first : last}`);
          if (whole) {
            out.push(...linesOf(whole, 0, index, first, last));
            continue;
          }
          const from = index.starts[first] as number;
          const buffer = Buffer.alloc((index.ends[last] as number) - from);
          await handle.read(buffer, 0, buffer.length, from);
          out.push(...linesOf(buffer, from, index, first, last));
        }
        return out;
      });
    },
    async writeLines(key, lines) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      const temp = `${file}.${randomUUID()}.tmp`;
      await writeFile(temp, lines.length === 0 ? '' : `${lines.join('\n')}\n`, 'utf8');
      await rename(temp, file);
    },
    async list(prefix) {
      const folder = fileOf(prefix);
      let names: string[];
      try {
        names = await readdir(folder);
      } catch {
        return [];
      }
      return names
        .filter((name) => !name.endsWith('.tmp'))
        .sort()
        .map((name) => `${prefix}/${name}`);
    },
  };
}
