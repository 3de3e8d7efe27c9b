/**
 * The batch store in an S3 bucket: manifests and result parts are objects under
 * `<prefix>/batches/<key>`, written whole (S3 has no append; a retried activity replaces its part).
 *
 * A manifest is read by line ranges without downloading it per page: each object larger than
 * SMALL_OBJECT_BYTES has a line index beside it (`<prefix>/line-index/<key>`: the start and end
 * offset of every non-blank line), written with the object, or built once by streaming an object
 * that was uploaded by other means. The index records the ETag of the object it describes, and
 * every ranged read asks for that ETag (If-Match): an object replaced under a reader is noticed,
 * never read at stale offsets. Objects up to SMALL_OBJECT_BYTES (result parts, error texts) are
 * read whole in one request and indexed in memory.
 *
 * Reads go by known keys; only `list` (the parts of a finished batch's results) lists, and S3's
 * listing is strongly consistent after a write (as are the S3-compatible servers this is tested on).
 */
import type { Readable } from 'node:stream';
import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { LRUCache } from 'lru-cache';
import { storeKeySchema } from '../contracts/job-types';
import { type BatchStore, BatchStoreError } from './batch-store';
import { contiguousRuns, createLineScanner, type LineOffsets, linesOf } from './line-index';
import {
  createS3Client,
  describeS3Error,
  isNotFound,
  isS3ConfigurationError,
  type S3Location,
  type S3StoreOptions,
  s3StoreName,
} from './s3-client';

/** Objects up to this size are read whole and indexed in memory: one request, no index object. */
export const SMALL_OBJECT_BYTES = 1 << 20;
/** Bytes of objects and indexes a store keeps in memory. */
const CACHE_BYTES = 64 << 20;
/** lib-storage's part size for multipart uploads (S3's minimum is 5 MiB). */
const PART_BYTES = 8 << 20;

interface CachedObject extends LineOffsets {
  etag: string;
  /** The whole object, when it is small. */
  body?: Buffer;
}

/** Index object layout: the count, then every start, then every end, as float64 (files over 4 GiB too). */
function encodeIndex(offsets: LineOffsets): Buffer {
  const values = new Float64Array(1 + offsets.starts.length * 2);
  values[0] = offsets.starts.length;
  values.set(offsets.starts, 1);
  values.set(offsets.ends, 1 + offsets.starts.length);
  return Buffer.from(values.buffer);
}

function decodeIndex(bytes: Uint8Array): LineOffsets {
  const values = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const count = values[0] ?? 0;
  return {
    starts: Array.from(values.subarray(1, 1 + count)),
    ends: Array.from(values.subarray(1 + count, 1 + 2 * count)),
  };
}

/** The total size from `bytes a-b/total`, or the length of a whole answer. */
function totalSize(response: GetObjectCommandOutput): number {
  const total = /\/(\d+)$/.exec(response.ContentRange ?? '')?.[1];
  return total === undefined ? (response.ContentLength ?? 0) : Number(total);
}

/** Request counts by kind, for the bench (requests per item). */
export interface S3RequestCounts {
  get: number;
  put: number;
  list: number;
}

