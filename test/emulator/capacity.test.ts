import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator, EndpointFields } from '../../emulator';
import { jobsApi, KEY, MINUTE, startTestEmulator } from './helpers';

// Capacity: an endpoint the service gives no workers for a while (starved), and the `oom` handler
// that runs out of GPU memory on a chosen share of inputs. Frozen clock, moved with advance.

let emulator: Emulator;
let counter = 0;
const COLD_START_MS = 5000;
const FLASHBOOT_MS = 500;

function endpoint(fields: Partial<EndpointFields> = {}, target: Emulator = emulator) {
  const state = target.control.createEndpoint(KEY, {
    name: `capacity-${++counter}`,
    templateId: 'scripted',
    flashBootType: 'FLASHBOOT',
    ...fields,
  });
  return { id: state.id, api: jobsApi(target, state.id) };
}
const advance = (ms = 0) => emulator.control.advance(ms);
const control = () => emulator.control;

beforeAll(async () => {
  emulator = await startTestEmulator({
    coldStartMs: COLD_START_MS,
    flashBootMs: FLASHBOOT_MS,
    rateLimits: false,
  });
  emulator.control.freeze();
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('a starved endpoint', () => {
  it('keeps its jobs IN_QUEUE, and /health counts the workers it wants as throttled, none idle or ready', async () => {
    const { id, api } = endpoint({ workersMax: 2 });
    expect(control().starveEndpoint(id).starved).toEqual({ until: null });
    const jobs = [];
    for (let i = 0; i < 3; i++) jobs.push((await api.run({ input: { i } })).body.id as string);
    advance(0);
    advance(60 * MINUTE);

    for (const job of jobs) {
      expect((await api.status(job)).body).toMatchObject({ status: 'IN_QUEUE', delayTime: 60 * MINUTE });
    }
    expect((await api.health()).body).toEqual({
      jobs: { completed: 0, failed: 0, inProgress: 0, inQueue: 3, retried: 0 },
      workers: { idle: 0, initializing: 0, ready: 0, running: 0, throttled: 2, unhealthy: 0 },
    });
  });

  it('takes its warm workers away at once; a restore cold-starts them', async () => {
    const { id, api } = endpoint({ workersMin: 1, flashBootType: 'OFF' });
    advance(COLD_START_MS);
    expect((await api.health()).body.workers).toMatchObject({ idle: 1, ready: 1, throttled: 0 });

    control().starveEndpoint(id);
    expect((await api.health()).body.workers).toMatchObject({ idle: 0, ready: 0, throttled: 1 });

    control().restoreEndpoint(id);
    expect((await api.health()).body.workers).toMatchObject({ initializing: 1, idle: 0, throttled: 0 });
    const job = await api.run({ input: {} });
    advance(COLD_START_MS);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      delayTime: COLD_START_MS,
    });
  });

  it('after a restore, its queued jobs run in the order they were submitted', async () => {
    const { id, api } = endpoint({ workersMax: 1 });
    control().starveEndpoint(id);
    const jobs = [];
    for (let i = 0; i < 3; i++) {
      jobs.push((await api.run({ input: { sleepMs: 1000, output: i } })).body.id as string);
    }
    advance(10 * MINUTE);
    expect(control().restoreEndpoint(id).starved).toBeNull();
    advance(FLASHBOOT_MS);
    expect((await api.status(jobs[0]!)).body).toMatchObject({
      status: 'IN_PROGRESS',
      delayTime: 10 * MINUTE + FLASHBOOT_MS,
    });
    expect((await api.status(jobs[1]!)).body.status).toBe('IN_QUEUE');
    advance(3000);

    const runs = jobs.map((job) => control().job(job)!);
    expect(runs.map((run) => [run.status, run.output])).toEqual([
      ['COMPLETED', 0],
      ['COMPLETED', 1],
      ['COMPLETED', 2],
    ]);
    const starts = runs.map((run) => run.startedAt!);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(new Set(starts).size).toBe(3);
  });

  it('ends by itself at `until` on the service clock', async () => {
    const { id, api } = endpoint();
    const until = control().now() + 5 * MINUTE;
    expect(control().starveEndpoint(id, { until }).starved).toEqual({ until });
    const job = await api.run({ input: {} });
    advance(5 * MINUTE - 1);
    expect((await api.status(job.body.id)).body.status).toBe('IN_QUEUE');
    expect((await api.health()).body.workers.throttled).toBe(1);
    advance(1);
    expect((await api.health()).body.workers).toMatchObject({ initializing: 1, throttled: 0 });
    advance(FLASHBOOT_MS);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      delayTime: 5 * MINUTE + FLASHBOOT_MS,
    });
    expect(
      control()
        .endpoints()
        .find((state) => state.id === id)?.starved,
    ).toBeNull();
  });

  it('lets running jobs finish; their workers then take no other job', async () => {
    const { id, api } = endpoint({ workersMax: 1 });
    const running = await api.run({ input: { sleepMs: 10_000, output: 'done' } });
    advance(FLASHBOOT_MS);
    expect((await api.status(running.body.id)).body.status).toBe('IN_PROGRESS');

    control().starveEndpoint(id);
    const queued = await api.run({ input: {} });
    expect((await api.health()).body.workers).toMatchObject({ running: 1, ready: 0, idle: 0 });
    advance(10_000);
    expect((await api.status(running.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      executionTime: 10_000,
      output: 'done',
    });
    advance(MINUTE);
    expect((await api.status(queued.body.id)).body.status).toBe('IN_QUEUE');
    expect((await api.health()).body.workers).toMatchObject({ running: 0, idle: 0, throttled: 1 });
  });

  it('cancels a queued job from IN_QUEUE: CANCELLED, and it never runs', async () => {
    const { id, api } = endpoint();
    control().starveEndpoint(id);
    const job = await api.run({ input: { sleepMs: 1000 } });
    advance(MINUTE);
    expect((await api.cancel(job.body.id)).body).toEqual({ id: job.body.id, status: 'CANCELLED' });

    control().restoreEndpoint(id);
    advance(FLASHBOOT_MS);
    advance(10_000);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'CANCELLED', executionTime: 0 });
    const state = control().job(job.body.id)!;
    expect(state).toMatchObject({ status: 'CANCELLED', attempts: 0, startedAt: undefined });
    expect((await api.health()).body.jobs).toMatchObject({ inQueue: 0, inProgress: 0, completed: 0 });
  });

  it('refuses an `until` already past, naming the field', () => {
    const { id } = endpoint();
    expect(() => control().starveEndpoint(id, { until: control().now() })).toThrow(
      /invalid starvation: until: until must be later than the emulator's now/,
    );
    expect(() => control().starveEndpoint('nope')).toThrow(/endpoint nope not found/);
  });
});

