import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { jobsApi, KEY, MINUTE, startTestEmulator } from './helpers';

// The spec's "States and transitions" table, one row per test, over real HTTP. Service time is
// frozen (a tiny time scale) and moved with control.advance, so every boundary is exact.

let emulator: Emulator;
let counter = 0;

function endpoint(fields: { workersMax?: number; workersMin?: number; templateId?: string } = {}) {
  const state = emulator.control.createEndpoint(KEY, {
    name: `state-table-${++counter}`,
    templateId: fields.templateId ?? 'scripted',
    workersMin: fields.workersMin ?? 0,
    workersMax: fields.workersMax ?? 2,
    flashBootType: 'FLASHBOOT',
  });
  return { id: state.id, api: jobsApi(emulator, state.id) };
}

/** Fires what is due now (dispatch, cold start after `ms`). */
const advance = (ms = 0) => emulator.control.advance(ms);
const FLASHBOOT_MS = 500;

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6 });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('state table', () => {
  it('(none) -> IN_QUEUE: an accepted POST /run answers its id and IN_QUEUE', async () => {
    const { api } = endpoint();
    const submitted = await api.run({ input: { sleepMs: 1000 } });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}-u1$/), status: 'IN_QUEUE' });
    const status = await api.status(submitted.body.id);
    expect(status.body).toMatchObject({ id: submitted.body.id, status: 'IN_QUEUE', executionTime: 0 });
    expect(status.body.delayTime).toEqual(expect.any(Number));
  });

  it('IN_QUEUE -> CANCELLED: a queued job is removed before it starts and the answer is immediate', async () => {
    const { id, api } = endpoint({ workersMax: 1 });
    const busy = await api.run({ input: { hang: true } });
    advance(FLASHBOOT_MS);
    expect((await api.status(busy.body.id)).body.status).toBe('IN_PROGRESS');
    const queued = await api.run({ input: { output: 'never' } });
    expect((await api.health()).body.jobs.inQueue).toBe(1);

    const cancelled = await api.cancel(queued.body.id);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ id: queued.body.id, status: 'CANCELLED' });
    expect((await api.health()).body.jobs.inQueue).toBe(0);

    await api.cancel(busy.body.id);
    advance(MINUTE);
    expect((await api.status(queued.body.id)).body.status).toBe('CANCELLED');
    expect(emulator.control.job(queued.body.id)?.attempts).toBe(0);
    expect(emulator.control.jobs(id).every((job) => job.status === 'CANCELLED')).toBe(true);
  });

  it('IN_PROGRESS -> CANCELLED: the running job is stopped and never completes', async () => {
    const { api } = endpoint({ workersMax: 1 });
    const job = await api.run({ input: { sleepMs: 60_000, output: 'too late' } });
    advance(FLASHBOOT_MS);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    advance(10_000);

    expect((await api.cancel(job.body.id)).body).toEqual({ id: job.body.id, status: 'CANCELLED' });
    advance(2 * MINUTE);
    const status = await api.status(job.body.id);
    expect(status.body).toMatchObject({ status: 'CANCELLED', executionTime: 10_000 });
    expect(status.body.output).toBeUndefined();
    const health = (await api.health()).body;
    expect(health.workers.running).toBe(0);
    expect(health.jobs.inProgress).toBe(0);
  });

  it('FAILED -> IN_QUEUE by /retry: same id, original input, previous output removed', async () => {
    const { api } = endpoint({ workersMax: 1 });
    const input = { sleepMs: 10_000, progress: ['half way'], fail: 'boom', failTimes: 1, output: 'done' };
    const job = await api.run({ input });
    advance(FLASHBOOT_MS);
    advance(10_000);
    const failed = await api.status(job.body.id);
    expect(failed.body).toMatchObject({ status: 'FAILED', error: 'boom', output: 'half way' });

    // Keep the only worker busy so the retried job is seen waiting in the queue.
    const blocker = await api.run({ input: { hang: true } });
    advance(0);
    const retried = await api.retry(job.body.id);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ id: job.body.id, status: 'IN_QUEUE' });
    const queued = await api.status(job.body.id);
    expect(queued.body.status).toBe('IN_QUEUE');
    expect(queued.body).not.toHaveProperty('output');
    expect(queued.body).not.toHaveProperty('error');
    expect(emulator.control.job(job.body.id)?.input).toEqual(input);

    await api.cancel(blocker.body.id);
    advance(10_000);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', output: 'done' });
    expect(emulator.control.job(job.body.id)).toMatchObject({ attempts: 2, retries: 1 });
  });

  it('TIMED_OUT -> IN_QUEUE by /retry, and the retried run can complete', async () => {
    const { api } = endpoint();
    const job = await api.run({
      input: { timeoutTimes: 1, sleepMs: 1000, output: 'second time lucky' },
      policy: { executionTimeout: 5000 },
    });
    advance(FLASHBOOT_MS);
    advance(5000);
    const timedOut = await api.status(job.body.id);
    expect(timedOut.body).toMatchObject({ status: 'TIMED_OUT', executionTime: 5000 });

    expect((await api.retry(job.body.id)).body).toEqual({ id: job.body.id, status: 'IN_QUEUE' });
    advance(0);
    advance(1000);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      output: 'second time lucky',
    });
  });

  it('retry applies only to FAILED or TIMED_OUT jobs: IN_QUEUE, IN_PROGRESS, COMPLETED and CANCELLED answer 400', async () => {
    const { api } = endpoint({ workersMax: 1 });
    const running = await api.run({ input: { hang: true } });
    advance(FLASHBOOT_MS);
    const queued = await api.run({ input: {} });
    const cancelled = await api.run({ input: {} });
    await api.cancel(cancelled.body.id);
    expect((await api.retry(running.body.id)).status).toBe(400);
    expect((await api.retry(queued.body.id)).status).toBe(400);
    expect((await api.retry(cancelled.body.id)).status).toBe(400);

    await api.cancel(running.body.id);
    advance(0);
    expect((await api.status(queued.body.id)).body.status).toBe('COMPLETED');
    const completed = await api.retry(queued.body.id);
    expect(completed.status).toBe(400);
    expect(completed.body.error).toMatch(/only FAILED or TIMED_OUT/);
  });

  it('any state: when the ttl elapses the job is deleted and /status answers 404, even one that would have succeeded', async () => {
    const one = endpoint({ workersMax: 1 });
    const other = endpoint({ workersMax: 1 });
    const policy = { ttl: 10_000 };
    const running = await one.api.run({ input: { sleepMs: 15_000, output: 'would have succeeded' }, policy });
    const queued = await one.api.run({ input: {}, policy });
    const finished = await other.api.run({ input: {}, policy });
    advance(FLASHBOOT_MS);
    expect((await one.api.status(running.body.id)).body.status).toBe('IN_PROGRESS');
    expect((await one.api.status(queued.body.id)).body.status).toBe('IN_QUEUE');
    expect((await other.api.status(finished.body.id)).body.status).toBe('COMPLETED');

    advance(10_000 - FLASHBOOT_MS - 1);
    expect((await one.api.status(running.body.id)).status).toBe(200);
    advance(1);
    for (const [api, job] of [
      [one.api, running],
      [one.api, queued],
      [other.api, finished],
    ] as const) {
      const status = await api.status(job.body.id);
      expect(status.status).toBe(404);
      expect(status.body.error).toEqual(expect.any(String));
      expect(emulator.control.job(job.body.id)).toMatchObject({ deleted: true, removedReason: 'ttl' });
    }
    // Introspection: live listings drop them; with `removed` they are still there, with why they went.
    expect(emulator.control.jobs(one.id)).toEqual([]);
    const gone = emulator.control.jobs(one.id, { removed: true });
    expect(gone.map((job) => [job.id, job.removedReason])).toEqual([
      [running.body.id, 'ttl'],
      [queued.body.id, 'ttl'],
    ]);
    expect(gone[0]?.startedAt).toEqual(expect.any(Number));
    advance(MINUTE);
    expect((await one.api.status(running.body.id)).status).toBe(404);
    const empty = { completed: 0, failed: 0, inProgress: 0, inQueue: 0, retried: 0 };
    expect((await one.api.health()).body.jobs).toEqual(empty);
    expect((await other.api.health()).body.jobs).toEqual(empty);
  });

  it('the ttl counts queue time plus execution time from submission', async () => {
    const { api } = endpoint({ workersMax: 1 });
    const blocker = await api.run({ input: { sleepMs: 15_000 } });
    const job = await api.run({ input: { sleepMs: 10_000 }, policy: { ttl: 20_000 } });
    advance(FLASHBOOT_MS);
    advance(15_000);
    expect((await api.status(blocker.body.id)).body.status).toBe('COMPLETED');
    // Started 15.5 s after submission: 4.5 s of its 10 s run are left before the ttl.
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    advance(4000);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    advance(500);
    expect((await api.status(job.body.id)).status).toBe(404);
  });

  it('any finished state: after the result retention (30 min for /run) results are gone and the job cannot be retried', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { fail: 'nope' } });
    advance(FLASHBOOT_MS);
    expect((await api.status(job.body.id)).body.status).toBe('FAILED');
    advance(30 * MINUTE - 1);
    expect((await api.status(job.body.id)).status).toBe(200);
    advance(1);
    expect((await api.status(job.body.id)).status).toBe(404);
    expect((await api.retry(job.body.id)).status).toBe(404);
    expect(emulator.control.job(job.body.id)).toMatchObject({ expired: true, deleted: false });
  });

  it('POST /purge-queue removes every pending job; jobs already in progress keep running', async () => {
    const { api } = endpoint({ workersMax: 1 });
    const running = await api.run({ input: { sleepMs: 5000, output: 'kept' } });
    advance(FLASHBOOT_MS);
    const queued = await Promise.all([1, 2, 3].map(() => api.run({ input: {} })));
    const purged = await api.purge();
    expect(purged.status).toBe(200);
    expect(purged.body).toEqual({ removed: 3, status: 'completed' });
    for (const job of queued) expect((await api.status(job.body.id)).body.status).toBe('CANCELLED');
    expect((await api.status(running.body.id)).body.status).toBe('IN_PROGRESS');
    advance(5000);
    expect((await api.status(running.body.id)).body).toMatchObject({ status: 'COMPLETED', output: 'kept' });
    expect((await api.purge()).body).toEqual({ removed: 0, status: 'completed' });
  });

  it('/runsync answers the final status, with an id beginning sync-', async () => {
    const { api } = endpoint({ templateId: 'echo', workersMin: 1 });
    advance(FLASHBOOT_MS);
    const result = await api.runsync({ input: { hello: 'world' } });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      id: expect.stringMatching(/^sync-/),
      status: 'COMPLETED',
      output: { hello: 'world' },
      delayTime: 0,
      executionTime: 0,
    });
  });

  it('cancel of a job that already finished leaves it as it is', async () => {
    const { api } = endpoint({ templateId: 'echo' });
    const job = await api.run({ input: { a: 1 } });
    advance(FLASHBOOT_MS);
    expect((await api.cancel(job.body.id)).body).toEqual({ id: job.body.id, status: 'COMPLETED' });
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', output: { a: 1 } });
  });
});