export function createS3BatchStore(
  location: S3Location,
  options: S3StoreOptions & { requests?: S3RequestCounts } = {},
): BatchStore {
  const client: S3Client = createS3Client(location, options);
  const name = s3StoreName(location);
  const root = location.prefix ? `${location.prefix}/` : '';
  const requests = options.requests;
  const cache = new LRUCache<string, CachedObject>({
    maxSize: CACHE_BYTES,
    sizeCalculation: (entry) => (entry.body?.length ?? 0) + entry.starts.length * 16 + 64,
  });

  const objectKey = (key: string) => {
    if (!storeKeySchema.safeParse(key).success)
      throw new BatchStoreError(`invalid store key ${JSON.stringify(key)}`);
    return `${root}batches/${key}`;
  };
  const indexKey = (key: string) => `${root}line-index/${key}`;
  const fail = (key: string, error: unknown) =>
    new BatchStoreError(`${key} in the batch store ${name}: ${describeS3Error(error)}`, {
      retryable: !isNotFound(error) && !isS3ConfigurationError(error),
    });

  async function get(input: { Key: string; Range?: string; IfMatch?: string }) {
    if (requests) requests.get += 1;
    return client.send(new GetObjectCommand({ Bucket: location.bucket, ...input }));
  }

  /** The first bytes of an object (all of it when small), or all of an empty object. */
  async function head(key: string): Promise<GetObjectCommandOutput> {
    try {
      return await get({ Key: objectKey(key), Range: `bytes=0-${SMALL_OBJECT_BYTES - 1}` });
    } catch (error) {
      // An empty object has no byte 0: some servers answer 416 to the range.
      if (error instanceof Error && error.name === 'InvalidRange') return get({ Key: objectKey(key) });
      throw error;
    }
  }

  async function readIndex(key: string, etag: string): Promise<LineOffsets | undefined> {
    try {
      const response = await get({ Key: indexKey(key) });
      if (response.Metadata?.['object-etag'] !== etag) return undefined;
      return decodeIndex(
        await (response.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async function writeIndex(key: string, etag: string, offsets: LineOffsets): Promise<void> {
    if (requests) requests.put += 1;
    await client.send(
      new PutObjectCommand({
        Bucket: location.bucket,
        Key: indexKey(key),
        Body: encodeIndex(offsets),
        Metadata: { 'object-etag': etag },
      }),
    );
  }

  /** An object uploaded without its index (by hand, by another tool): streamed once, then indexed. */
  async function buildIndex(key: string, etag: string): Promise<LineOffsets> {
    const response = await get({ Key: objectKey(key), IfMatch: etag });
    const scanner = createLineScanner();
    for await (const chunk of response.Body as Readable) scanner.feed(chunk as Buffer);
    const offsets = scanner.finish();
    // For the other workers; a failure here only costs them the same streaming.
    await writeIndex(key, etag, offsets).catch(() => undefined);
    return offsets;
  }

  async function entryOf(key: string): Promise<CachedObject> {
    const cached = cache.get(key);
    if (cached) return cached;
    let entry: CachedObject;
    try {
      const first = await head(key);
      const etag = first.ETag ?? '';
      const bytes = Buffer.from(
        await (first.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
      if (totalSize(first) <= bytes.length) {
        const scanner = createLineScanner();
        scanner.feed(bytes);
        entry = { etag, body: bytes, ...scanner.finish() };
      } else {
        entry = { etag, ...((await readIndex(key, etag)) ?? (await buildIndex(key, etag))) };
      }
    } catch (error) {
      if (error instanceof BatchStoreError) throw error;
      throw fail(key, error);
    }
    cache.set(key, entry);
    return entry;
  }

  async function readRuns(key: string, wanted: readonly number[]): Promise<string[]> {
    const entry = await entryOf(key);
    const out: string[] = [];
    for (const { first, last } of contiguousRuns(wanted)) {
      if (first < 0 || last >= entry.starts.length)
        throw new BatchStoreError(`${key} has no item ${first < 0 ? first : last}`);
      const from = entry.starts[first] as number;
      const to = entry.ends[last] as number;
      let bytes = entry.body;
      if (!bytes) {
        const response = await get({
          Key: objectKey(key),
          Range: `bytes=${from}-${to - 1}`,
          IfMatch: entry.etag,
        });
        bytes = Buffer.from(
          await (response.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
        );
        out.push(...linesOf(bytes, from, entry, first, last));
      } else out.push(...linesOf(bytes, 0, entry, first, last));
    }
    return out;
  }

  return {
    name,
    async countLines(key) {
      return (await entryOf(key)).starts.length;
    },
    async readLines(key, wanted) {
      try {
        return await readRuns(key, wanted);
      } catch (error) {
        if (error instanceof BatchStoreError) throw error;
        // Replaced since it was indexed: index the new object and read again, once.
        if (error instanceof Error && error.name === 'PreconditionFailed') {
          cache.delete(key);
          try {
            return await readRuns(key, wanted);
          } catch (again) {
            if (again instanceof BatchStoreError) throw again;
            throw fail(key, again);
          }
        }
        throw fail(key, error);
      }
    },
    async writeLines(key, lines) {
      const body = Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`, 'utf8');
      try {
        const upload = new Upload({
          client,
          params: { Bucket: location.bucket, Key: objectKey(key), Body: body },
          partSize: PART_BYTES,
        });
        if (requests) requests.put += body.length > PART_BYTES ? Math.ceil(body.length / PART_BYTES) + 2 : 1;
        const done = await upload.done();
        cache.delete(key);
        if (body.length > SMALL_OBJECT_BYTES) {
          const scanner = createLineScanner();
          scanner.feed(body);
          const offsets = scanner.finish();
          const etag = done.ETag ?? (await head(key)).ETag ?? '';
          await writeIndex(key, etag, offsets);
          cache.set(key, { etag, ...offsets });
        }
      } catch (error) {
        if (error instanceof BatchStoreError) throw error;
        throw fail(key, error);
      }
    },
    async list(prefix) {
      const folder = `${objectKey(prefix)}/`;
      const keys: string[] = [];
      let token: string | undefined;
      try {
        do {
          if (requests) requests.list += 1;
          const page = await client.send(
            new ListObjectsV2Command({
              Bucket: location.bucket,
              Prefix: folder,
              Delimiter: '/',
              ...(token ? { ContinuationToken: token } : {}),
            }),
          );
          for (const object of page.Contents ?? [])
            if (object.Key) keys.push(`${prefix}/${object.Key.slice(folder.length)}`);
          token = page.IsTruncated ? page.NextContinuationToken : undefined;
        } while (token);
      } catch (error) {
        throw fail(prefix, error);
      }
      return keys.sort();
    },
  };
}
