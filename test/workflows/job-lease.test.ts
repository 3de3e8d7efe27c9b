/**
 * Submitting under a lease (contracts/submit-lease.ts) on the time-skipping server, every branch:
 * the extension succeeds; it fails until the lease ends (the job is gone: submitted again); after
 * an uncertain submit an orphan reports during the lease (adopted, then extended) or none does
 * (submitted again once the lease and the webhook window are over); and the lease turned off.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { FetchJobStatusInput } from '../../contracts/job-types';
import { WEBHOOK_MARGIN_MS, WEBHOOK_RETRY_WINDOW_MS } from '../../contracts/submit-lease';
import { jobSnapshotQuery, jobWebhookSignal } from '../../workflows/job/job-definitions';
import {
  bundleJobWorkflow,
  DAY_MS,
  diesAfterSending,
  failureOf,
  fakeJob,
  jobTestEnv,
  neverAnswers,
  observation,
  quietRuntime,
  submitted,
  untilPhase,
  withWorker,
  workflowElapsed,
} from './job-harness';
import type { serverlessJob } from './job-test-workflows';

quietRuntime();

const LEASE_MS = 60_000;

const input = (extra: Partial<JobWorkflowInput> = {}): JobWorkflowInput => ({
  endpointId: 'ep-1',
  request: { input: { n: 1 } },
  ...extra,
});

/** An uncertain submit that went out under the lease, with a webhook. */
const uncertainUnderLease = () =>
  ApplicationFailure.create({
    type: 'SubmitUncertain',
    message: 'the run request may have reached the service (socket closed)',
    nonRetryable: true,
    details: [{ operation: 'run', cause: 'Network', webhookArmed: true, leaseTtlMs: LEASE_MS }],
  });

const unavailable = () =>
  ApplicationFailure.create({ type: 'ServiceUnavailable', message: '500 from /status', nonRetryable: false });

/** The durations (seconds) of the timers a history started. */
const timerSeconds = (
  history: Pick<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>, 'events'>,
): number[] =>
  (history.events ?? []).flatMap((event) => {
    const seconds = event.timerStartedEventAttributes?.startToFireTimeout?.seconds;
    return seconds === undefined || seconds === null ? [] : [Number(seconds)];
  });

const extensions = (calls: Array<{ input: unknown }>) =>
  calls.map((call) => call.input as FetchJobStatusInput).filter((call) => call.ttl !== undefined);

