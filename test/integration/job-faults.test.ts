/**
 * The job workflow under the emulator's fault injection: 429 storms, 5xx answers, a lost submit
 * response. Real stack: dev server, emulator over HTTP, real worker, polling only (no webhook URL,
 * so an uncertain submit has no orphan webhook to wait for).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, jobFailureOf } from '../../client/jobs';
import { FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

describe('job workflow under injected faults (dev server, emulator over HTTP, real worker)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'job-faults', timeScale: 100 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** One raw call past the client (no 429 retries): the status code the emulator answers now. */
  async function probe(method: 'GET' | 'POST', path: string): Promise<number> {
    const response = await request(`${stack.emulator.apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    await response.body.dump();
    return response.statusCode;
  }

  /** The attempt and last failure of the history's first started activity of this type. */
  async function firstStart(workflowId: string, activityType: string) {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    const scheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
    );
    const started = events.find(
      (e) =>
        e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString(),
    )?.activityTaskStartedEventAttributes;
    return { attempt: started?.attempt ?? 0, lastFailure: started?.lastFailure?.message ?? '' };
  }

  it('a 429 storm on /run and /status: the job still completes, submitted exactly once', async () => {
    const endpointId = stack.endpoint();
    // Retry-After: 0, so the client's own jittered backoff paces the retries.
    stack.control.injectFault({
      operation: 'run',
      endpointId,
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 0,
      times: 3,
    });
    stack.control.injectFault({
      operation: 'status',
      endpointId,
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 0,
      times: 3,
    });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: 'through the storm' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'through the storm', submissions: 1, uncertainSubmits: 0 });
    expect(stack.control.submissions(endpointId)).toBe(1);
    expect(stack.control.jobs(endpointId)).toHaveLength(1);
    // The storm was spent on the workflow's calls: raw calls now pass the fault check (a /run
    // with no input is refused as a bad request, after the rate-limit check, and creates nothing).
    expect(await probe('GET', `/${endpointId}/status/${result.jobId}`)).toBe(200);
    expect(await probe('POST', `/${endpointId}/run`)).toBe(400);
    expect(stack.control.submissions(endpointId)).toBe(1);
  });

  it("a 429 storm that outlasts the client's retry budget: the workflow retries the submit itself", async () => {
    const endpointId = stack.endpoint();
    // Six 429s with Retry-After: 1 s. The client tries once and retries five times (its whole
    // budget, each wait at least the Retry-After), then gives up with RateLimited; the submit
    // activity fails certain-not-sent, and the workflow's own retry sends it again.
    stack.control.injectFault({
      operation: 'run',
      endpointId,
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 1,
      times: 6,
    });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: 'after the storm' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'after the storm', submissions: 1, uncertainSubmits: 0 });
    expect(stack.control.submissions(endpointId)).toBe(1);
    expect(stack.control.jobs(endpointId)).toHaveLength(1);
    // The storm is spent: all six 429s went to the workflow's calls.
    expect(await probe('POST', `/${endpointId}/run`)).toBe(400);

    // Two submit activities: the first failed RateLimited (with the Retry-After), the second made
    // the job; Temporal never retried either (each ran once), and a timer paced them.
    const events = (await handle.fetchHistory()).events ?? [];
    const submits = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitJob',
    );
    expect(submits).toHaveLength(2);
    const outcomeOf = (scheduled: (typeof submits)[number]) =>
      events.find(
        (e) =>
          (
            e.activityTaskFailedEventAttributes?.scheduledEventId ??
            e.activityTaskCompletedEventAttributes?.scheduledEventId
          )?.toString() === scheduled.eventId?.toString(),
      );
    const first = outcomeOf(submits[0]!)?.activityTaskFailedEventAttributes?.failure;
    expect(first?.applicationFailureInfo?.type).toBe('RateLimited');
    expect(first?.message).toContain('429');
    expect(outcomeOf(submits[1]!)?.activityTaskCompletedEventAttributes).toBeTruthy();
    const startsOf = (scheduled: (typeof submits)[number]) =>
      events.filter(
        (e) =>
          e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() ===
          scheduled.eventId?.toString(),
      );
    for (const scheduled of submits) {
      expect(startsOf(scheduled).map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
    }
    const between = events.filter(
      (e) =>
        Number(e.eventId) > Number(submits[0]?.eventId) &&
        Number(e.eventId) < Number(submits[1]?.eventId) &&
        e.timerStartedEventAttributes,
    );
    expect(between).toHaveLength(1);
  });

  it('5xx on /status and /retry: the job still completes, submitted exactly once', async () => {
    const endpointId = stack.endpoint();
    stack.control.injectFault({ operation: 'status', endpointId, kind: 'status', httpStatus: 500, times: 1 });
    stack.control.injectFault({ operation: 'retry', endpointId, kind: 'status', httpStatus: 502, times: 1 });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 500, failTimes: 1, output: 'recovered' } },
      retry: { maxRetries: 1, initialInterval: 50 },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'recovered', attempts: 2, retries: 1, submissions: 1 });
    expect(stack.control.submissions(endpointId)).toBe(1);
    expect(stack.control.job(result.jobId)).toMatchObject({ status: 'COMPLETED', attempts: 2, retries: 1 });
    // Temporal retried each failed call: the history's attempts carry the 5xx they got first.
    const poll = await firstStart(handle.workflowId, 'waitForJobChange');
    expect(poll.attempt).toBe(2);
    expect(poll.lastFailure).toContain('500');
    const retry = await firstStart(handle.workflowId, 'retryJob');
    expect(retry.attempt).toBe(2);
    expect(retry.lastFailure).toContain('502');
  });

  it("a lost submit response ('drop-after' on /run), onUncertainSubmit 'fail': SubmitUncertain, never sent twice", async () => {
    const endpointId = stack.endpoint();
    stack.control.injectFault({ operation: 'run', endpointId, kind: 'drop-after', times: 1 });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: 'orphan' } },
      onUncertainSubmit: 'fail',
      polling: FAST_POLLING,
    });
    const error = await awaitJob(stack.client, { job: handle }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const failure = jobFailureOf(error);

    expect(failure?.type).toBe('SubmitUncertain');
    expect(failure?.details).toMatchObject({ jobIds: [], submissions: 1, uncertainSubmits: 1 });
    // The service did create the job: an orphan the workflow never learned about, and no second one.
    expect(stack.control.submissions(endpointId)).toBe(1);
    const orphans = stack.control.jobs(endpointId);
    expect(orphans).toHaveLength(1);
    expect(failure?.details?.jobIds).not.toContain(orphans[0]?.id);
  });

  it("a 500 on /run counts as uncertain; onUncertainSubmit 'resubmit' sends it again and completes", async () => {
    const endpointId = stack.endpoint();
    // The emulator refuses before processing, but a client cannot know that from a 500.
    stack.control.injectFault({ operation: 'run', endpointId, kind: 'status', httpStatus: 500, times: 1 });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 500, output: 'second send' } },
      onUncertainSubmit: 'resubmit',
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'second send', submissions: 2, uncertainSubmits: 1 });
    expect(result.jobIds).toHaveLength(1);
    // Only the second request was accepted: one job on the service.
    expect(stack.control.submissions(endpointId)).toBe(1);
    expect(stack.control.jobs(endpointId).map((job) => job.id)).toEqual(result.jobIds);
  });
});
