import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator, JobStatusValue } from '../../emulator';
import { type HttpResult, jobsApi, KEY, startTestEmulator } from './helpers';

// Many clients submitting, polling, cancelling and retrying at once on one endpoint. No job's state
// is ever corrupted: each ends as its own script says, with its own output, and the endpoint's
// /health counters always equal the states of its jobs.

const CLIENTS = 40;
const JOBS_PER_CLIENT = 12;
const WORKERS_MAX = 6;

let emulator: Emulator;
let endpointId: string;
let api: ReturnType<typeof jobsApi>;

/** A small deterministic generator, one per client, so a failure can be replayed. */
function dice(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/** Retries 429s after a short pause: the rate limits stay on and the clients honour them. */
async function polite(call: () => Promise<HttpResult>): Promise<HttpResult> {
  for (;;) {
    const result = await call();
    if (result.status !== 429) return result;
    await sleep(5);
  }
}

type Plan = 'complete' | 'fail' | 'cancel' | 'retry' | 'sync';

interface Outcome {
  id: string;
  plan: Plan;
  expected: { status: JobStatusValue; output?: unknown };
}

async function runClient(client: number): Promise<Outcome[]> {
  const roll = dice(client + 1);
  const plans: Plan[] = ['complete', 'complete', 'fail', 'cancel', 'retry', 'sync'];
  const outcomes: Outcome[] = [];
  for (let i = 0; i < JOBS_PER_CLIENT; i++) {
    const plan = plans[Math.floor(roll() * plans.length)]!;
    const output = { client, i };
    const sleepMs = Math.floor(roll() * 2000);
    if (plan === 'sync') {
      const result = await polite(() => api.runsync({ input: { sleepMs, output } }, '?wait=300000'));
      expect(result.body).toMatchObject({ status: 'COMPLETED', output });
      outcomes.push({ id: result.body.id, plan, expected: { status: 'COMPLETED', output } });
      continue;
    }
    const input =
      plan === 'fail'
        ? { sleepMs, fail: `client ${client} job ${i}` }
        : plan === 'cancel'
          ? { hang: true }
          : plan === 'retry'
            ? { sleepMs, failTimes: 1, output }
            : { sleepMs, output };
    const submitted = await polite(() => api.run({ input }));
    expect(submitted.status).toBe(200);
    const id: string = submitted.body.id;
    if (plan === 'cancel') {
      await sleep(Math.floor(roll() * 20));
      const cancelled = await polite(() => api.cancel(id));
      expect(cancelled.body).toEqual({ id, status: 'CANCELLED' });
      outcomes.push({ id, plan, expected: { status: 'CANCELLED' } });
      continue;
    }
    let status = await poll(id);
    if (plan === 'retry') {
      expect(status).toBe('FAILED');
      expect((await polite(() => api.retry(id))).body).toEqual({ id, status: 'IN_QUEUE' });
      status = await poll(id);
    }
    outcomes.push({
      id,
      plan,
      expected: plan === 'fail' ? { status: 'FAILED' } : { status: 'COMPLETED', output },
    });
    expect(status).toBe(outcomes.at(-1)!.expected.status);
  }
  return outcomes;
}

async function poll(id: string): Promise<JobStatusValue> {
  for (;;) {
    const result = await polite(() => api.status(id));
    expect(result.status).toBe(200);
    const status = result.body.status as JobStatusValue;
    if (status !== 'IN_QUEUE' && status !== 'IN_PROGRESS') return status;
    await sleep(1);
  }
}

/** The counters /health must show for a set of job states. */
function countsOf(states: JobStatusValue[], retried: number) {
  const count = (...wanted: JobStatusValue[]) => states.filter((s) => wanted.includes(s)).length;
  return {
    completed: count('COMPLETED'),
    failed: count('FAILED', 'TIMED_OUT'),
    inProgress: count('IN_PROGRESS'),
    inQueue: count('IN_QUEUE'),
    retried,
  };
}

function checkInvariant(samples: {
  violations: string[];
  maxWorkers: number;
  maxQueued: number;
  count: number;
}) {
  // Synchronous: the two readings see the same instant of the emulator.
  const health = emulator.control.health(endpointId);
  const jobs = emulator.control.jobs(endpointId);
  const expected = countsOf(
    jobs.map((j) => j.status),
    jobs.filter((j) => j.retries > 0).length,
  );
  if (JSON.stringify(health.jobs) !== JSON.stringify(expected)) {
    samples.violations.push(`${JSON.stringify(health.jobs)} != ${JSON.stringify(expected)}`);
  }
  const { idle, running, initializing } = health.workers;
  samples.maxWorkers = Math.max(samples.maxWorkers, idle + running + initializing);
  samples.maxQueued = Math.max(samples.maxQueued, expected.inQueue);
  samples.count++;
  if (running !== expected.inProgress)
    samples.violations.push(`running ${running} != inProgress ${expected.inProgress}`);
}

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 50 });
  endpointId = emulator.control.createEndpoint(KEY, {
    name: 'concurrency',
    templateId: 'scripted',
    workersMin: 2,
    workersMax: WORKERS_MAX,
    flashBootType: 'FLASHBOOT',
  }).id;
  api = jobsApi(emulator, endpointId);
});
afterAll(() => emulator.close());

