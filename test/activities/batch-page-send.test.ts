/**
 * A batch page under its endpoint's gate (submitBatchPage's `send`): it sends what the gate grants
 * and no more, at most `concurrent` requests out at once, and an item whose turn comes after its
 * grant's sendBy is not sent but answered as unsent; and the /run limit stageBatchItems reads from
 * the client.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BatchActivityDeps, createBatchActivities } from '../../activities/batch';
import type { AskToSend } from '../../activities/send-grant';
import type { ServiceClient } from '../../api/client';
import type { RateLimit } from '../../api/rate-limit';
import type { JobRequestInput, JobSubmitted } from '../../api/schemas/job';
import type { PageSend } from '../../contracts/batch-types';
import type { SendAsk } from '../../contracts/endpoint-gate';
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
      // The beat before each try (activities/submit-beat.ts) is the submit's own: kept out of sight.
      const { beforeSend: _beforeSend, ...options } = callOptions ?? {};
      calls.push({
        endpointId,
        request,
        options,
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

/** A client whose /run is `run` and whose /run limit is `perTenSeconds` (the gate holds it). */
function limitedClient(run: Run, perTenSeconds = 100) {
  return clientWith(run, (operation) => (operation === 'run' ? { perTenSeconds } : undefined));
}

/** A gate that grants `count` (or everything asked) at the current time, and keeps the asks. */
function fakeGate(count?: number) {
  const asks: Omit<SendAsk, 'id'>[] = [];
  const ask: AskToSend = async (sent) => {
    asks.push(sent);
    const now = Date.now();
    return { count: count ?? sent.count, at: now, sendBy: now + 500 };
  };
  return { asks, ask };
}

/** Batch activities with this client and gate. */
function gatedActivities(client: BatchActivityDeps['client'], gate: ReturnType<typeof fakeGate>) {
  return createBatchActivities({
    client,
    resultStoreDir: tempDir('batch-page-send'),
    askToSend: gate.ask,
  });
}

