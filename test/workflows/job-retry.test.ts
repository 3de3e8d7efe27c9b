/**
 * The job workflow's retries and deadlines on the time-skipping server: /retry after FAILED and
 * TIMED_OUT with the caller's backoff and limit, results that expire (30 minutes) before a retry,
 * the ttl as a hard deadline (7 days crossed in milliseconds), 404s, fresh submissions after
 * expiry, and ttl extension.
 */

import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobStatusValue } from '../../api/schemas/job';
import type { JobWorkflowInput } from '../../contracts/job-input';
import { extendJobTtlSignal, jobSnapshotQuery } from '../../workflows/job/job-definitions';
import { jobIdKey } from '../../workflows/shared/search-attributes';
import {
  bundleJobWorkflow,
  DAY_MS,
  failureOf,
  fakeJob,
  jobTestEnv,
  observation,
  pollerScript,
  quietRuntime,
  submitted,
  waitResult,
  withWorker,
  workflowElapsed,
} from './job-harness';
import type { serverlessJob } from './job-test-workflows';

quietRuntime();

const MINUTE = 60_000;

const input = (extra: Partial<JobWorkflowInput> = {}): JobWorkflowInput => ({
  endpointId: 'ep-1',
  request: { input: { n: 1 } },
  ...extra,
});

/** A poller that polled in vain until its deadline (the mock cannot spend days, so it says so at once). */
const atDeadline = async (req: { jobId: string; knownStatus: JobStatusValue }) =>
  waitResult(req.jobId, req.knownStatus, { reason: 'deadline' });

const expiredFailure = (facts: Record<string, unknown> = {}) =>
  ApplicationFailure.create({
    type: 'JobExpired',
    message: 'HTTP 404',
    nonRetryable: true,
    details: [{ status: 404, ...facts }],
  });