describe('the oom handler', () => {
  async function runAll(target: Emulator, endpointId: string, inputs: Record<string, unknown>[]) {
    const api = jobsApi(target, endpointId);
    const ids = await Promise.all(inputs.map(async (input) => (await api.run({ input })).body.id as string));
    target.control.advance(FLASHBOOT_MS);
    target.control.advance(0);
    return Promise.all(ids.map(async (id) => (await api.status(id)).body));
  }
  const failedIndexes = (bodies: { status: string }[]) =>
    bodies.flatMap((body, i) => (body.status === 'FAILED' ? [i] : []));
  const inputs = (extra: Record<string, unknown>, count = 400) =>
    Array.from({ length: count }, (_, i) => ({ item: i, ...extra }));

  it('fails about the share asked with a CUDA out-of-memory error; the others complete', async () => {
    const { id } = endpoint({ templateId: 'oom', workersMax: 400, gpuIds: 'AMPERE_24' });
    const bodies = await runAll(emulator, id, inputs({ oomShare: 0.3 }));
    const failed = failedIndexes(bodies);
    expect(failed.length / bodies.length).toBeGreaterThan(0.25);
    expect(failed.length / bodies.length).toBeLessThan(0.35);
    for (const i of failed) {
      expect(bodies[i].error).toMatch(/^torch\.OutOfMemoryError: CUDA out of memory\./);
      expect(bodies[i].error).toContain('total capacity of 23.64 GiB');
    }
    const completed = bodies.filter((body) => body.status === 'COMPLETED');
    expect(completed.length + failed.length).toBe(bodies.length);
    expect(completed[0].output).toMatchObject({ oomShare: 0.3 });
  });

  it('fails the same inputs on every run (another emulator, a retry); another seed picks others', async () => {
    const first = await runAll(
      emulator,
      endpoint({ templateId: 'oom', workersMax: 400 }).id,
      inputs({ oomShare: 0.3 }, 200),
    );
    const other = await startTestEmulator({ flashBootMs: FLASHBOOT_MS, rateLimits: false });
    try {
      other.control.freeze();
      const again = await runAll(
        other,
        endpoint({ templateId: 'oom', workersMax: 400 }, other).id,
        inputs({ oomShare: 0.3 }, 200),
      );
      expect(failedIndexes(again)).toEqual(failedIndexes(first));
    } finally {
      await other.close();
    }

    const wider = await runAll(
      emulator,
      endpoint({ templateId: 'oom', workersMax: 400 }).id,
      inputs({ oomShare: 0.6 }, 200),
    );
    expect(failedIndexes(wider)).toEqual(expect.arrayContaining(failedIndexes(first)));
    const seeded = await runAll(
      emulator,
      endpoint({ templateId: 'oom', workersMax: 400 }).id,
      inputs({ oomShare: 0.3, oomSeed: 'another' }, 200),
    );
    expect(failedIndexes(seeded)).not.toEqual(failedIndexes(first));

    const { api } = endpoint({ templateId: 'oom' });
    const job = await api.run({ input: { oomShare: 1 } });
    advance(FLASHBOOT_MS);
    expect((await api.status(job.body.id)).body.status).toBe('FAILED');
    expect((await api.retry(job.body.id)).status).toBe(200);
    advance(0);
    expect(control().job(job.body.id)).toMatchObject({ status: 'FAILED', attempts: 2 });
  });

  it('rejects a share outside 0..1, naming the field', async () => {
    const { api } = endpoint({ templateId: 'oom' });
    const job = await api.run({ input: { oomShare: 1.5 } });
    advance(FLASHBOOT_MS);
    const body = (await api.status(job.body.id)).body;
    expect(body.status).toBe('FAILED');
    expect(body.error).toMatch(/^input rejected by the oom handler: oomShare: /);
  });
});