describe("submitBatchPage under its endpoint's gate", () => {
  beforeEach(() => {
    // Date stands still unless a test moves it: a grant's sendBy is passed exactly when the test says.
    vi.useFakeTimers({ toFake: ['Date'] });
  });

  it('asks the gate for the page with its priority and fairness key, sends what it grants, and the rest comes back unsent', async () => {
    const runs = heldRuns({ auto: true });
    const gate = fakeGate(2);
    const activities = gatedActivities(limitedClient(runs.run, 40), gate);
    const manifestKey = await stage(activities, 4);
    const answer = await page(activities, manifestKey, [0, 1, 2, 3], {
      concurrent: 4,
      scheduling: { priority: 1, fairnessKey: 'tenant-a', fairnessWeight: 2 },
    });
    expect(gate.asks).toEqual([
      { endpointId: 'ep-1', count: 4, limit: 40, priority: 1, fairnessKey: 'tenant-a', fairnessWeight: 2 },
    ]);
    expect(runs.calls.map((call) => (call.request.input as { n: number }).n)).toEqual([0, 1]);
    expect(answer.results).toEqual([
      { i: 0, id: 'job-0' },
      { i: 1, id: 'job-1' },
    ]);
    expect(answer.unsent).toEqual([2, 3]);
  });

  it('sends nothing when the gate grants nothing: every item comes back unsent', async () => {
    const runs = heldRuns({ auto: true });
    const activities = gatedActivities(limitedClient(runs.run), fakeGate(0));
    const manifestKey = await stage(activities, 3);
    const answer = await page(activities, manifestKey, [0, 1, 2], { concurrent: 3, scheduling: {} });
    expect(runs.calls).toEqual([]);
    expect(answer).toEqual({ results: [], unsent: [0, 1, 2] });
  });

  it('asks no gate when the client keeps no /run rate: all of the page goes', async () => {
    const runs = heldRuns({ auto: true });
    const gate = fakeGate(0);
    const activities = gatedActivities(clientWith(runs.run), gate);
    const manifestKey = await stage(activities, 2);
    const answer = await page(activities, manifestKey, [0, 1], { concurrent: 2, scheduling: {} });
    expect(gate.asks).toEqual([]);
    expect(answer.results).toHaveLength(2);
    expect(runs.calls.map((call) => call.options)).toEqual([{}, {}]);
  });

  it('keeps at most `concurrent` runs out at once, and every item gets its job', async () => {
    const runs = heldRuns();
    const activities = gatedActivities(limitedClient(runs.run), fakeGate());
    const manifestKey = await stage(activities, 5);
    const sendBy = Date.now() + 500;
    const answer = page(activities, manifestKey, range(5), { concurrent: 2, scheduling: {} });
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
    // Each request carries its grant's deadline, for the client's own limiter to keep.
    expect(runs.calls.map((call) => call.options)).toEqual(range(5).map(() => ({ sendBy })));
    expect(runs.calls.map((call) => call.endpointId)).toEqual(range(5).map(() => 'ep-1'));
  });

  it("counts as unsent an item whose turn came after its grant's sendBy: the client refuses to send it", async () => {
    const runs = heldRuns();
    const activities = gatedActivities(limitedClient(keepingSendBy(runs.run)), fakeGate());
    const manifestKey = await stage(activities, 2);
    const now = Date.now();
    const answer = page(activities, manifestKey, [0, 1], { concurrent: 1, scheduling: {} });
    await runs.arrived(1);
    // The first run is still out when the grant's time to send ends: the second's turn comes too late.
    vi.setSystemTime(now + 501);
    runs.calls[0]?.answer();
    const { results, unsent } = await answer;
    expect(results).toEqual([{ i: 0, id: 'job-0' }]);
    expect(unsent).toEqual([1]);
    expect(runs.calls).toHaveLength(1);
  });

  it("counts as unsent an item the client's limiter held past sendBy (an Aborted error that never reached the service)", async () => {
    const runs = heldRuns();
    const activities = gatedActivities(limitedClient(runs.run), fakeGate());
    const manifestKey = await stage(activities, 2);
    const now = Date.now();
    const answer = page(activities, manifestKey, [0, 1], { concurrent: 2, scheduling: {} });
    await runs.arrived(2);
    vi.setSystemTime(now + 501);
    runs.calls[0]?.answer();
    runs.calls[1]?.fail(notSent());
    const { results, unsent } = await answer;
    expect(results).toEqual([{ i: 0, id: 'job-0' }]);
    expect(unsent).toEqual([1]);
  });

  it('before sendBy, the same error is a plain refusal, as without a gate', async () => {
    const runs = heldRuns();
    const activities = gatedActivities(limitedClient(runs.run), fakeGate());
    const manifestKey = await stage(activities, 1);
    const answer = page(activities, manifestKey, [0], { concurrent: 1, scheduling: {} });
    await runs.arrived(1);
    runs.calls[0]?.fail(notSent());
    const { results, unsent } = await answer;
    expect(results).toEqual([
      { i: 0, rejected: { type: 'Aborted', message: 'Aborted happened', retryable: true } },
    ]);
    expect(unsent).toBeUndefined();
  });

  it('counts as unsent an item the server recorded no beat before (the attempt may be over): nothing goes', async () => {
    const stub = stubClient();
    stub.answer('run', { id: 'job-0', status: 'IN_QUEUE' });
    // The page's first beat is recorded; its items' turns come more than a second later, when
    // the server refuses beats.
    const later: Run = (endpointId, request, callOptions) => {
      vi.setSystemTime(Date.now() + 2_000);
      return stub.client.jobs.run(endpointId, request, callOptions);
    };
    const activities = activitiesWith(clientWith(later));
    const manifestKey = await stage(activities, 2);
    vi.useFakeTimers({ toFake: ['Date'] });
    const env = activityEnv({ startToCloseTimeoutMs: 60_000 }, new Error('activity not found'), 1);
    const { results, unsent } = await page(
      activities,
      manifestKey,
      [0, 1],
      { concurrent: 2, scheduling: {} },
      env,
    );
    expect(results).toEqual([]);
    expect(unsent).toEqual([0, 1]);
    expect(stub.named('run')).toHaveLength(0);
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
