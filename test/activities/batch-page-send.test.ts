/**
 * A batch page's share of the endpoint's /run limit (submitBatchPage's `send`): nothing goes out
 * before `at`, at most `concurrent` requests are out at once, and an item whose turn comes after
 * `by` is not sent but answered as unsent; and the /run limit stageBatchItems reads from the client.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BatchActivityDeps, createBatchActivities } from '../../activities/batch';
import type { ServiceClient } from '../../api/client';
import type { RateLimit } from '../../api/rate-limit';
import type { JobRequestInput, JobSubmitted } from '../../api/schemas/job';
import type { PageSend } from '../../contracts/batch-input';
import { tempDir } from '../support/temp-dir';
import { activityEnv, serviceError, stubClient } from './job-stub';

type Run = ServiceClient['jobs']['run'];

interface HeldRun {
  endpointId: string;
  request: JobRequestInput;
  options: Parameters<Run>[2];
  /** Answers with the job `job-<n>` (n: the item's input). */
  answer(): void;
  fail(error: Error): void;
}

/**
 * A /run whose answers the test gives: every call waits until `answer` or `fail` (or is answered
 * at once with `auto`), and the calls in flight are counted.
 */
function heldRuns(options: { auto?: boolean } = {}) {
  const calls: HeldRun[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let inFlight = 0;
  const state = { maxInFlight: 0 };
  const run: Run = (endpointId, request, callOptions) => {
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    const answered = new Promise<JobSubmitted>((resolve, reject) => {
      const id = `job-${(request.input as { n: number }).n}`;
      calls.push({
        endpointId,
        request,
        options: callOptions,
        answer: () => resolve({ id, status: 'IN_QUEUE' }),
        fail: reject,
      });
    }).finally(() => {
      inFlight--;
    });
    for (const waiter of [...waiters]) {
      if (calls.length < waiter.count) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (options.auto) calls.at(-1)?.answer();
    return answered;
  };
  return {
    run,
    calls,
    inFlight: () => inFlight,
    get maxInFlight() {
      return state.maxInFlight;
    },
    /** Resolves once `count` calls have been made (an event, not a poll). */
    arrived(count: number): Promise<void> {
      if (calls.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

/** Batch activities on a fresh local store with this client. */
function activitiesWith(client: BatchActivityDeps['client']) {
  return createBatchActivities({ client, resultStoreDir: tempDir('batch-page-send') });
}

/** A client whose /run is `run`; its other operations answer nothing (none is called here). */
function clientWith(run: Run, rateLimit?: (operation: string) => RateLimit | undefined) {
  const jobs = { ...stubClient().client.jobs, run };
  return rateLimit ? { jobs, rateLimit } : { jobs };
}

/** Stages `count` items ({ input: { n: i } }) and returns the manifest's key. */
async function stage(activities: ReturnType<typeof createBatchActivities>, count: number) {
  const inline = Array.from({ length: count }, (_, n) => ({ input: { n } }));
  const { manifestKey } = await activityEnv().call(activities.stageBatchItems, { items: { inline } });
  return manifestKey;
}

function page(
  activities: ReturnType<typeof createBatchActivities>,
  manifestKey: string,
  indexes: number[],
  send: PageSend,
  env = activityEnv(),
) {
  return env.call(activities.submitBatchPage, { endpointId: 'ep-1', manifestKey, indexes, send });
}

const range = (count: number) => Array.from({ length: count }, (_, i) => i);

/** What the client's transport throws for a call it did not send (api/http.ts). */
const notSent = () =>
  serviceError({ kind: 'Aborted', operation: 'run', retryable: true, mayHaveReachedService: false });

/**
 * `run` as the client's contract has it (CallOptions.sendBy, kept by its transport:
 * test/api/send-by.test.ts): a call whose time to be sent has passed fails unsent.
 */
const keepingSendBy =
  (run: Run): Run =>
  (endpointId, request, callOptions) =>
    callOptions?.sendBy !== undefined && Date.now() > callOptions.sendBy
      ? Promise.reject(notSent())
      : run(endpointId, request, callOptions);

describe('submitBatchPage with a send window', () => {
  beforeEach(() => {
    // Date stands still unless a test moves it: `by` is passed exactly when the test says.
    vi.useFakeTimers({ toFake: ['Date'] });
  });

  it('sends nothing when its time to send is already over: every item comes back unsent', async () => {
    const runs = heldRuns({ auto: true });
    const activities = activitiesWith(clientWith(keepingSendBy(runs.run)));
    const manifestKey = await stage(activities, 4);
    const now = Date.now();
    const answer = await page(activities, manifestKey, [0, 1, 2, 3], {
      at: now - 2_000,
      by: now - 1,
      concurrent: 2,
    });
    expect(runs.calls).toEqual([]);
    expect(answer.results).toEqual([]);
    expect([...(answer.unsent ?? [])].sort()).toEqual([0, 1, 2, 3]);
  });

  it('keeps at most `concurrent` runs out at once, and every item gets its job', async () => {
    const runs = heldRuns();
    const activities = activitiesWith(clientWith(runs.run));
    const manifestKey = await stage(activities, 5);
    const now = Date.now();
    const send = { at: now, by: now + 500, concurrent: 2 };
    const answer = page(activities, manifestKey, range(5), send);
    // Two runs go out; the other three wait for a slot (without the cap, all five would have been
    // called in the same turn as the second).
    await runs.arrived(2);
    expect(runs.calls).toHaveLength(2);
    // Each answer frees one slot for the next item: two out at every step, never three.
    for (let k = 0; k < 5; k++) {
      runs.calls[k]?.answer();
      if (k + 3 <= 5) {
        await runs.arrived(k + 3);
        expect(runs.calls).toHaveLength(k + 3);
        expect(runs.inFlight()).toBe(2);
      }
    }
    const { results, unsent } = await answer;
    expect(runs.maxInFlight).toBe(2);
    expect(results).toEqual(range(5).map((i) => ({ i, id: `job-${i}` })));
    expect(unsent).toBeUndefined();
    // Each request carries the page's deadline, for the client's own limiter to keep.
    expect(runs.calls.map((call) => call.options)).toEqual(range(5).map(() => ({ sendBy: send.by })));
    expect(runs.calls.map((call) => call.endpointId)).toEqual(range(5).map(() => 'ep-1'));
  });

  it('counts as unsent an item whose turn came after `by`: the client refuses to send it', async () => {
    const runs = heldRuns();
    const activities = activitiesWith(clientWith(keepingSendBy(runs.run)));
    const manifestKey = await stage(activities, 2);
    const now = Date.now();
    const answer = page(activities, manifestKey, [0, 1], { at: now, by: now + 500, concurrent: 1 });
    await runs.arrived(1);
    // The first run is still out when the page's time to send ends: the second's turn comes too late.
    vi.setSystemTime(now + 501);
    runs.calls[0]?.answer();
    const { results, unsent } = await answer;
    expect(results).toEqual([{ i: 0, id: 'job-0' }]);
    expect(unsent).toEqual([1]);
    expect(runs.calls).toHaveLength(1);
  });

  it("counts as unsent an item the client's limiter held past `by` (an Aborted error that never reached the service)", async () => {
    const runs = heldRuns();
    const activities = activitiesWith(clientWith(runs.run));
    const manifestKey = await stage(activities, 2);
    const now = Date.now();
    const answer = page(activities, manifestKey, [0, 1], { at: now, by: now + 500, concurrent: 2 });
    await runs.arrived(2);
    vi.setSystemTime(now + 501);
    runs.calls[0]?.answer();
    runs.calls[1]?.fail(notSent());
    const { results, unsent } = await answer;
    expect(results).toEqual([{ i: 0, id: 'job-0' }]);
    expect(unsent).toEqual([1]);
  });

  it('before `by`, the same error is a plain refusal, as without a send window', async () => {
    const runs = heldRuns();
    const activities = activitiesWith(clientWith(runs.run));
    const manifestKey = await stage(activities, 1);
    const now = Date.now();
    const answer = page(activities, manifestKey, [0], { at: now, by: now + 500, concurrent: 1 });
    await runs.arrived(1);
    runs.calls[0]?.fail(notSent());
    const { results, unsent } = await answer;
    expect(results).toEqual([
      { i: 0, rejected: { type: 'Aborted', message: 'Aborted happened', retryable: true } },
    ]);
    expect(unsent).toBeUndefined();
  });
});

/**
 * Until the page waits on a timer (its wait for `at`) or has sent something: turns of the event
 * loop, no time passing.
 */
async function untilTimerArmed(sent: () => boolean) {
  while (vi.getTimerCount() === 0 && !sent()) await new Promise((resolve) => setImmediate(resolve));
}

describe('submitBatchPage waiting for `at`', () => {
  it('sends nothing before `at`, beating to the server with nothing while it waits, and all of it then', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    const runs = heldRuns({ auto: true });
    const activities = activitiesWith(clientWith(runs.run));
    const manifestKey = await stage(activities, 3);
    const now = Date.now();
    const env = activityEnv();
    const answer = page(
      activities,
      manifestKey,
      [0, 1, 2],
      { at: now + 25_000, by: now + 25_500, concurrent: 3 },
      env,
    );
    await untilTimerArmed(() => runs.calls.length > 0);
    await vi.advanceTimersByTimeAsync(24_999);
    expect(runs.calls).toEqual([]);
    // Beats straight to the server while it waits (the heartbeat timeout's third, 10 s by default),
    // carrying no details: none of them may say requests are out.
    expect(env.beats).toEqual([undefined, undefined]);
    await vi.advanceTimersByTimeAsync(1);
    const { results, unsent } = await answer;
    expect(results).toEqual(range(3).map((i) => ({ i, id: `job-${i}` })));
    expect(unsent).toBeUndefined();
    // Then the one that says requests may be out, before the first is sent.
    expect(env.beats).toHaveLength(3);
    expect(env.beats[2]).toMatchObject({ sending: true });
  });
});

describe('stageBatchItems: the /run and /status limits', () => {
  const run: Run = () => Promise.reject(new Error('no run expected'));
  const staged = async (client: BatchActivityDeps['client']) =>
    activityEnv().call(activitiesWith(client).stageBatchItems, { items: { inline: [{ input: {} }] } });

  it("are the client's /run and /status limits", async () => {
    const asked: string[] = [];
    const client = clientWith(run, (operation) => {
      asked.push(operation);
      return operation === 'run'
        ? { perTenSeconds: 1000, concurrent: 200 }
        : { perTenSeconds: 2000, concurrent: 400 };
    });
    const limits = await staged(client);
    expect(limits.runLimit).toEqual({ perTenSeconds: 1000, concurrent: 200 });
    expect(limits.statusLimit).toEqual({ perTenSeconds: 2000, concurrent: 400 });
    expect(asked.sort()).toEqual(['run', 'status']);
  });

  it('holds no rate when the client keeps none (Infinity), only its concurrency', async () => {
    const client = clientWith(run, () => ({ perTenSeconds: Number.POSITIVE_INFINITY, concurrent: 5 }));
    expect((await staged(client)).runLimit).toEqual({ concurrent: 5 });
    const rateOnly = clientWith(run, () => ({ perTenSeconds: 50 }));
    expect((await staged(rateOnly)).runLimit).toEqual({ perTenSeconds: 50 });
  });

  it('is empty for a client without limits, or without rateLimit', async () => {
    expect((await staged(clientWith(run, () => undefined))).runLimit).toEqual({});
    expect((await staged(clientWith(run))).runLimit).toEqual({});
  });
});

describe('submitBatchPage under a submit lease', () => {
  it("leaves a long lease to the job's watcher (no /status in the submit) and extends a short one itself", async () => {
    const stub = stubClient();
    stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
    stub.answer('status', { id: 'job-1', status: 'IN_QUEUE' });
    const activities = createBatchActivities({
      client: stub.client,
      resultStoreDir: tempDir('batch-page-send'),
    });
    const manifestKey = await stage(activities, 1);
    const submit = (submitLease: number) =>
      activityEnv().call(activities.submitBatchPage, {
        endpointId: 'ep-1',
        manifestKey,
        indexes: [0],
        submitLease,
      });
    const long = await submit(60_000);
    expect(long.results[0]).toMatchObject({ i: 0, id: 'job-1', lease: 60_000 });
    expect(stub.named('status')).toEqual([]);
    const short = await submit(10_000);
    expect(short.results[0]).toMatchObject({ i: 0, id: 'job-1' });
    expect(short.results[0]).not.toHaveProperty('lease');
    expect(stub.named('status')).toHaveLength(1);
  });
});
