/**
 * The client facade of the job workflow on the shared dev server (real visibility, real search
 * attributes), with mocked activities: validation before start, idempotent workflow ids, awaiting
 * with result store references resolved, live snapshots, cancellation, typed failures, and finding
 * jobs by search attributes.
 */
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import {
  awaitJob,
  cancelJob,
  extendJobTtl,
  findJobByJobId,
  getJobSnapshot,
  jobFailureOf,
  jobListQuery,
  listJobs,
  runJob,
  startJob,
} from '../../client/jobs';
import { createLocalResultStore } from '../../stores/result-store';
import { tempDir } from '../support/temp-dir';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';
import {
  bundleJobWorkflow,
  fakeJob,
  pollerScript,
  quietRuntime,
  submitted,
  waitResult,
  withWorker,
} from '../workflows/job-harness';
import { waitFor } from '../workflows/wait-for';

quietRuntime();

const input = (endpointId = 'ep-client') => ({ endpointId, request: { input: { q: 1 } } });

describe('job client facade', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await devServerEnv();
    bundle = await bundleJobWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('validates the input before starting anything', async () => {
    const workflowId = uniqueTaskQueue('invalid');
    const bad = [
      [{ endpointId: 'ep', request: { input: {}, policy: { ttl: 1 } } }, 'request.policy.ttl'],
      [{ endpointId: 'a/b', request: { input: {} } }, 'endpointId'],
      [{ endpointId: 'ep', request: { input: { blob: 'x'.repeat(2_000_000) } } }, 'request'],
    ] as const;
    for (const [value, field] of bad) {
      const error = await startJob(env.client, value as never, { workflowId, taskQueue: 'nowhere' }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
    }
    await expect(startJob(env.client, input(), { workflowId: '', taskQueue: 'q' })).rejects.toMatchObject({
      field: 'options.workflowId',
    });
    await expect(env.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  });

  it('runs one job per workflow id, however often it is started', async () => {
    const poller = pollerScript(['hang', 'COMPLETED']);
    const fake = fakeJob({ waitForJobChange: poller });
    const workflowId = uniqueTaskQueue('same-id');
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const first = await startJob(env.client, input(), { workflowId, taskQueue });
      const second = await startJob(env.client, input(), { workflowId, taskQueue });
      expect((await second.describe()).runId).toBe((await first.describe()).runId);
      await fake.called('waitForJobChange');
      poller.release();
      const result = await awaitJob(env.client, { job: workflowId });
      expect(result.status).toBe('COMPLETED');
      // Finished: starting it again returns the same, finished job.
      const again = await runJob(env.client, input(), { workflowId, taskQueue });
      expect(again.jobId).toBe(result.jobId);
    });
    expect(fake.named('submitJob')).toHaveLength(1);
  });

  it('starts a failed job again only when idReuse allows it', async () => {
    let failNext = true;
    const fake = fakeJob({
      waitForJobChange: async (req) => {
        const failed = failNext;
        failNext = false;
        return waitResult(req.jobId, failed ? 'FAILED' : 'COMPLETED', failed ? { error: 'bad luck' } : {});
      },
    });
    const workflowId = uniqueTaskQueue('reuse');
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const error = await runJob(env.client, input(), { workflowId, taskQueue }).catch((e: unknown) => e);
      expect(jobFailureOf(error)).toMatchObject({
        type: 'JobFailed',
        details: { error: 'bad luck', jobId: 'job-1' },
      });
      // Default: the id is spent.
      await expect(runJob(env.client, input(), { workflowId, taskQueue })).rejects.toThrow();
      expect(fake.named('submitJob')).toHaveLength(1);
      const result = await runJob(env.client, input(), { workflowId, taskQueue, idReuse: 'after-failure' });
      expect(result.status).toBe('COMPLETED');
    });
    expect(fake.named('submitJob')).toHaveLength(2);
  });

  it('resolves a result store reference when asked', async () => {
    const dir = tempDir('job-client');
    const big = { text: 'z'.repeat(300_000) };
    const outputRef = await createLocalResultStore(dir).put('key-1', big);
    const fake = fakeJob({
      waitForJobChange: async (req) => waitResult(req.jobId, 'COMPLETED', { outputRef }),
    });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const workflowId = uniqueTaskQueue('ref');
      const handle = await startJob(env.client, input(), { workflowId, taskQueue });
      expect((await awaitJob(env.client, { job: handle })).outputRef).toEqual(outputRef);
      const resolved = await awaitJob(env.client, { job: handle, store: dir });
      expect(resolved.output).toEqual(big);
      expect(resolved).not.toHaveProperty('outputRef');
    });
  });

  it('shows live progress from the wait`s last JobUnchanged look, between two looks', async () => {
    const fake = fakeJob({
      waitForJobChange: async (req) => {
        const { attempt } = Context.current().info;
        if (req.knownStatus === 'IN_QUEUE')
          return waitResult(req.jobId, 'IN_PROGRESS', { progress: { step: 1 } });
        if (attempt === 1) {
          // As activities/job-wait.ts does: nothing new, look again later (the server's timer).
          throw ApplicationFailure.create({
            type: 'JobUnchanged',
            message: 'still IN_PROGRESS',
            nextRetryDelay: '3 seconds',
            details: [
              {
                jobId: req.jobId,
                knownStatus: req.knownStatus,
                polls: 3,
                intervalMs: 3_000,
                progress: { step: 9 },
              },
            ],
          });
        }
        return waitResult(req.jobId, 'COMPLETED');
      },
    });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const workflowId = uniqueTaskQueue('live-retry');
      await startJob(env.client, input(), { workflowId, taskQueue });
      const snapshot = await waitFor(
        () => getJobSnapshot(env.client, { workflowId, live: true }),
        (seen) => seen.live !== undefined,
        "the poller's heartbeat in the snapshot",
      );
      expect(snapshot).toMatchObject({ status: 'IN_PROGRESS', live: { polls: 3, progress: { step: 9 } } });
      // The second look, when the server's timer fires, sees it finished.
      await awaitJob(env.client, { job: workflowId });
      expect(fake.named('waitForJobChange').map((call) => call.attempt)).toEqual([1, 1, 2]);
    });
  });

  it('shows live progress from the poller`s heartbeat in the snapshot', async () => {
    let release = false;
    const fake = fakeJob({
      waitForJobChange: async (req) => {
        const context = Context.current();
        if (req.knownStatus === 'IN_QUEUE')
          return waitResult(req.jobId, 'IN_PROGRESS', { progress: { step: 1 } });
        context.heartbeat({
          jobId: req.jobId,
          knownStatus: req.knownStatus,
          polls: 7,
          intervalMs: 1000,
          progress: { step: 5 },
        });
        while (!release) await context.sleep(20);
        return waitResult(req.jobId, 'COMPLETED');
      },
    });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const workflowId = uniqueTaskQueue('live');
      await startJob(env.client, input(), { workflowId, taskQueue });
      const snapshot = await waitFor(
        () => getJobSnapshot(env.client, { workflowId, live: true }),
        (seen) => seen.live !== undefined,
        "the poller's heartbeat in the snapshot",
      );
      expect(snapshot).toMatchObject({
        status: 'IN_PROGRESS',
        progress: { step: 1 },
        live: { polls: 7, progress: { step: 5 } },
      });
      release = true;
      await awaitJob(env.client, { job: workflowId });
    });
  });

  it('cancels a job: the remote job first, then the workflow', async () => {
    const fake = fakeJob({ waitForJobChange: pollerScript(['hang']) });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const workflowId = uniqueTaskQueue('cancel');
      await startJob(env.client, input(), { workflowId, taskQueue });
      await fake.called('waitForJobChange');
      await cancelJob(env.client, { workflowId });
      const error = await awaitJob(env.client, { job: workflowId }).catch((e: unknown) => e);
      expect(jobFailureOf(error)).toBeUndefined();
      expect((await env.client.workflow.getHandle(workflowId).describe()).status.name).toBe('CANCELLED');
    });
    expect(fake.named('cancelJob')).toHaveLength(1);
  });

  it('finds jobs by endpoint, job id and status through search attributes', async () => {
    const endpointId = uniqueTaskQueue('ep');
    const jobId = uniqueTaskQueue('remote');
    const fake = fakeJob({ submitJob: async () => submitted(jobId) });
    const workflowId = uniqueTaskQueue('find');
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      await runJob(env.client, input(endpointId), { workflowId, taskQueue });
    });
    // Visibility follows the workflow's end on its own schedule: wait for the closed record.
    const found = await waitFor(
      () => findJobByJobId(env.client, { jobId }),
      (seen) => seen?.workflowStatus === 'COMPLETED',
      'the finished job in visibility',
    );
    expect(found).toMatchObject({
      workflowId,
      endpointId,
      jobIds: [jobId],
      jobStatus: 'COMPLETED',
      workflowStatus: 'COMPLETED',
    });
    const listed = [];
    for await (const job of listJobs(env.client, { endpointId, status: 'COMPLETED', running: false }))
      listed.push(job.workflowId);
    expect(listed).toEqual([workflowId]);
  });

  it('builds visibility queries from checked values only', () => {
    expect(jobListQuery({ endpointId: 'ep-1', status: 'FAILED' })).toBe(
      'WorkflowType = "serverlessJob" AND ServerlessEndpointId = "ep-1" AND ServerlessJobStatus = "FAILED"',
    );
    expect(() => jobListQuery({ endpointId: 'ep" OR WorkflowId != "' })).toThrow(ValidationError);
    expect(() => jobListQuery({ status: 'done; drop' })).toThrow(ValidationError);
  });

  it('refuses a ttl extension the service would refuse', async () => {
    await expect(extendJobTtl(env.client, { workflowId: 'any', ttl: 5 })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });

  it('gives typed failures through jobFailureOf', () => {
    const failure = ApplicationFailure.create({
      type: 'JobExpired',
      message: 'gone',
      nonRetryable: true,
      details: [{ expired: 'ttl' }],
    });
    expect(jobFailureOf(failure)).toEqual({
      type: 'JobExpired',
      message: 'gone',
      details: { expired: 'ttl' },
    });
    expect(jobFailureOf(new Error('x'))).toBeUndefined();
  });
});
