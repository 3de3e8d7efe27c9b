/**
 * The job workflow's terminal outcomes on the real stack: the dev server, the emulator over HTTP,
 * the real API client and activities, the real worker (runWorker) with its webhook gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, getJobSnapshot, jobFailureOf } from '../../client/jobs';
import { LOOK_WEIGHT, lookTaskKey } from '../../contracts/task-priority';
import { signWebhookToken } from '../../worker/webhook-token';
import {
  eventually,
  FAST_POLLING,
  historyText,
  type JobStack,
  seenRunning,
  startJobStack,
} from '../support/integration';

/** What awaitJob threw, as the facade types it (undefined: it did not fail). */
async function failureOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeDefined();
  return jobFailureOf(error);
}

describe('job workflow outcomes (dev server, emulator over HTTP, real worker and gateway)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    // 5 s of executionTimeout is 50 ms here; Temporal's timers stay real.
    stack = await startJobStack({ name: 'job-outcomes', timeScale: 100, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('COMPLETED: returns the output, for one submission of one job', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 3_000, output: { answer: 42, words: ['a', 'b'] } } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const [job] = stack.control.jobs(endpointId);
    expect(result).toMatchObject({
      endpointId,
      jobId: job?.id,
      status: 'COMPLETED',
      output: { answer: 42, words: ['a', 'b'] },
      attempts: 1,
      retries: 0,
      submissions: 1,
      uncertainSubmits: 0,
      jobIds: [job?.id],
    });
    expect(job?.status).toBe('COMPLETED');
    expect(stack.control.submissions(endpointId)).toBe(1);
    const snapshot = await getJobSnapshot(stack.client, { workflowId: handle.workflowId });
    expect(snapshot).toMatchObject({ phase: 'completed', status: 'COMPLETED', jobId: job?.id });
  });

  it("schedules its looks under its endpoint's look key at its own priority, and its submit as its workflow", async () => {
    // Its webhook is lost, so polling ends it: a webhook that came first would leave no look.
    const removeFault = stack.control.webhookFaults({ lose: 1 });
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 3_000, output: { answer: 1 } } },
      polling: FAST_POLLING,
    });
    await awaitJob(stack.client, { job: handle }).finally(removeFault);
    const history = await handle.fetchHistory();
    const scheduled = new Map<string, { priorityKey: number; fairnessKey: string; fairnessWeight: number }>();
    for (const event of history.events ?? []) {
      const attributes = event.activityTaskScheduledEventAttributes;
      const name = attributes?.activityType?.name;
      const priority = attributes?.priority;
      if (name)
        scheduled.set(name, {
          priorityKey: priority?.priorityKey ?? 0,
          fairnessKey: priority?.fairnessKey ?? '',
          fairnessWeight: priority?.fairnessWeight ?? 0,
        });
    }
    // The dev server runs with fairness on (scripts/server-settings.ts): a backlog of looks gives
    // way to submits, one look in five, and to other endpoints' work. 0 or '' is the workflow's own.
    expect(scheduled.get('waitForJobChange')).toEqual({
      priorityKey: 0,
      fairnessKey: lookTaskKey(endpointId),
      fairnessWeight: LOOK_WEIGHT,
    });
    expect(scheduled.get('submitJob')).toEqual({ priorityKey: 0, fairnessKey: '', fairnessWeight: 0 });
    // The workflow itself runs under its endpoint's key.
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(started?.priority?.fairnessKey).toBe(endpointId);
  });

  it('FAILED: ends with JobFailed carrying the service error', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, fail: 'CUDA out of memory: tried to allocate 20 GiB' } },
      polling: FAST_POLLING,
    });
    const failure = await failureOf(awaitJob(stack.client, { job: handle }));

    const [job] = stack.control.jobs(endpointId);
    expect(job?.status).toBe('FAILED');
    expect(failure?.type).toBe('JobFailed');
    expect(failure?.message).toContain('CUDA out of memory: tried to allocate 20 GiB');
    expect(failure?.details).toMatchObject({
      endpointId,
      jobId: job?.id,
      status: 'FAILED',
      error: 'CUDA out of memory: tried to allocate 20 GiB',
      attempts: 1,
      retries: 0,
      submissions: 1,
    });
    expect(stack.control.submissions(endpointId)).toBe(1);
  });

  it('TIMED_OUT: ends with JobTimedOut', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { hang: true }, policy: { executionTimeout: 5_000 } },
      polling: FAST_POLLING,
    });
    const failure = await failureOf(awaitJob(stack.client, { job: handle }));

    const [job] = stack.control.jobs(endpointId);
    expect(job?.status).toBe('TIMED_OUT');
    expect(failure?.type).toBe('JobTimedOut');
    expect(failure?.details).toMatchObject({ jobId: job?.id, status: 'TIMED_OUT', attempts: 1 });
  });

  it('CANCELLED by someone else (POST /cancel behind its back): ends with JobCancelled', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      // A week of service time: at time scale 100 the default 10 minutes is 6 real seconds.
      request: { input: { hang: true }, policy: { executionTimeout: 604_800_000, ttl: 604_800_000 } },
      polling: FAST_POLLING,
    });
    const running = await stack.snapshotWhen(handle.workflowId, seenRunning);
    expect(running.phase).toBe('waiting');
    await stack.service.jobs.cancel(endpointId, running.jobId as string);

    const failure = await failureOf(awaitJob(stack.client, { job: handle }));
    expect(failure?.type).toBe('JobCancelled');
    expect(failure?.details).toMatchObject({ jobId: running.jobId, status: 'CANCELLED' });
    expect(stack.control.job(running.jobId as string)?.status).toBe('CANCELLED');
    // A cancellation from outside is a failure of the job, not a cancelled workflow.
    expect((await handle.describe()).status.name).toBe('FAILED');
  });

  it('neither the API key nor the webhook secret or token appears anywhere in the history', async () => {
    const endpointId = stack.endpoint();
    const marker = `marker-${Date.now()}`;
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: { marker } } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });
    expect(result.output).toEqual({ marker });

    const secret = stack.webhookSecret as string;
    // The job really carried this workflow's webhook URL and token, and the webhook came in.
    const job = stack.control.job(result.jobId);
    const url = new URL(job?.webhook ?? 'http://none');
    const expiresAt = Number(url.searchParams.get('exp'));
    const token = signWebhookToken(secret, handle.workflowId, { expiresAt });
    expect(url.searchParams.get('token')).toBe(token);
    await eventually(() =>
      stack.control.webhookDeliveries().some((d) => d.jobId === result.jobId && d.httpStatus === 200),
    );

    const history = await handle.fetchHistory();
    const text = historyText(history);
    // The decoded history does carry the job's input, output and id: the search below looks at payloads.
    expect(text).toContain(marker);
    expect(text).toContain(result.jobId);
    for (const secretValue of [stack.apiKey, secret, token]) {
      expect(text).not.toContain(secretValue);
      expect(text).not.toContain(Buffer.from(secretValue).toString('base64'));
    }
  });
});
