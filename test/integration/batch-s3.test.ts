/**
 * A batch whose manifest and results live in a bucket of a real S3-compatible server (SeaweedFS),
 * run by the real worker against the emulator: every item once, the results read back from the
 * bucket by the store URL, and a reader pointed at another store told where the results are. The
 * server stopped mid-batch and started again: the batch's store activities fail, wait and retry,
 * and every item still completes once. A
 * worker whose bucket does not exist, or whose credentials are refused, does not start: the error
 * names the store and the cause, and nothing reaches the service.
 *
 * The worker finds the credentials as a deployment's would, along the AWS chain (here the
 * environment of this test file's process).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  readBatchResults,
  startBatch,
  writeBatchManifest,
} from '../../client/batches';
import { loadWorkerConfig } from '../../worker/config';
import { eventually, type JobStack, runWorkerUntilReady, startJobStack } from '../support/integration';
import {
  provisionedSeaweedfs,
  S3_SERVER_MISSING,
  type S3TestServer,
  startS3Server,
} from '../support/s3-server';
import { tempDir } from '../support/temp-dir';

const BUCKET = 'batches';
const STORE = `s3://${BUCKET}/deploy-a`;
const ITEMS = 200;
const missing = provisionedSeaweedfs() === undefined;
if (missing) console.warn(`batch-s3.test.ts skipped: ${S3_SERVER_MISSING}`);

describe.skipIf(missing)('a batch from an S3 manifest to S3 results', () => {
  let server: S3TestServer;
  let stack: JobStack;
  let storeEnv: Record<string, string>;

  beforeAll(async () => {
    server = await startS3Server('batch');
    await server.createBucket(BUCKET);
    // The AWS credential chain of this process: the in-process worker's and the client's.
    Object.assign(process.env, server.env);
    storeEnv = { RESULT_STORE_ENDPOINT: server.endpoint, RESULT_STORE_PATH_STYLE: 'true' };
    // The client reads the store URL's settings from the worker's variables.
    Object.assign(process.env, storeEnv);
    stack = await startJobStack({
      name: 'batch-s3',
      timeScale: 100,
      webhooks: true,
      workerEnv: { RESULT_STORE_URL: STORE, ...storeEnv },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  it('runs every item once and reads the results back from the bucket', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 50 });
    const requests = Array.from({ length: ITEMS }, (_, i) => ({
      input: { output: { i }, ...(i % 40 === 9 ? { fail: `item ${i} is broken` } : {}) },
    }));
    const failing = requests.filter((_, i) => i % 40 === 9).length;
    const manifest = await writeBatchManifest(requests, { store: STORE, key: 'inputs/nightly.jsonl' });
    expect(manifest.count).toBe(ITEMS);

    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { manifest: { key: manifest.key } },
        job: {
          submitLease: false,
          polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 },
        },
        maxConcurrency: 50,
        failureTolerance: { count: failing },
      },
      { workflowId: `batch-s3-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, { batch: handle });
    expect(summary).toMatchObject({
      total: ITEMS,
      counts: { completed: ITEMS - failing, failed: failing },
      submissions: ITEMS,
      results: { kind: 'serverless-batch-results', store: STORE },
    });
    expect(stack.control.submissions(endpointId)).toBe(ITEMS);

    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, { batch: summary, store: STORE }))
      lines.push(line);
    expect(lines).toHaveLength(ITEMS);
    expect(new Set(lines.map((line) => line.index)).size).toBe(ITEMS);
    expect(lines.find((line) => line.index === 9)).toMatchObject({
      status: 'FAILED',
      error: 'item 9 is broken',
    });
    expect(lines.find((line) => line.index === 10)).toMatchObject({ status: 'COMPLETED', output: { i: 10 } });

    const elsewhere = tempDir('batch-s3-reader');
    const read = async () => {
      for await (const _ of readBatchResults(stack.client, { batch: summary, store: elsewhere })) break;
    };
    await expect(read()).rejects.toThrow(`the batch's results are in the store ${STORE}, not in local`);
  });

  it('waits out a store that stopped mid-batch: once it is back, every item completes once', async () => {
    const items = 300;
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 20 });
    const requests = Array.from({ length: items }, (_, i) => ({ input: { output: { i }, sleepMs: 2_000 } }));
    const manifest = await writeBatchManifest(requests, { store: STORE, key: 'inputs/outage.jsonl' });
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { manifest: { key: manifest.key } },
        job: {
          submitLease: false,
          polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 },
        },
        maxConcurrency: 20,
      },
      { workflowId: `batch-s3-outage-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    await eventually(
      () => stack.control.submissions(endpointId) >= 60,
      120_000,
      'a fifth of the items submitted',
    );
    await server.kill();
    // The event: an activity of the batch failed on the store and waits for its next attempt.
    await eventually(
      async () => {
        const { raw } = await handle.describe();
        return (raw.pendingActivities ?? []).some((activity) =>
          activity.lastFailure?.message?.includes(STORE),
        );
      },
      120_000,
      'an activity of the batch failed on the stopped store',
    );
    expect(stack.control.submissions(endpointId)).toBeLessThan(items);
    await server.start();

    const summary = await awaitBatch(stack.client, { batch: handle });
    expect(summary).toMatchObject({ total: items, counts: { completed: items }, submissions: items });
    expect(stack.control.submissions(endpointId)).toBe(items);
    const seen = new Set<number>();
    for await (const line of readBatchResults(stack.client, { batch: summary, store: STORE }))
      seen.add(line.index);
    expect(seen.size).toBe(items);
  });

  it('refuses to start a worker whose bucket does not exist or whose credentials are refused', async () => {
    const endpointId = stack.endpoint();
    // Stopped at once should it start after all: the test then fails on its expectation.
    const start = (env: Record<string, string>) => {
      const stop = new AbortController();
      return runWorkerUntilReady(loadWorkerConfig({ ...stack.workerEnv, ...env }), {
        signal: stop.signal,
      }).finally(() => stop.abort());
    };
    await expect(start({ RESULT_STORE_URL: 's3://no-such-bucket/x' })).rejects.toThrow(
      'store s3://no-such-bucket/x: the bucket does not exist',
    );
    const key = process.env.AWS_ACCESS_KEY_ID;
    process.env.AWS_ACCESS_KEY_ID = 'someone-else';
    try {
      await expect(start({})).rejects.toThrow(`store ${STORE}: the access key is not known to the server`);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = key;
    }
    expect(stack.control.submissions(endpointId)).toBe(0);
  });
});