describe('job workflow: retries, expiry and the ttl', () => {
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
      workflowId: `retry-wf-${++id}`,
      args: [args],
    });

  it('retries a FAILED job with /retry (same id) after the backoff, then completes', async () => {
    const fake = fakeJob({
      waitForJobChange: pollerScript([
        waitResult('job-1', 'FAILED', { error: 'CUDA out of memory' }),
        'IN_PROGRESS',
        'COMPLETED',
      ]),
    });
    const { result, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(
        taskQueue,
        input({ retry: { maxRetries: 3, initialInterval: '10 minutes' } }),
      );
      const result = await handle.result();
      return { result, elapsed: await workflowElapsed(handle) };
    });
    expect(result).toMatchObject({
      jobId: 'job-1',
      status: 'COMPLETED',
      attempts: 2,
      retries: 1,
      submissions: 1,
    });
    expect(fake.named('retryJob').map((call) => call.input)).toEqual([
      { endpointId: 'ep-1', jobId: 'job-1' },
    ]);
    expect(fake.named('submitJob')).toHaveLength(1);
    expect(elapsed).toBeGreaterThanOrEqual(10 * MINUTE);
  });

  it('keeps trying a /retry the service answers 503, past the few tries of a one-shot call', async () => {
    let unanswered = 8;
    const fake = fakeJob({
      waitForJobChange: pollerScript([waitResult('job-1', 'FAILED'), 'COMPLETED']),
      retryJob: async (req) => {
        if (unanswered-- > 0) {
          throw ApplicationFailure.create({ type: 'ServerError', message: 'HTTP 503', nonRetryable: false });
        }
        return observation(req.jobId, 'IN_QUEUE');
      },
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ retry: { maxRetries: 1, initialInterval: 1_000 } }))).result(),
    );
    expect(result).toMatchObject({ jobId: 'job-1', status: 'COMPLETED', retries: 1, submissions: 1 });
    expect(fake.named('retryJob')).toHaveLength(9);
  });

  it("adds up a retried job's runs in its cost estimate (result and snapshot)", async () => {
    const cost = (amount: number, seconds: number) => ({
      amount,
      currency: 'USD',
      tier: 'AMPERE_16' as const,
      seconds,
    });
    const fake = fakeJob({
      waitForJobChange: pollerScript([
        waitResult('job-1', 'FAILED', { error: 'flaky', executionTime: 2_000, cost: cost(0.4, 2) }),
        'IN_PROGRESS',
        waitResult('job-1', 'COMPLETED', { executionTime: 3_000, cost: cost(0.6, 3) }),
      ]),
    });
    const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ retry: { maxRetries: 1, initialInterval: '1 minute' } }));
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });
    expect(result.retries).toBe(1);
    // The last run's executionTime, both runs' cost.
    expect(result.executionTime).toBe(3_000);
    expect(result.cost).toEqual(cost(1, 5));
    expect(snapshot.cost).toEqual(cost(1, 5));
  });

  it('retries TIMED_OUT too, with a growing backoff, and stops at the limit with JobTimedOut', async () => {
    const fake = fakeJob({ waitForJobChange: pollerScript(['TIMED_OUT']) });
    const { failure, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(
        taskQueue,
        input({ retry: { maxRetries: 2, initialInterval: '1 minute', backoffCoefficient: 3 } }),
      );
      const failure = await failureOf(handle.result());
      return { failure, elapsed: await workflowElapsed(handle) };
    });
    expect(failure.type).toBe('JobTimedOut');
    expect(failure.details?.[0]).toMatchObject({
      jobId: 'job-1',
      status: 'TIMED_OUT',
      attempts: 3,
      retries: 2,
    });
    expect(fake.named('retryJob')).toHaveLength(2);
    // 1 minute, then 3 minutes.
    expect(elapsed).toBeGreaterThanOrEqual(4 * MINUTE);
  });

  it('fails with JobFailed carrying the service error once the retries are spent', async () => {
    const fake = fakeJob({
      waitForJobChange: async (req) =>
        waitResult(req.jobId, 'FAILED', { error: 'handler raised ValueError' }),
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf(
        (await start(taskQueue, input({ retry: { maxRetries: 1, initialInterval: 1000 } }))).result(),
      ),
    );
    expect(failure.type).toBe('JobFailed');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('handler raised ValueError');
    expect(failure.details?.[0]).toMatchObject({
      error: 'handler raised ValueError',
      retries: 1,
      attempts: 2,
    });
  });

  it('does not retry by default, nor statuses the caller left out', async () => {
    const fake = fakeJob({ waitForJobChange: pollerScript(['FAILED']) });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ retry: { maxRetries: 5, on: ['TIMED_OUT'] } }))).result()),
    );
    expect(failure.type).toBe('JobFailed');
    expect(fake.named('retryJob')).toHaveLength(0);
  });

  it('does not call /retry once the 30-minute retention has passed: JobExpired (results)', async () => {
    const fake = fakeJob({ waitForJobChange: pollerScript(['FAILED']) });
    const { failure, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(
        taskQueue,
        input({ retry: { maxRetries: 1, initialInterval: '45 minutes' } }),
      );
      const failure = await failureOf(handle.result());
      return { failure, elapsed: await workflowElapsed(handle) };
    });
    expect(failure.type).toBe('JobExpired');
    expect(failure.details?.[0]).toMatchObject({ expired: 'results', jobId: 'job-1', status: 'FAILED' });
    expect(fake.named('retryJob')).toHaveLength(0);
    expect(elapsed).toBeGreaterThanOrEqual(45 * MINUTE);
  });

  it('submits afresh when the retention passed before the retry, if the caller chose resubmit', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`),
      waitForJobChange: async (req) => waitResult(req.jobId, req.jobId === 'job-1' ? 'FAILED' : 'COMPLETED'),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (
        await start(
          taskQueue,
          input({ onExpired: 'resubmit', retry: { maxRetries: 1, initialInterval: '31 minutes' } }),
        )
      ).result(),
    );
    expect(result).toMatchObject({ jobId: 'job-2', submissions: 2, retries: 0, jobIds: ['job-1', 'job-2'] });
    expect(fake.named('retryJob')).toHaveLength(0);
  });

  it('keeps a /runsync job to its 1-minute retention', async () => {
    const fake = fakeJob({
      runJobSync: async () => ({
        ...observation('sync-1', 'FAILED', { error: 'boom' }),
        webhookArmed: false,
      }),
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf(
        (
          await start(
            taskQueue,
            input({ mode: 'runsync', retry: { maxRetries: 1, initialInterval: '2 minutes' } }),
          )
        ).result(),
      ),
    );
    expect(failure.type).toBe('JobExpired');
    expect(fake.named('retryJob')).toHaveLength(0);
  });

  it('submits afresh after the results expired, when the caller chose resubmit', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`),
      waitForJobChange: async (req) => waitResult(req.jobId, req.jobId === 'job-1' ? 'FAILED' : 'COMPLETED'),
      retryJob: async () => {
        throw expiredFailure();
      },
    });
    const { result, jobIds } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ onExpired: 'resubmit', retry: { maxRetries: 2 } }));
      const result = await handle.result();
      return { result, jobIds: (await handle.describe()).typedSearchAttributes.get(jobIdKey) };
    });
    expect(result).toMatchObject({ jobId: 'job-2', submissions: 2, attempts: 2, jobIds: ['job-1', 'job-2'] });
    expect(fake.named('retryJob')).toHaveLength(1);
    expect(jobIds).toEqual(['job-1', 'job-2']);
  });

  it('never waits past a 7-day ttl: a job still queued at the deadline has expired', async () => {
    const fake = fakeJob({
      waitForJobChange: atDeadline,
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_QUEUE'),
    });
    const ttl = 7 * DAY_MS;
    const { failure, elapsed, events, snapshot } = await withWorker(
      env,
      bundle,
      fake.activities,
      async (taskQueue) => {
        const handle = await start(
          taskQueue,
          input({ request: { input: {}, policy: { ttl, executionTimeout: ttl } } }),
        );
        const failure = await failureOf(handle.result());
        return {
          failure,
          elapsed: await workflowElapsed(handle),
          events: (await handle.fetchHistory()).events?.length ?? 0,
          snapshot: await handle.query(jobSnapshotQuery),
        };
      },
    );
    expect(failure.type).toBe('JobExpired');
    expect(failure.details?.[0]).toMatchObject({ expired: 'ttl', status: 'IN_QUEUE' });
    expect(failure.message).toContain('ttl deadline came while it was IN_QUEUE');
    // It stopped just before the deadline (5 s margin), not after.
    expect(elapsed).toBeGreaterThanOrEqual(ttl - 5_000 - MINUTE);
    expect(elapsed).toBeLessThan(ttl);
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + ttl);
    // Seven days of waiting cost a handful of events (one more since the submit-lease patch marker).
    expect(events).toBeLessThan(41);
  });

  it('takes a finish seen at the last look before the deadline', async () => {
    const fake = fakeJob({
      waitForJobChange: atDeadline,
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'just in time' }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ request: { input: {}, policy: { ttl: 2 * DAY_MS } } }))).result(),
    );
    expect(result.output).toBe('just in time');
  });

  it('counts queue time against the ttl and does not reset it on /retry', async () => {
    const fake = fakeJob({
      waitForJobChange: async (req) =>
        req.knownStatus === 'IN_QUEUE' && fake.named('retryJob').length === 0
          ? waitResult(req.jobId, 'FAILED')
          : atDeadline(req),
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_PROGRESS'),
    });
    const { failure, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(
        taskQueue,
        input({
          request: { input: {}, policy: { ttl: DAY_MS } },
          retry: { maxRetries: 1, initialInterval: '20 minutes' },
        }),
      );
      const failure = await failureOf(handle.result());
      return { failure, elapsed: await workflowElapsed(handle) };
    });
    expect(failure.type).toBe('JobExpired');
    expect(failure.details?.[0]).toMatchObject({ expired: 'ttl', retries: 1 });
    expect(fake.named('retryJob')).toHaveLength(1);
    // The deadline stayed one day from the first submission, the 20-minute backoff included.
    expect(elapsed).toBeGreaterThanOrEqual(DAY_MS - 5_000 - MINUTE);
    expect(elapsed).toBeLessThan(DAY_MS);
  });

  it('treats a 404 while waiting as expiry, cancels what may remain, and resubmits when asked', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`),
      waitForJobChange: async (req) => {
        if (req.jobId === 'job-1') throw expiredFailure();
        return waitResult(req.jobId, 'COMPLETED');
      },
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ onExpired: 'resubmit' }))).result(),
    );
    expect(result).toMatchObject({ jobId: 'job-2', submissions: 2, jobIds: ['job-1', 'job-2'] });
    expect(fake.named('cancelJob').map((call) => call.input)).toEqual([
      { endpointId: 'ep-1', jobId: 'job-1' },
    ]);
  });

  it('fails with JobExpired on a 404 by default, and stops resubmitting at maxSubmissions', async () => {
    const fake = fakeJob({
      waitForJobChange: async () => {
        throw expiredFailure();
      },
    });
    const failures = await withWorker(env, bundle, fake.activities, async (taskQueue) => [
      await failureOf((await start(taskQueue, input())).result()),
      await failureOf((await start(taskQueue, input({ onExpired: 'resubmit', maxSubmissions: 2 }))).result()),
    ]);
    expect(failures.map((failure) => failure.type)).toEqual(['JobExpired', 'JobExpired']);
    // Submitted a moment ago: its results cannot have expired (that takes 30 minutes after its
    // end), so the service's own ttl clock took it, whatever the workflow's clock says. Results
    // that expired unseen (a job not seen for a retention period) are a case of the engine's table.
    expect(failures[0]?.details?.[0]).toMatchObject({ expired: 'ttl', submissions: 1 });
    expect(failures[1]?.details?.[0]).toMatchObject({ submissions: 2 });
    expect(fake.named('submitJob')).toHaveLength(3);
  });

  it("names the ttl for a 404 right after the poller saw the job alive (the service's clock came first)", async () => {
    const fake = fakeJob({
      // The poller saw the job a moment ago: results cannot have expired since (that takes 30
      // minutes). The server's clock, not this process's: the time-skipping clock runs ahead.
      waitForJobChange: async () => {
        throw expiredFailure({ lastAliveAt: Context.current().info.currentAttemptScheduledTimestampMs });
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input())).result()),
    );
    expect(failure.type).toBe('JobExpired');
    expect(failure.details?.[0]).toMatchObject({ expired: 'ttl', submissions: 1 });
  });

  it('extends the ttl through /status?ttl= when asked, and moves its deadline', async () => {
    const poller = pollerScript(['hang', 'COMPLETED']);
    const fake = fakeJob({
      waitForJobChange: poller,
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_QUEUE'),
    });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ request: { input: {}, policy: { ttl: DAY_MS } } }));
      await fake.called('waitForJobChange');
      await handle.signal(extendJobTtlSignal, { ttl: 5 }); // refused: below the service's minimum
      await handle.signal(extendJobTtlSignal, { ttl: 3 * DAY_MS });
      await fake.called('waitForJobChange', 2);
      const snapshot = await handle.query(jobSnapshotQuery);
      expect(snapshot.ttlExtensionError).toBeUndefined();
      expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + 3 * DAY_MS);
      expect(fake.named('waitForJobChange')[1]?.input).toMatchObject({
        returnBy: (snapshot.timings.ttlDeadline as number) - 5_000,
      });
      poller.release();
      await handle.result();
    });
    expect(fake.named('fetchJobStatus').map((call) => call.input)).toEqual([
      { endpointId: 'ep-1', jobId: 'job-1', ttl: 3 * DAY_MS },
    ]);
  });

  it('reports a refused ttl extension in the snapshot', async () => {
    const poller = pollerScript(['hang', 'COMPLETED']);
    const fake = fakeJob({ waitForJobChange: poller });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await fake.called('waitForJobChange');
      await handle.signal(extendJobTtlSignal, { ttl: 5 });
      let error: string | undefined;
      for (let i = 0; i < 100 && error === undefined; i++)
        error = (await handle.query(jobSnapshotQuery)).ttlExtensionError;
      expect(error).toMatch(/between 10000 and 604800000/);
      poller.release();
      await handle.result();
    });
    expect(fake.named('fetchJobStatus')).toHaveLength(0);
  });
});
