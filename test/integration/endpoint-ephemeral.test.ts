import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import { type BatchResultLine, readBatchResults } from '../../client/batches';
import {
  EPHEMERAL_FAILURE,
  ephemeralFailureOf,
  runOnEphemeralEndpoint,
  startEphemeralEndpoint,
} from '../../client/endpoints';
import type { BatchSummary } from '../../contracts/batch-summary';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import {
  API_KEY,
  realActivities,
  type Stack,
  startStack,
  withRealWorker,
} from '../support/endpoint-integration';
import { eventually } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

describe('ephemeral endpoint with real job and batch workflows (dev server, emulator over HTTP)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const endpoint = { templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 2 } as const;
  const exists = (endpointId: string) =>
    stack.emulator.control.endpoints(API_KEY).some((candidate) => candidate.id === endpointId);

  /** An in-process worker with every activity the real worker has for these workflows, batch included. */
  async function withBatchWorker<T>(body: (taskQueue: string) => Promise<T>): Promise<T> {
    const taskQueue = uniqueTaskQueue('ephemeral-batch-it');
    const worker = await Worker.create({
      connection: stack.env.nativeConnection,
      taskQueue,
      workflowBundle: stack.bundle,
      activities: {
        ...realActivities(stack),
        ...createBatchActivities({ client: stack.client, resultStoreDir: stack.resultDir }),
      },
    });
    return worker.runUntil(body(taskQueue));
  }

  async function linesOf(summary: BatchSummary): Promise<BatchResultLine[]> {
    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.env.client, { batch: summary, store: stack.resultDir }))
      lines.push(line);
    return lines.sort((a, b) => a.index - b.index);
  }

  /** Quick looks at the jobs: the emulator runs 20 times faster than real time here. */
  const job = { polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 } };
  const items = (count: number, fails: (i: number) => boolean) =>
    Array.from({ length: count }, (_, i) => ({
      input: { sleepMs: 1_000, output: { index: i }, ...(fails(i) ? { fail: `item ${i} is broken` } : {}) },
    }));

  it('runs 30 items as one batch within its tolerance: exact counts, a line per item, endpoint deleted', async () => {
    const workflowId = uniqueTaskQueue('ephemeral-batch');
    const fails = (i: number) => i === 4 || i === 21;
    const result = await withBatchWorker((taskQueue) =>
      runOnEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          batch: {
            items: { inline: items(30, fails) },
            job,
            maxConcurrency: 8,
            failureTolerance: { count: 3 },
          },
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      ),
    );
    expect(result.results).toEqual([]);
    expect(result.batch).toMatchObject({
      batchId: `${workflowId}/batch`,
      endpointId: result.endpointId,
      total: 30,
      counts: { completed: 28, failed: 2, timedOut: 0, expired: 0, cancelled: 0, uncertain: 0, rejected: 0 },
      failures: 2,
      notStarted: 0,
      submissions: 30,
      toleranceExceeded: false,
    });
    const lines = await linesOf(result.batch!);
    expect(lines.map((line) => line.index)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    for (const line of lines) {
      if (fails(line.index))
        expect(line).toMatchObject({ status: 'FAILED', error: `item ${line.index} is broken` });
      else expect(line).toMatchObject({ status: 'COMPLETED', output: { index: line.index } });
    }
    expect(result.teardown).toMatchObject({ endpointIds: [result.endpointId], alreadyGone: false });
    expect(exists(result.endpointId)).toBe(false);
  }, 300_000);

  it('past its tolerance: EphemeralBatchFailed with the summary and the teardown, results kept, endpoint deleted', async () => {
    const workflowId = uniqueTaskQueue('ephemeral-batch-over');
    const fails = (i: number) => i % 3 === 0;
    const error = await withBatchWorker((taskQueue) =>
      runOnEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          batch: { items: { inline: items(12, fails) }, job, failureTolerance: { count: 1 } },
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      ).catch((caught: unknown) => caught),
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(((error as WorkflowFailedError).cause as { type?: string }).type).toBe(
      EPHEMERAL_FAILURE.batchFailed,
    );
    const failure = ephemeralFailureOf(error);
    expect(failure).toMatchObject({
      batch: { total: 12, counts: { completed: 8, failed: 4 }, failures: 4, toleranceExceeded: true },
      batchFailure: { type: 'BatchToleranceExceeded' },
    });
    expect(failure!.teardown.endpointIds).toEqual([failure!.endpointId]);
    const lines = await linesOf(failure!.batch);
    expect(lines.map((line) => line.index)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(lines.filter((line) => line.status === 'FAILED').map((line) => line.index)).toEqual([0, 3, 6, 9]);
    expect(exists(failure!.endpointId)).toBe(false);
  }, 300_000);

  it('runs the jobs on a fresh endpoint, returns their results and deletes the endpoint', async () => {
    const workflowId = uniqueTaskQueue('ephemeral');
    const result = await withRealWorker(stack, (taskQueue) =>
      runOnEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          jobs: [
            { input: { request: { input: { sleepMs: 2_000, output: { n: 1 } } }, mode: 'sync' } },
            { input: { request: { input: { sleepMs: 4_000, output: { n: 2 } } }, mode: 'sync' } },
          ],
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      ),
    );
    expect(result.results).toMatchObject([
      { status: 'COMPLETED', output: { n: 1 }, endpointId: result.endpointId },
      { status: 'COMPLETED', output: { n: 2 }, endpointId: result.endpointId },
    ]);
    expect(result.teardown).toMatchObject({ endpointIds: [result.endpointId], alreadyGone: false });
    expect(exists(result.endpointId)).toBe(false);
    const jobs = stack.emulator.control.jobs().filter((job) => job.endpointId === result.endpointId);
    expect(jobs).toEqual([]);
  });

  it('cancelled while its jobs run (as one batch): the jobs end CANCELLED on the service, then the endpoint is deleted', async () => {
    const workflowId = uniqueTaskQueue('ephemeral-cancel');
    const outcome = await withBatchWorker(async (taskQueue) => {
      const handle = await startEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          jobs: [
            // A week of service time, so the jobs hang until cancelled however slow the machine.
            {
              input: {
                request: {
                  input: { hang: true },
                  policy: { executionTimeout: 604_800_000, ttl: 604_800_000 },
                },
              },
            },
            {
              input: {
                request: {
                  input: { hang: true },
                  policy: { executionTimeout: 604_800_000, ttl: 604_800_000 },
                },
              },
            },
          ],
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      );
      const endpointId = await eventually(
        async () => (await handle.query(endpointLifecycleQuery)).endpointId,
      );
      const jobIds = await eventually(() => {
        const running = stack.emulator.control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS');
        return running.length === 2 && running.map((job) => job.id);
      });
      await handle.cancel();
      const error = await handle.result().catch((caught: unknown) => caught);
      // Two jobs of the library's job type with the same options: one batch, not two job workflows.
      const batch = (await stack.env.client.workflow.getHandle(`${workflowId}/batch`).describe()).status.name;
      return { endpointId, jobIds, error, description: await handle.describe(), batch };
    });
    expect(outcome.error).toBeInstanceOf(WorkflowFailedError);
    expect((outcome.error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(outcome.description.status.name).toBe('CANCELLED');
    expect(outcome.batch).toBe('CANCELLED');
    expect(outcome.jobIds.map((jobId) => stack.emulator.control.job(jobId)?.status)).toEqual([
      'CANCELLED',
      'CANCELLED',
    ]);
    expect(exists(outcome.endpointId)).toBe(false);
  });
});