describe('concurrency', () => {
  it(`${CLIENTS} clients x ${JOBS_PER_CLIENT} jobs: every job ends as scripted and /health always matches the jobs`, async () => {
    const samples = { violations: [] as string[], maxWorkers: 0, maxQueued: 0, count: 0 };
    let running = true;
    const monitor = (async () => {
      while (running) {
        checkInvariant(samples);
        await sleep(1);
      }
    })();

    const outcomes = (await Promise.all(Array.from({ length: CLIENTS }, (_, c) => runClient(c)))).flat();
    running = false;
    await monitor;
    checkInvariant(samples);

    expect(samples.violations).toEqual([]);
    expect(samples.maxWorkers).toBeLessThanOrEqual(WORKERS_MAX);
    // The check ran many times, and jobs really waited: 40 clients share 6 workers.
    expect(samples.count).toBeGreaterThan(10);
    expect(samples.maxQueued).toBeGreaterThan(0);
    expect(outcomes).toHaveLength(CLIENTS * JOBS_PER_CLIENT);
    expect(new Set(outcomes.map((o) => o.id)).size).toBe(outcomes.length);
    expect(emulator.control.submissions(endpointId)).toBe(outcomes.length);

    // Over HTTP at the end: every job's /status is its own. A job may have outlived its result
    // retention meanwhile (a minute for /runsync, about a real second at this scale on a loaded
    // machine): then /status answers 404 and the service's record says so and what it ended as.
    let expired = 0;
    for (const outcome of outcomes) {
      const status = await polite(() => api.status(outcome.id));
      const job = emulator.control.job(outcome.id);
      if (status.status === 404) {
        expect(job).toMatchObject({ expired: true, status: outcome.expected.status });
        expired++;
      } else {
        expect(status.body).toMatchObject(outcome.expected);
      }
      if (outcome.plan !== 'cancel') expect(job?.attempts).toBe(outcome.plan === 'retry' ? 2 : 1);
    }
    expect(expired).toBeLessThan(outcomes.length);
    // /health over HTTP counts exactly the jobs the service holds, read at the same service time.
    emulator.control.freeze();
    try {
      const health = await api.health();
      const jobs = emulator.control.jobs(endpointId);
      expect(health.body.jobs).toEqual(
        countsOf(
          jobs.map((job) => job.status),
          jobs.filter((job) => job.retries > 0).length,
        ),
      );
      expect(health.body.workers.running).toBe(0);
    } finally {
      emulator.control.resume();
    }
  });
});
