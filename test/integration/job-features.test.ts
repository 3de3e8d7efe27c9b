/**
 * Job workflow options on the real stack (dev server, emulator over HTTP, real worker and gateway):
 * a `signal` stream sink delivering to a workflow of the caller's, extendJobTtl through the client
 * facade, a large output through the worker's result store, `runsync` mode, and
 * `searchAttributes: false`.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { awaitJob, cancelJob, extendJobTtl } from '../../client/jobs';
import { endpointIdKey, jobIdKey, jobStatusKey } from '../../workflows/shared/search-attributes';
import {
  eventually,
  FAST_POLLING,
  historyText,
  type JobStack,
  scheduledActivities,
  seenRunning,
  startJobStack,
} from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';
import {
  collectedBatchesQuery,
  stopCollectingSignal,
  streamCollector,
} from '../support/workflows/stream-collector';

describe('job workflow options (dev server, emulator over HTTP, real worker and gateway)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'job-features', timeScale: 100, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a signal stream sink: every chunk reaches the caller`s workflow in order, none the job`s history', async () => {
    // The caller's workflow that asked for the chunks runs on a worker of the test's own.
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const collectorQueue = uniqueTaskQueue('stream-collector');
    const collectorWorker = await Worker.create({
      connection,
      taskQueue: collectorQueue,
      workflowsPath: path.resolve(__dirname, '../support/workflows'),
    });
    try {
      await collectorWorker.runUntil(async () => {
        const collector = await stack.client.workflow.start(streamCollector, {
          taskQueue: collectorQueue,
          workflowId: `stream-collector-${randomUUID()}`,
        });
        // Text generation: one chunk per word, each with the worker's metrics. The output is the
        // list of the chunks' outputs; the metrics exist only in the chunks.
        const text = Array.from({ length: 12 }, (_, i) => `word${i}`).join(' ');
        const endpointId = stack.endpoint({ templateId: 'stream' });
        const handle = await stack.start({
          endpointId,
          request: { input: { text, tokenDelayMs: 250 } },
          stream: { sink: { kind: 'signal', workflowId: collector.workflowId } },
          polling: FAST_POLLING,
        });
        const result = await awaitJob(stack.client, { job: handle });
        expect(result.stream).toEqual({ chunks: 12 });

        // The result counts a chunk only once its batch was signalled: all of them are there, in order.
        const batches = await collector.query(collectedBatchesQuery);
        const chunks = batches.flatMap((batch) => batch.chunks);
        expect(chunks.map((chunk) => chunk.output)).toEqual(result.output);
        expect(chunks.every((chunk) => chunk.metrics?.scenario === 'stream')).toBe(true);
        let next = 0;
        for (const batch of batches) {
          expect(batch).toMatchObject({
            workflowId: handle.workflowId,
            jobId: result.jobId,
            firstIndex: next,
          });
          next += batch.chunks.length;
        }
        // The chunks went into the collector's history (its signals), never into the job's.
        const collectorHistory = historyText(await collector.fetchHistory());
        const jobHistory = historyText(await handle.fetchHistory());
        expect(jobHistory).toContain(collector.workflowId);
        expect(jobHistory).toContain('word11');
        for (const field of ['"metrics":', '"stream_index":', '"avg_gen_throughput":']) {
          expect(collectorHistory).toContain(field);
          expect(jobHistory).not.toContain(field);
        }
        await collector.signal(stopCollectingSignal);
        expect(await collector.result()).toBe(12);
      });
    } finally {
      await connection.close();
    }
  });

  it('extendJobTtl (client facade): the service keeps the job past its first ttl', async () => {
    const endpointId = stack.endpoint();
    // Frozen service time: the job's ttl passes only when the test says.
    stack.control.freeze();
    try {
      const handle = await stack.start({
        endpointId,
        request: { input: { hang: true }, policy: { executionTimeout: 604_800_000, ttl: 600_000 } },
        polling: FAST_POLLING,
      });
      await eventually(() => stack.control.submissions(endpointId) === 1);
      stack.control.advance(5_000); // the cold start: the job runs
      const running = await stack.snapshotWhen(handle.workflowId, seenRunning);
      const jobId = running.jobId as string;

      await expect(extendJobTtl(stack.client, { workflowId: handle.workflowId, ttl: 5 })).rejects.toThrow(
        ValidationError,
      );
      await extendJobTtl(stack.client, { workflowId: handle.workflowId, ttl: '2 hours' });
      const extended = await eventually(() => {
        const job = stack.control.job(jobId);
        return job?.policy.ttl === 7_200_000 ? job : undefined;
      });
      expect(extended.ttlDeadline).toBe(extended.submittedAt + 7_200_000);
      const snapshot = await stack.snapshotWhen(
        handle.workflowId,
        (s) => s.timings.ttlDeadline === (s.timings.submittedAt as number) + 7_200_000,
      );
      expect(snapshot).toMatchObject({ phase: 'waiting', status: 'IN_PROGRESS' });
      expect(snapshot.ttlExtensionError).toBeUndefined();

      // Past the first ttl (10 minutes) the job is still there, and still running.
      stack.control.advance(15 * 60_000);
      expect(stack.control.job(jobId)).toMatchObject({ status: 'IN_PROGRESS', deleted: false });

      await cancelJob(stack.client, { workflowId: handle.workflowId });
      await expect(awaitJob(stack.client, { job: handle })).rejects.toThrow();
      expect(stack.control.job(jobId)?.status).toBe('CANCELLED');
    } finally {
      stack.control.resume();
    }
  });

  it('a large output goes to the result store; the result carries a reference the facade resolves', async () => {
    const endpointId = stack.endpoint({ templateId: 'stream' });
    // 5,000 generated tokens: an output of about 300 kB (over the worker's 256 kB inline limit)
    // from a small input, so neither the input nor the result puts it in the history.
    const handle = await stack.start({
      endpointId,
      request: { input: { tokens: 5_000, tokenDelayMs: 1 } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });
    expect(result).not.toHaveProperty('output');
    expect(result.outputRef).toMatchObject({ kind: 'serverless-result-ref' });
    expect(result.outputRef?.bytes).toBeGreaterThan(256_000);

    const resolved = await awaitJob(stack.client, { job: handle, store: stack.workerEnv.RESULT_STORE_DIR });
    const output = resolved.output as Array<{ output_tokens: number; text: string[] }>;
    expect(output).toHaveLength(5_000);
    expect(output[4_999]).toMatchObject({ output_tokens: 5_000, text: ['token4999 '] });
    expect(resolved).not.toHaveProperty('outputRef');
    // It is the job's output as the service gave it.
    expect(output).toEqual(stack.control.job(result.jobId)?.output);
    expect(historyText(await handle.fetchHistory())).not.toContain('token4999 ');
  });

  it('runsync mode: one /runsync, whose answer is the result', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      mode: 'runsync',
      // 60 s of service time to wait: far more than the 5 s cold start and the 1 s run.
      runsyncWait: 60_000,
      request: { input: { sleepMs: 1_000, output: 'in one call' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'in one call', submissions: 1, attempts: 1 });
    expect(result.jobId).toMatch(/^sync-/);
    expect(stack.control.job(result.jobId)).toMatchObject({ sync: true, status: 'COMPLETED' });
    expect(stack.control.submissions(endpointId)).toBe(1);
    // The answer was final: nothing was polled.
    const activities = scheduledActivities(await handle.fetchHistory());
    expect(activities).toEqual(['runJobSync']);
  });

  it('searchAttributes: false sets none of the three; the default sets all of them', async () => {
    const endpointId = stack.endpoint();
    const run = (searchAttributes?: boolean) =>
      stack.start({
        endpointId,
        ...(searchAttributes === undefined ? {} : { searchAttributes }),
        request: { input: { sleepMs: 500, output: 'ok' } },
        polling: FAST_POLLING,
      });
    // Upserts of the three (the SDK's own TemporalChangeVersion, written by patched(), is not one).
    const upserts = async (handle: Awaited<ReturnType<typeof run>>) =>
      ((await handle.fetchHistory()).events ?? []).filter((e) =>
        Object.keys(
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
        ).some((key) => key.startsWith('Serverless')),
      ).length;

    const without = await run(false);
    expect((await awaitJob(stack.client, { job: without })).output).toBe('ok');
    const bare = (await without.describe()).typedSearchAttributes;
    for (const key of [endpointIdKey, jobIdKey, jobStatusKey]) expect(bare.get(key)).toBeUndefined();
    expect(await upserts(without)).toBe(0);

    const withDefault = await run();
    const result = await awaitJob(stack.client, { job: withDefault });
    const set = (await withDefault.describe()).typedSearchAttributes;
    expect(set.get(endpointIdKey)).toBe(endpointId);
    expect(set.get(jobIdKey)).toEqual([result.jobId]);
    expect(set.get(jobStatusKey)).toBe('COMPLETED');
    expect(await upserts(withDefault)).toBeGreaterThan(0);
  });
});
