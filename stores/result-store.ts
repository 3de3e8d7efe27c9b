/**
 * Where outputs too large for workflow history go. Temporal refuses payloads over 2 MB (and warns
 * well before), while a job's output can be as large as the service allows; so an activity that
 * reads a large output puts it here and hands the workflow a small ResultRef instead.
 *
 * The interface is two calls, so a bucket or a database can stand in for the local directory.
 * Keys are chosen by the caller and are stable (workflow id + job id): a retried activity writes
 * the same key again instead of leaving copies behind.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ResultRef, resultRefSchema } from '../contracts/job-types';

export { type ResultRef, resultRefSchema } from '../contracts/job-types';

export interface ResultStore {
  /** Stores the JSON value under `key` (replacing what was there) and returns its reference. */
  put(key: string, value: unknown): Promise<ResultRef>;
  /** The value a reference points to; throws when it is gone or does not match its checksum. */
  get(ref: ResultRef): Promise<unknown>;
}

/** Default size above which an output goes to the store: well under Temporal's 512 KB payload warning. */
export const DEFAULT_INLINE_MAX_BYTES = 256_000;

export class ResultStoreError extends Error {
  override readonly name = 'ResultStoreError';
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

// Readable and collision-free: the key with unsafe characters replaced, plus a hash of the real key.
export function fileNameFor(key: string): string {
  const readable = key.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120);
  return `${readable}.${sha256(key).slice(0, 16)}.json`;
}

/** The name local stores give their references: the directory is the reader's to say. */
export const LOCAL_STORE_NAME = 'local';

/** A reference to `text` stored under `key` in the store named `store`. */
export function refTo(store: string, key: string, text: string): ResultRef {
  return { kind: 'serverless-result-ref', store, key, bytes: Buffer.byteLength(text), sha256: sha256(text) };
}

/**
 * The reference, checked to be one of this store's: a reader configured for another store gets an
 * error naming both, never another store's file of the same key.
 */
export function refIn(store: string, ref: ResultRef): ResultRef {
  const parsed = resultRefSchema.parse(ref);
  if (parsed.store !== store)
    throw new ResultStoreError(
      `result ${parsed.key} is in the store ${parsed.store}, not in this reader's store ${store}: read it with that store`,
    );
  return parsed;
}

/** The stored value, once its text matches the reference's checksum. */
export function checkedValue(ref: ResultRef, text: string): unknown {
  if (sha256(text) !== ref.sha256)
    throw new ResultStoreError(`result ${ref.key} does not match its checksum`);
  return JSON.parse(text);
}

/** A store in a local directory: one JSON file per key, written atomically (temp file, then rename). */
export function createLocalResultStore(dir: string): ResultStore {
  const root = path.resolve(dir);
  return {
    async put(key, value) {
      const text = JSON.stringify(value ?? null);
      await mkdir(root, { recursive: true });
      const target = path.join(root, fileNameFor(key));
      const temp = `${target}.${randomUUID()}.tmp`;
      await writeFile(temp, text, 'utf8');
      await rename(temp, target);
      return refTo(LOCAL_STORE_NAME, key, text);
    },
    async get(ref) {
      const parsed = refIn(LOCAL_STORE_NAME, ref);
      let text: string;
      try {
        text = await readFile(path.join(root, fileNameFor(parsed.key)), 'utf8');
      } catch (error) {
        throw new ResultStoreError(`result ${parsed.key} is not in ${root}: ${(error as Error).message}`);
      }
      return checkedValue(parsed, text);
    },
  };
}

/** JSON size in bytes (UTF-8), or undefined when the value cannot be serialized. */
export function jsonBytes(value: unknown): number | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? 0 : Buffer.byteLength(text);
  } catch {
    return undefined;
  }
}

/** The output itself when it fits under `inlineMaxBytes`, a reference to the stored copy otherwise. */
export async function inlineOrStore(
  store: ResultStore,
  key: string,
  output: unknown,
  inlineMaxBytes: number,
): Promise<{ output: unknown } | { outputRef: ResultRef }> {
  const bytes = jsonBytes(output);
  if (bytes !== undefined && bytes <= inlineMaxBytes) return { output };
  return { outputRef: await store.put(key, output) };
}
