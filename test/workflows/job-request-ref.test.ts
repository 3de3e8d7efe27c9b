/**
 * The job workflow with a request by reference (the batch's child mode) on the time-skipping
 * server: it reads the request's ttl first (one activity), hands the submit the reference only,
 * and keeps the request out of its history.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobWorkflowInput } from '../../contracts/job-input';
import { jobSnapshotQuery } from '../../workflows/job/job-definitions';
import { historyText } from '../support/history';
import {
  bundleJobWorkflow,
  failureOf,
  fakeJob,
  jobTestEnv,
  quietRuntime,
  submitted,
  withWorker,
} from './job-harness';
import type { serverlessJob } from './job-test-workflows';

quietRuntime();

const requestRef = { manifestKey: 'batch-1/items.jsonl', index: 7 };

describe('job workflow: a request by reference', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  let id = 0;
  beforeAll(async () => {
    env = await jobTestEnv();
    bundle = await bundleJobWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, args: JobWorkflowInput) =>
    env.client.workflow.start<typeof serverlessJob>('serverlessJob', {
      taskQueue,
      workflowId: `request-ref-${++id}`,
      args: [args],
    });

  it("reads the request's ttl, submits by reference, and follows the job to its result", async () => {
    const fake = fakeJob({
      requestTtl: async () => ({ ttl: 30_000 }),
      submitJob: async () => submitted('job-7'),
    });
    const { result, snapshot, text } = await withWorker(env, bundle, fake.activities, async (queue) => {
      const handle = await start(queue, { endpointId: 'ep-1', requestRef, outputInlineMaxBytes: 0 });
      const result = await handle.result();
      return {
        result,
        snapshot: await handle.query(jobSnapshotQuery),
        text: historyText(await handle.fetchHistory()),
      };
    });
    expect(result).toMatchObject({ jobId: 'job-7', status: 'COMPLETED', submissions: 1 });
    expect(fake.named('requestTtl').map((call) => call.input)).toEqual([{ requestRef }]);
    const [submit] = fake.named('submitJob');
    expect(submit?.input).toMatchObject({ endpointId: 'ep-1', requestRef, inlineMaxBytes: 0 });
    expect(submit?.input).not.toHaveProperty('request');
    // The lease and the deadline follow the referenced request's ttl (30 s), not the default 24 h.
    expect(submit?.input).toMatchObject({ lease: { ttlMs: 30_000 } });
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + 30_000);
    expect(text).toContain('"requestRef"');
  });

  it('fails with BadRequest when the reference names no request', async () => {
    const fake = fakeJob({
      requestTtl: async () => {
        throw ApplicationFailure.create({
          type: 'BadRequest',
          message: 'invalid activity input: requestRef: batch-1/items.jsonl has no item 7',
          nonRetryable: true,
          details: [{ field: 'requestRef', rule: 'must name a line of a manifest in the batch store' }],
        });
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (queue) =>
      failureOf((await start(queue, { endpointId: 'ep-1', requestRef })).result()),
    );
    expect(failure.type).toBe('BadRequest');
    expect(failure.details?.[0]).toMatchObject({ field: 'requestRef', submissions: 0 });
    expect(fake.named('submitJob')).toHaveLength(0);
  });
});
