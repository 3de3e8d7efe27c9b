/**
 * Retries with /retry (same job id), retries refused once the results have expired, and the ttl
 * deleting a job, on the real stack (dev server, emulator over HTTP, real worker, polling only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, jobFailureOf } from '../../client/jobs';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

const RETENTION_MS = 30 * 60_000;

async function failureOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeDefined();
  return jobFailureOf(error);
}

describe('job workflow retries and expiry (dev server, emulator over HTTP, real worker)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    // Service time 100x real time: a 5 s executionTimeout is 50 ms, a 10 s ttl 100 ms. The expiry
    // tests freeze the clock and cross the retention (30 minutes) with control.advance while the
    // workflow's /retry is being refused.
    stack = await startJobStack({ name: 'job-retry', timeScale: 100 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('FAILED twice, then retried with /retry on the same job id until it completes', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 500, failTimes: 2, output: 'third time lucky' } },
      retry: { maxRetries: 3, initialInterval: 50 },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const jobs = stack.control.jobs(endpointId);
    expect(jobs).toHaveLength(1);
    const job = jobs[0];
    expect(result).toMatchObject({
      jobId: job?.id,
      jobIds: [job?.id],
      output: 'third time lucky',
      attempts: 3,
      retries: 2,
      submissions: 1,
    });
    expect(job).toMatchObject({ status: 'COMPLETED', attempts: 3, retries: 2 });
    expect(stack.control.submissions(endpointId)).toBe(1);
  });

  it('TIMED_OUT once, then retried on the same job id until it completes', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: {
        input: { sleepMs: 500, timeoutTimes: 1, output: 'in time' },
        policy: { executionTimeout: 5_000 },
      },
      retry: { maxRetries: 1, initialInterval: 50, on: ['TIMED_OUT'] },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const job = stack.control.job(result.jobId);
    expect(result).toMatchObject({ output: 'in time', attempts: 2, retries: 1, jobIds: [result.jobId] });
    expect(job).toMatchObject({ status: 'COMPLETED', attempts: 2, retries: 1 });
    expect(stack.control.submissions(endpointId)).toBe(1);
  });

  it('retry limit reached: JobFailed after 1 + maxRetries attempts', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 200, fail: 'bad weights' } },
      retry: { maxRetries: 1, initialInterval: 50 },
      polling: FAST_POLLING,
    });
    const failure = await failureOf(awaitJob(stack.client, { job: handle }));
    expect(failure?.type).toBe('JobFailed');
    expect(failure?.details).toMatchObject({ error: 'bad weights', attempts: 2, retries: 1, submissions: 1 });
    expect(stack.control.jobs(endpointId)[0]).toMatchObject({ status: 'FAILED', attempts: 2, retries: 1 });
  });

  /**
   * Refuses every /retry of the endpoint with a 503 before the service looks at it, until the
   * returned function is called: the workflow stays in phase 'retrying' (Temporal retries the
   * call) for as long as the test needs, instead of for a backoff the test must catch.
   */
  const refuseRetries = (endpointId: string) =>
    stack.control.injectFault({ operation: 'retry', endpointId, kind: 'status', httpStatus: 503 });

  /** Attempts of the workflow's first /retry call, and the failure the last one before it got. */
  async function retryAttempts(workflowId: string) {
    const events = (await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'retryJob',
    );
    const started = events.find(
      (e) =>
        e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString(),
    )?.activityTaskStartedEventAttributes;
    return { attempt: started?.attempt ?? 0, lastFailure: started?.lastFailure?.message ?? '' };
  }

  it("results expired before the retry (onExpired 'fail'): /retry is refused, JobExpired 'results'", async () => {
    const endpointId = stack.endpoint();
    stack.control.freeze();
    try {
      const handle = await stack.start({
        endpointId,
        request: { input: { sleepMs: 200, fail: 'flaky node' } },
        retry: { maxRetries: 2, initialInterval: 50 },
        onExpired: 'fail',
        polling: FAST_POLLING,
      });
      await eventually(() => stack.control.submissions(endpointId) === 1);
      const allowRetries = refuseRetries(endpointId);
      stack.control.advance(5_000 + 200); // the cold start, then the run: FAILED
      // While the workflow tries to /retry, 31 minutes of service time pass: the results go.
      const retrying = await stack.snapshotWhen(handle.workflowId, (s) => s.phase === 'retrying');
      const jobId = retrying.jobId as string;
      expect(retrying).toMatchObject({ status: 'FAILED', retries: 0 });
      // 'retrying' may be shown before the first /retry went out: wait until one was refused.
      await eventually(async () => {
        const { raw } = await stack.client.workflow.getHandle(handle.workflowId).describe();
        return (raw.pendingActivities ?? []).some(
          (a) => a.activityType?.name === 'retryJob' && (a.attempt ?? 0) >= 2,
        );
      });
      stack.control.advance(RETENTION_MS + 60_000);
      expect(stack.control.job(jobId)).toMatchObject({ expired: true, removedReason: 'expired' });
      allowRetries();

      const failure = await failureOf(awaitJob(stack.client, { job: handle }));
      expect(failure?.type).toBe('JobExpired');
      expect(failure?.details).toMatchObject({ expired: 'results', jobId, jobIds: [jobId], retries: 0 });
      // Refused, not retried: the emulator saw one run and no retry; nothing was submitted again.
      expect(stack.control.job(jobId)).toMatchObject({ attempts: 1, retries: 0 });
      expect(stack.control.submissions(endpointId)).toBe(1);
      // The answer that ended it came to a /retry that had been refused before (503) and retried.
      const { attempt, lastFailure } = await retryAttempts(handle.workflowId);
      expect(attempt).toBeGreaterThanOrEqual(2);
      expect(lastFailure).toContain('503');
    } finally {
      stack.control.resume();
    }
  });

  it("results expired before the retry (onExpired 'resubmit'): submitted afresh, up to maxSubmissions", async () => {
    const endpointId = stack.endpoint();
    stack.control.freeze();
    try {
      const handle = await stack.start({
        endpointId,
        request: { input: { sleepMs: 200, fail: 'flaky node' } },
        retry: { maxRetries: 2, initialInterval: 50 },
        onExpired: 'resubmit',
        maxSubmissions: 2,
        polling: FAST_POLLING,
      });
      for (const submissions of [1, 2]) {
        // The job is submitted; it cannot fail before the clock moves, so the refusal is in place first.
        await eventually(() => stack.control.submissions(endpointId) === submissions);
        const allowRetries = refuseRetries(endpointId);
        stack.control.advance(5_000 + 200); // a cold start, then the run: FAILED
        await stack.snapshotWhen(
          handle.workflowId,
          (s) => s.phase === 'retrying' && s.jobIds.length === submissions,
        );
        stack.control.advance(RETENTION_MS + 60_000);
        allowRetries();
      }

      const failure = await failureOf(awaitJob(stack.client, { job: handle }));
      expect(failure?.type).toBe('JobExpired');
      const jobIds = failure?.details?.jobIds ?? [];
      expect(jobIds).toHaveLength(2);
      expect(new Set(jobIds).size).toBe(2);
      expect(failure?.details).toMatchObject({ expired: 'results', submissions: 2 });
      expect(stack.control.submissions(endpointId)).toBe(2);
      for (const jobId of jobIds)
        expect(stack.control.job(jobId)).toMatchObject({ expired: true, retries: 0 });
    } finally {
      stack.control.resume();
    }
  });

  it("the ttl deletes the running job: /status answers 404 and the workflow ends JobExpired 'ttl'", async () => {
    const endpointId = stack.endpoint({ flashBootType: 'FLASHBOOT' });
    stack.control.freeze();
    let failure: Awaited<ReturnType<typeof failureOf>>;
    try {
      const handle = await stack.start({
        endpointId,
        // 10 s of ttl for a job that runs 10 minutes: deleted while it runs.
        request: { input: { sleepMs: 600_000 }, policy: { ttl: 10_000 } },
        retry: { maxRetries: 3, initialInterval: 50 },
        polling: FAST_POLLING,
      });
      // The clock moves past the ttl only once the workflow holds the job (and any lease is extended).
      await stack.snapshotWhen(handle.workflowId, (s) => s.jobId !== undefined && s.phase === 'waiting');
      stack.control.advance(10_001);
      failure = await failureOf(awaitJob(stack.client, { job: handle }));
    } finally {
      stack.control.resume();
    }

    expect(stack.control.jobs(endpointId)).toEqual([]); // gone from the endpoint
    const jobId = failure?.details?.jobId as string;
    expect(stack.control.job(jobId)).toMatchObject({ deleted: true, removedReason: 'ttl' });
    expect(failure?.type).toBe('JobExpired');
    expect(failure?.details).toMatchObject({ expired: 'ttl', jobIds: [jobId], submissions: 1 });
    expect(stack.control.submissions(endpointId)).toBe(1);
  });
});
