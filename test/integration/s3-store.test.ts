/**
 * The S3 stores on a real S3-compatible server (SeaweedFS): the batch store's contract as the
 * local store keeps it, manifests read by line ranges (requests counted, never the whole object
 * per page), parts and results replaced whole, references that name their store, a bad bucket and
 * bad credentials refused with the store and the cause named, stream chunks in objects of their
 * own (no append in S3), a page that finds the server stopped failed as unsent and served once it
 * is back, and a 503 SlowDown backed off.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import { SUBMIT_NOT_SENT } from '../../contracts/failures';
import { type BatchStore, createLocalBatchStore } from '../../stores/batch-store';
import { createLocalResultStore } from '../../stores/result-store';
import { createS3BatchStore, type S3RequestCounts, SMALL_OBJECT_BYTES } from '../../stores/s3-batch-store';
import { createS3Client } from '../../stores/s3-client';
import { createS3ResultStore } from '../../stores/s3-result-store';
import { createS3StreamStore } from '../../stores/s3-stream-store';
import { openStores } from '../../stores/store-location';
import { activityEnv, rejection, type StubClient, stubClient } from '../activities/job-stub';
import {
  provisionedSeaweedfs,
  S3_SERVER_MISSING,
  type S3TestServer,
  startS3Server,
} from '../support/s3-server';
import { tempDir } from '../support/temp-dir';

const BUCKET = 'stores';
const missing = provisionedSeaweedfs() === undefined;
if (missing) console.warn(`s3-store.test.ts skipped: ${S3_SERVER_MISSING}`);

describe.skipIf(missing)('S3 stores on a real S3-compatible server', () => {
  let server: S3TestServer;
  let prefixes = 0;
  /** A store under a prefix of its own, so tests share the server and not their keys. */
  const s3Store = (requests?: S3RequestCounts, prefix = `t${++prefixes}`) =>
    createS3BatchStore(server.location(BUCKET, prefix), {
      clientConfig: server.clientConfig(),
      ...(requests ? { requests } : {}),
    });
  const counts = (): S3RequestCounts => ({ get: 0, put: 0, list: 0 });

  beforeAll(async () => {
    server = await startS3Server('stores');
    await server.createBucket(BUCKET);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** What every batch store does, the local one and the S3 one alike. */
  const contract = (make: () => BatchStore) => {
    it('counts items and reads them by index, skipping blank lines, in the order asked', async () => {
      const store = make();
      await store.writeLines('in/items.jsonl', ['{"a":0}', '', '{"a":1}\r', '  ', '{"a":2}', '{"a":"é3"}']);
      expect(await store.countLines('in/items.jsonl')).toBe(4);
      expect(await store.readLines('in/items.jsonl', [1, 2, 3])).toEqual([
        '{"a":1}\r',
        '{"a":2}',
        '{"a":"é3"}',
      ]);
      expect(await store.readLines('in/items.jsonl', [3, 0])).toEqual(['{"a":"é3"}', '{"a":0}']);
      await expect(store.readLines('in/items.jsonl', [4])).rejects.toThrow(/no item 4/);
    });

    it('replaces a part whole, lists a folder, and reads an empty part', async () => {
      const store = make();
      await store.writeLines('b/results/p1.jsonl', ['1', '2']);
      await store.writeLines('b/results/p1.jsonl', ['1', '2', '3']);
      await store.writeLines('b/results/p0.jsonl', ['0']);
      await store.writeLines('b/results/p2.jsonl', []);
      expect(await store.list('b/results')).toEqual([
        'b/results/p0.jsonl',
        'b/results/p1.jsonl',
        'b/results/p2.jsonl',
      ]);
      expect(await store.countLines('b/results/p1.jsonl')).toBe(3);
      expect(await store.countLines('b/results/p2.jsonl')).toBe(0);
      expect(await store.list('b/none')).toEqual([]);
    });

    it('refuses keys that leave the store, and names a key that is not there', async () => {
      const store = make();
      await expect(store.writeLines('../x.jsonl', [])).rejects.toThrow(/invalid store key/);
      await expect(store.countLines('/etc/passwd')).rejects.toThrow(/invalid store key/);
      await expect(store.countLines('nothing/here.jsonl')).rejects.toThrow(/nothing\/here\.jsonl/);
    });
  };

  describe('the local batch store', () => contract(() => createLocalBatchStore(tempDir('batch-store'))));
  describe('the S3 batch store', () => contract(() => s3Store()));

  describe('manifests larger than one read', () => {
    // Lines of 1,000 bytes with a blank line every 7th: about 3 MB, three times SMALL_OBJECT_BYTES.
    const lines = Array.from({ length: 3_000 }, (_, k) =>
      k % 7 === 3 ? ' '.repeat(999) : `{"i":${String(k).padStart(6, '0')},"pad":"${'x'.repeat(979)}"}`,
    );
    const items = lines.filter((line) => line.trim() !== '');
    const page = Array.from({ length: 50 }, (_, k) => 1_000 + k);

    it('are written with a line index, and each page is one ranged request', async () => {
      expect(lines.join('\n').length).toBeGreaterThan(2 * SMALL_OBJECT_BYTES);
      const prefix = `t${++prefixes}`;
      const writer = counts();
      await s3Store(writer, prefix).writeLines('in/big.jsonl', lines);
      // The object and its index.
      expect(writer.put).toBe(2);

      // Another worker: the first bytes and the index, then one ranged GET per page.
      const reader = counts();
      const store = s3Store(reader, prefix);
      expect(await store.countLines('in/big.jsonl')).toBe(items.length);
      expect(reader.get).toBe(2);
      expect(await store.readLines('in/big.jsonl', page)).toEqual(page.map((k) => items[k]));
      expect(await store.readLines('in/big.jsonl', [items.length - 1, 0])).toEqual([
        items[items.length - 1],
        items[0],
      ]);
      expect(reader.get).toBe(2 + 1 + 2);
      expect(reader.put).toBe(0);
    });

    it('uploaded by other means, are streamed once and indexed for every other reader', async () => {
      const prefix = `t${++prefixes}`;
      const raw = new S3Client(server.clientConfig());
      await raw.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `${prefix}/batches/in/upload.jsonl`,
          Body: lines.join('\n'),
        }),
      );
      raw.destroy();
      const first = counts();
      expect(await s3Store(first, prefix).countLines('in/upload.jsonl')).toBe(items.length);
      // First bytes, no index, the whole object streamed, the index written.
      expect(first).toEqual({ get: 3, put: 1, list: 0 });
      const second = counts();
      const store = s3Store(second, prefix);
      expect(await store.readLines('in/upload.jsonl', page)).toEqual(page.map((k) => items[k]));
      expect(second).toEqual({ get: 3, put: 0, list: 0 });
    });

    it('replaced under a reader, are read anew, never at the old offsets', async () => {
      const prefix = `t${++prefixes}`;
      const reader = s3Store(undefined, prefix);
      await s3Store(undefined, prefix).writeLines('in/m.jsonl', lines);
      expect(await reader.readLines('in/m.jsonl', [5])).toEqual([items[5]]);
      const replaced = lines.map((line) => (line.trim() === '' ? line : line.replace('"i":', '"j":')));
      await s3Store(undefined, prefix).writeLines('in/m.jsonl', replaced);
      expect(await reader.readLines('in/m.jsonl', [5])).toEqual([items[5]?.replace('"i":', '"j":')]);
    });
  });

  describe('the S3 result store', () => {
    it('replaces an output whole, reads it back by reference, and names its store in it', async () => {
      const location = server.location(BUCKET, `t${++prefixes}`);
      const store = createS3ResultStore(location, { clientConfig: server.clientConfig() });
      await store.put('wf/job-1', { attempt: 1, pad: 'x'.repeat(1_000) });
      const ref = await store.put('wf/job-1', { attempt: 2 });
      expect(ref.store).toBe(`s3://${BUCKET}/${location.prefix}`);
      expect(await store.get(ref)).toEqual({ attempt: 2 });
    });

    it('uploads a large output in parts', async () => {
      const store = createS3ResultStore(server.location(BUCKET, `t${++prefixes}`), {
        clientConfig: server.clientConfig(),
      });
      const output = { rows: Array.from({ length: 200_000 }, (_, k) => `row ${k} ${'y'.repeat(80)}`) };
      const ref = await store.put('wf/big', output);
      expect(ref.bytes).toBeGreaterThan(16 << 20);
      expect(await store.get(ref)).toEqual(output);
    });

    it('tells a reader of another store where the result is, instead of reading another file', async () => {
      const s3 = createS3ResultStore(server.location(BUCKET, `t${++prefixes}`), {
        clientConfig: server.clientConfig(),
      });
      const local = createLocalResultStore(tempDir('result-store'));
      const s3Ref = await s3.put('same-key', { from: 's3' });
      const localRef = await local.put('same-key', { from: 'local' });
      await expect(local.get(s3Ref)).rejects.toThrow(
        `result same-key is in the store ${s3Ref.store}, not in this reader's store local`,
      );
      await expect(s3.get(localRef)).rejects.toThrow(
        `is in the store local, not in this reader's store ${s3Ref.store}`,
      );
    });
  });

  describe('the S3 stream store', () => {
    it('puts each batch of chunks in an object of its own, in chunk order, replaced when delivered again', async () => {
      const location = server.location(BUCKET, `t${++prefixes}`);
      const store = createS3StreamStore(location, { clientConfig: server.clientConfig() });
      await store.write('tokens.jsonl', 0, ['{"index":0}', '{"index":1}']);
      await store.write('tokens.jsonl', 2, ['{"index":2}']);
      // The activity retried: the same batch again, replacing its object.
      await store.write('tokens.jsonl', 2, ['{"index":2}', '{"index":3}']);
      const raw = new S3Client(server.clientConfig());
      const listed = await raw.send(
        new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${location.prefix}/streams/tokens.jsonl/` }),
      );
      const keys = (listed.Contents ?? []).map((object) => object.Key as string);
      expect(keys).toEqual([
        `${location.prefix}/streams/tokens.jsonl/000000000000.jsonl`,
        `${location.prefix}/streams/tokens.jsonl/000000000002.jsonl`,
      ]);
      const text = await Promise.all(
        keys.map(async (key) =>
          (await raw.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body?.transformToString(),
        ),
      );
      expect(text.join('')).toBe('{"index":0}\n{"index":1}\n{"index":2}\n{"index":3}\n');
      raw.destroy();
    });
  });

  describe('a store that cannot be used', () => {
    it('is refused when the bucket does not exist, naming the store and the cause', async () => {
      const stores = await openStores(server.location('no-such-bucket', 'p'), {
        clientConfig: server.clientConfig(),
      });
      await expect(stores.check()).rejects.toThrow('store s3://no-such-bucket/p: the bucket does not exist');
    });

    it('is refused with a wrong access key or secret, naming the cause and never the secret', async () => {
      const unknownKey = await openStores(server.location(BUCKET, 'p'), {
        clientConfig: server.clientConfig({
          credentials: { accessKeyId: 'nobody', secretAccessKey: 'not-the-secret-0123456789' },
        }),
      });
      const error = await unknownKey.check().catch((caught: unknown) => caught as Error);
      expect(error).toBeInstanceOf(Error);
      expect(error?.message).toMatch(/^store s3:\/\/stores\/p: the access key is not known to the server/);

      const wrongSecret = await openStores(server.location(BUCKET, 'p'), {
        clientConfig: server.clientConfig({
          credentials: { accessKeyId: server.accessKeyId, secretAccessKey: 'wrong-secret-0123456789abcdef' },
        }),
      });
      const signed = await wrongSecret.check().catch((caught: unknown) => caught as Error);
      expect(signed?.message).toMatch(/^store s3:\/\/stores\/p: the request signature does not match/);
      expect(signed?.message).not.toContain('wrong-secret');
      expect(JSON.stringify(signed)).not.toContain('wrong-secret');
    });
  });

  describe('a server that stopped', () => {
    it('fails a page unsent (nothing reaches the service) and serves it again once restarted', async () => {
      const location = server.location(BUCKET, `t${++prefixes}`);
      const worker = (client: StubClient) =>
        createBatchActivities({
          client: client.client,
          batchStore: createS3BatchStore(location, { clientConfig: server.clientConfig() }),
        });
      const service = stubClient();
      service.answer('run', { id: 'job-0', status: 'IN_QUEUE' });
      const inline = Array.from({ length: 4 }, (_, n) => ({ input: { n } }));
      const { manifestKey, store } = await activityEnv().call(worker(service).stageBatchItems, {
        items: { inline },
      });
      expect(store).toBe(`s3://${BUCKET}/${location.prefix}`);

      // Another worker, which has not read the manifest yet, takes a page while the server is down.
      await server.kill();
      const other = worker(service);
      const page = () =>
        activityEnv().call(other.submitBatchPage, { endpointId: 'ep-1', manifestKey, indexes: [0, 1] });
      const failed = await rejection(page());
      expect(failed).toBeInstanceOf(ApplicationFailure);
      expect((failed as ApplicationFailure).type).toBe(SUBMIT_NOT_SENT);
      expect((failed as ApplicationFailure).nonRetryable).toBe(false);
      expect((failed as Error).message).toMatch(/^nothing was sent: the batch store could not be read/);
      expect(service.named('run')).toEqual([]);

      await server.start();
      const answered = await page();
      expect(answered.results).toHaveLength(2);
      expect(service.named('run')).toHaveLength(2);
    });
  });

  describe('throttling', () => {
    let proxy: Server;
    let slowDowns = 0;
    let forwarded = 0;

    /** Answers its first `slowDowns` requests with S3's 503 SlowDown, and forwards every other one. */
    beforeAll(async () => {
      const target = new URL(server.endpoint);
      proxy = createServer((incoming, outgoing) => {
        if (slowDowns > 0) {
          slowDowns -= 1;
          incoming.resume();
          outgoing.writeHead(503, { 'content-type': 'application/xml' });
          outgoing.end(
            '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
          );
          return;
        }
        forwarded += 1;
        const upstream = httpRequest(
          {
            host: target.hostname,
            port: target.port,
            method: incoming.method,
            path: incoming.url,
            headers: incoming.headers,
          },
          (answer: IncomingMessage) => {
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(outgoing);
          },
        );
        incoming.pipe(upstream);
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      await new Promise((resolve) => proxy?.close(resolve));
    });

    it('backs off a 503 SlowDown and succeeds with the same request (the SDK standard retry strategy)', async () => {
      const port = (proxy.address() as AddressInfo).port;
      const location = { ...server.location(BUCKET, `t${++prefixes}`), endpoint: `http://127.0.0.1:${port}` };
      // The client the stores make themselves (its attempts and retry mode), with the test's keys.
      const client = createS3Client(location, {
        clientConfig: {
          credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
        },
      });
      const store = createS3BatchStore(location, { client });
      slowDowns = 3;
      await store.writeLines('in/throttled.jsonl', ['{"a":1}']);
      expect(slowDowns).toBe(0);
      expect(forwarded).toBe(1);
      expect(await store.readLines('in/throttled.jsonl', [0])).toEqual(['{"a":1}']);
      client.destroy();
    });
  });
});