describe('job workflow: submitting under a lease', () => {
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
      workflowId: `lease-wf-${++id}`,
      args: [args],
    });

  it("extension succeeds: the ttl is set to the caller's right after the id arrives, counted from submission", async () => {
    const fake = fakeJob({
      submitJob: async () => submitted('job-1', { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_QUEUE'),
    });
    const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });
    expect(result).toMatchObject({ jobId: 'job-1', submissions: 1, uncertainSubmits: 0, jobIds: ['job-1'] });
    expect(result).not.toHaveProperty('leaseLapses');
    // The default lease went to the activity (applied there only if it arms a webhook).
    expect(fake.named('submitJob')[0]?.input).toMatchObject({
      lease: { ttlMs: LEASE_MS, onlyWithWebhook: true },
    });
    // One extension, to the service's default ttl, before any waiting began.
    expect(extensions(fake.named('fetchJobStatus'))).toEqual([
      { endpointId: 'ep-1', jobId: 'job-1', ttl: DAY_MS },
    ]);
    expect(fake.calls[1]?.name).toBe('fetchJobStatus');
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + DAY_MS);
    expect(snapshot.leaseTtlMs).toBeUndefined();
    expect(snapshot).toMatchObject({ leaseLapses: 0, uncertainAdopted: 0, resubmittedAfterLease: 0 });
  });

  it('a caller ttl within the lease needs no extension', async () => {
    const fake = fakeJob({ submitJob: async () => submitted('job-1', { leaseTtlMs: 30_000 }) });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ request: { input: {}, policy: { ttl: 30_000 } } }))).result(),
    );
    expect(result).toMatchObject({ jobId: 'job-1', submissions: 1 });
    expect(fake.named('submitJob')[0]?.input).toMatchObject({ lease: { ttlMs: 30_000 } });
    expect(extensions(fake.named('fetchJobStatus'))).toEqual([]);
  });

  it('extension fails until the lease ends: the job is gone, it is submitted again and counted', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`, { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async (req) => {
        if (req.jobId === 'job-1' && req.ttl !== undefined) throw unavailable();
        // After the lease, a look finds it deleted.
        if (req.jobId === 'job-1')
          throw ApplicationFailure.create({ type: 'JobExpired', message: '404', nonRetryable: true });
        return observation(req.jobId, 'COMPLETED', { output: 'second' });
      },
    });
    const { result, elapsed, history } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      const result = await handle.result();
      return { result, elapsed: await workflowElapsed(handle), history: await handle.fetchHistory() };
    });
    expect(result).toMatchObject({
      jobId: 'job-2',
      submissions: 2,
      leaseLapses: 1,
      jobIds: ['job-1', 'job-2'],
    });
    // The extension was tried (Temporal retried it) until the lease ran out; the job was looked at
    // once the lease was over, and sent again only then.
    const job1 = fake
      .named('fetchJobStatus')
      .filter((call) => (call.input as FetchJobStatusInput).jobId === 'job-1');
    expect(extensions(job1).length).toBeGreaterThan(2);
    expect(job1.at(-1)?.input).toEqual({ endpointId: 'ep-1', jobId: 'job-1' });
    expect(elapsed).toBeGreaterThanOrEqual(LEASE_MS);
    // Sent again right after that look, with nothing waited for in between; no wait before it was
    // longer than the lease (read from the history: the workflow's own timers, not a clock).
    const events = history.events ?? [];
    const scheduled = (name: string) =>
      events.flatMap((event, index) =>
        event.activityTaskScheduledEventAttributes?.activityType?.name === name ? [index] : [],
      );
    const resubmit = scheduled('submitJob')[1] as number;
    const look = scheduled('fetchJobStatus')
      .filter((index) => index < resubmit)
      .at(-1) as number;
    expect(events.slice(look, resubmit).filter((event) => event.timerStartedEventAttributes)).toEqual([]);
    const before = { events: events.slice(0, resubmit) };
    for (const seconds of timerSeconds(before)) expect(seconds * 1000).toBeLessThanOrEqual(LEASE_MS);
  });

  it('extension answers all lost but one reached the service: the look after the lease finds the job alive and keeps it', async () => {
    const fake = fakeJob({
      submitJob: async () => submitted('job-1', { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async (req) => {
        if (req.ttl !== undefined) throw unavailable();
        return observation(req.jobId, 'IN_PROGRESS');
      },
    });
    const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });
    expect(result).toMatchObject({ jobId: 'job-1', submissions: 1, jobIds: ['job-1'] });
    expect(result).not.toHaveProperty('leaseLapses');
    expect(fake.named('submitJob')).toHaveLength(1);
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + DAY_MS);
  });

  it('a 404 on the extension: the lease already ran out, submitted again at once', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`, { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async (req) => {
        if (req.jobId === 'job-1')
          throw ApplicationFailure.create({ type: 'JobExpired', message: '404', nonRetryable: true });
        return observation(req.jobId, 'COMPLETED', { output: 'second' });
      },
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input())).result(),
    );
    expect(result).toMatchObject({ jobId: 'job-2', submissions: 2, leaseLapses: 1 });
    expect(extensions(fake.named('fetchJobStatus')).filter((call) => call.jobId === 'job-1')).toHaveLength(1);
  });

  it('leases that keep lapsing stop at maxSubmissions with JobExpired', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => submitted(`job-${++submits}`, { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async () => {
        throw ApplicationFailure.create({ type: 'JobExpired', message: '404', nonRetryable: true });
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ maxSubmissions: 2 }))).result()),
    );
    expect(failure.type).toBe('JobExpired');
    expect(failure.message).toContain('submit lease ran out');
    expect(failure.details?.[0]).toMatchObject({ submissions: 2, leaseLapses: 2, expired: 'ttl' });
  });

  it('an orphan reports during the lease: adopted, then its ttl extended', async () => {
    const fake = fakeJob({
      submitJob: async () => {
        throw uncertainUnderLease();
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_PROGRESS'),
    });
    const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await untilPhase(handle, 'adopting');
      await handle.signal(jobWebhookSignal, { jobId: 'orphan-1', status: 'IN_PROGRESS' });
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });
    expect(result).toMatchObject({
      jobId: 'orphan-1',
      submissions: 1,
      uncertainSubmits: 1,
      uncertainAdopted: 1,
      jobIds: ['orphan-1'],
    });
    expect(result).not.toHaveProperty('resubmittedAfterLease');
    expect(snapshot).toMatchObject({ adopted: true, uncertainAdopted: 1, resubmittedAfterLease: 0 });
    expect(extensions(fake.named('fetchJobStatus'))).toEqual([
      { endpointId: 'ep-1', jobId: 'orphan-1', ttl: DAY_MS },
    ]);
    expect(fake.named('submitJob')).toHaveLength(1);
  });

  it('an orphan that reports COMPLETED is adopted with its output by one look; no extension follows', async () => {
    const fake = fakeJob({
      submitJob: async () => {
        throw uncertainUnderLease();
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'orphan output' }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await untilPhase(handle, 'adopting');
      await handle.signal(jobWebhookSignal, { jobId: 'orphan-2', status: 'COMPLETED' });
      return handle.result();
    });
    expect(result).toMatchObject({ jobId: 'orphan-2', output: 'orphan output', uncertainAdopted: 1 });
    // One call: the look that adopted it, which also carried the caller's ttl; no extension after.
    expect(fake.named('fetchJobStatus')).toHaveLength(1);
  });

  it('no orphan reports: after the lease and the webhook window it is submitted again (a timer, no slot)', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => {
        submits += 1;
        if (submits === 1) throw uncertainUnderLease();
        return submitted('job-2', { leaseTtlMs: LEASE_MS });
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_QUEUE'),
    });
    const { result, elapsed, snapshot, timers } = await withWorker(
      env,
      bundle,
      fake.activities,
      async (taskQueue) => {
        const handle = await start(taskQueue, input());
        const result = await handle.result();
        const timers = timerSeconds(await handle.fetchHistory());
        return {
          result,
          elapsed: await workflowElapsed(handle),
          snapshot: await handle.query(jobSnapshotQuery),
          timers,
        };
      },
    );
    expect(result).toMatchObject({
      jobId: 'job-2',
      submissions: 2,
      uncertainSubmits: 1,
      resubmittedAfterLease: 1,
      jobIds: ['job-2'],
    });
    expect(snapshot).toMatchObject({ uncertainAdopted: 0, resubmittedAfterLease: 1, adopted: false });
    const wait = LEASE_MS + WEBHOOK_RETRY_WINDOW_MS + WEBHOOK_MARGIN_MS;
    expect(elapsed).toBeGreaterThanOrEqual(wait);
    // The wait was one durable timer of the lease plus the webhook window.
    expect(timers.some((seconds) => Math.abs(seconds * 1000 - wait) <= 1_000)).toBe(true);
    expect(fake.named('submitJob')).toHaveLength(2);
  });

  it('uncertain submits under a lease go on past maxSubmissions by maxLeaseResubmits, then fail with SubmitUncertain', async () => {
    const fake = fakeJob({
      submitJob: async () => {
        throw uncertainUnderLease();
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ maxSubmissions: 2, maxLeaseResubmits: 3 }))).result()),
    );
    expect(failure.type).toBe('SubmitUncertain');
    expect(failure.message).toContain('no orphan of it can still run');
    expect(failure.message).toContain('maxLeaseResubmits (3)');
    // 2 + 3 submissions, each uncertain; every one but the last was sent again after its lease.
    expect(failure.details?.[0]).toMatchObject({
      submissions: 5,
      uncertainSubmits: 5,
      resubmittedAfterLease: 4,
    });
  });

  it('with maxLeaseResubmits 0, an uncertain submit at maxSubmissions under a lease fails as before', async () => {
    const fake = fakeJob({
      submitJob: async () => {
        throw uncertainUnderLease();
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ maxSubmissions: 2, maxLeaseResubmits: 0 }))).result()),
    );
    expect(failure.type).toBe('SubmitUncertain');
    expect(failure.details?.[0]).toMatchObject({
      submissions: 2,
      uncertainSubmits: 2,
      resubmittedAfterLease: 1,
    });
  });

  it('a worker dying mid-submit under an explicit lease: the lease is known, so it is waited out and sent again', async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => {
        submits += 1;
        // The activity never answers: its start-to-close timeout is the workflow's only news.
        if (submits === 1) await diesAfterSending();
        return submitted('job-2', { leaseTtlMs: 20_000, webhookArmed: false });
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'ok' }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ submitLease: '20 seconds', submitTimeout: '1 second' }))).result(),
    );
    expect(result).toMatchObject({
      jobId: 'job-2',
      submissions: 2,
      uncertainSubmits: 1,
      resubmittedAfterLease: 1,
    });
    expect(fake.named('submitJob')[0]?.input).toMatchObject({
      lease: { ttlMs: 20_000, onlyWithWebhook: false },
    });
  });

  it("a worker dying mid-submit under 'auto': the workers arm webhooks, so the lease is waited out and it is sent again", async () => {
    let submits = 0;
    const fake = fakeJob({
      submitJob: async () => {
        submits += 1;
        if (submits === 1) await diesAfterSending();
        return submitted('job-2', { leaseTtlMs: LEASE_MS });
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'ok' }),
    });
    const { result, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ submitTimeout: '1 second', onUncertainSubmit: 'fail' }));
      return { result: await handle.result(), elapsed: await workflowElapsed(handle) };
    });
    expect(result).toMatchObject({
      jobId: 'job-2',
      submissions: 2,
      uncertainSubmits: 1,
      resubmittedAfterLease: 1,
    });
    expect(fake.named('webhooksArmed')).toHaveLength(1);
    // Not sent again before the lease, the webhook's retries and the margin were over.
    expect(elapsed).toBeGreaterThanOrEqual(LEASE_MS + WEBHOOK_RETRY_WINDOW_MS + WEBHOOK_MARGIN_MS);
  });

  it("a worker dying mid-submit under 'auto' is noticed by its heartbeat within the lease, and the orphan that reported is adopted", async () => {
    const fake = fakeJob({
      // The worker dies after sending: no heartbeat, no answer (the default submitTimeout is 2 min).
      submitJob: async () => {
        await diesAfterSending();
        return submitted('never');
      },
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'from the orphan' }),
    });
    const { result, history } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ onUncertainSubmit: 'fail' }));
      await untilPhase(handle, 'submitting');
      await handle.signal(jobWebhookSignal, { jobId: 'orphan-1', status: 'COMPLETED' });
      return { result: await handle.result(), history: await handle.fetchHistory() };
    });
    expect(result).toMatchObject({
      jobId: 'orphan-1',
      output: 'from the orphan',
      submissions: 1,
      uncertainSubmits: 1,
      uncertainAdopted: 1,
    });
    // The submit's heartbeat told the worker was gone, and the orphan was adopted while its lease
    // still ran (no wait for the lease's end ever fired), so its output was still there.
    const events = history.events ?? [];
    const timedOut = events.flatMap((event) => {
      const type = event.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType;
      return type === undefined || type === null ? [] : [type];
    });
    expect(timedOut).toEqual([temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT]);
    expect(events.filter((event) => event.timerFiredEventAttributes)).toEqual([]);
  });

  it("a worker dying mid-submit under 'auto' on workers without webhooks: no lease went out, onUncertainSubmit decides", async () => {
    const fake = fakeJob({
      webhooksArmed: async () => false,
      submitJob: async () => {
        await diesAfterSending();
        return submitted('job-late', { webhookArmed: false });
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ submitTimeout: '1 second' }))).result()),
    );
    expect(failure.type).toBe('SubmitUncertain');
    expect(failure.message).toContain('ActivityTimeout');
    expect(fake.named('submitJob')).toHaveLength(1);
  });

  it('a worker dying mid-extension: the try times out within a quarter of the lease and another try extends it in time', async () => {
    let tries = 0;
    const fake = fakeJob({
      submitJob: async () => submitted('job-1', { leaseTtlMs: LEASE_MS }),
      fetchJobStatus: async (req) => {
        if (req.ttl !== undefined && ++tries === 1) {
          // The worker holding the first try dies: no answer ever comes.
          await neverAnswers();
        }
        return observation(req.jobId, req.ttl === undefined ? 'COMPLETED' : 'IN_PROGRESS', { output: 'ok' });
      },
    });
    const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });
    expect(result).toMatchObject({ jobId: 'job-1', submissions: 1, jobIds: ['job-1'] });
    expect(result).not.toHaveProperty('leaseLapses');
    const tried = extensions(fake.named('fetchJobStatus'));
    expect(tried).toHaveLength(2);
    // The second try came while the lease still ran: the extension counts from submission.
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + DAY_MS);
  });

  it('submitLease false: no lease goes to the activity, and uncertain submits follow onUncertainSubmit', async () => {
    const fake = fakeJob({
      submitJob: async () => {
        throw ApplicationFailure.create({
          type: 'SubmitUncertain',
          message: 'socket closed',
          nonRetryable: true,
          details: [{ webhookArmed: true }],
        });
      },
    });
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ submitLease: false }))).result()),
    );
    expect(fake.named('submitJob')[0]?.input).not.toHaveProperty('lease');
    expect(failure.type).toBe('SubmitUncertain');
    expect(failure.message).toContain('onUncertainSubmit is fail');
    expect(fake.named('submitJob')).toHaveLength(1);
  });
});
