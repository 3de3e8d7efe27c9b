import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator, EndpointFields } from '../../emulator';
import { jobsApi, KEY, MINUTE, startTestEmulator } from './helpers';

// Workers and the queue: jobs really wait IN_QUEUE when no worker is free, workers scale between
// workersMin and workersMax, pay a cold start (shorter with FLASHBOOT), stop after idleTimeout, and
// lowPriority jobs never make the endpoint scale. Frozen clock, moved with advance.

let emulator: Emulator;
let counter = 0;
const COLD_START_MS = 5000;
const FLASHBOOT_MS = 500;

function endpoint(fields: Partial<EndpointFields> = {}) {
  const state = emulator.control.createEndpoint(KEY, {
    name: `scaling-${++counter}`,
    templateId: 'scripted',
    ...fields,
  });
  return { id: state.id, api: jobsApi(emulator, state.id) };
}
const advance = (ms = 0) => emulator.control.advance(ms);

beforeAll(async () => {
  emulator = await startTestEmulator({
    timeScale: 1e-6,
    coldStartMs: COLD_START_MS,
    flashBootMs: FLASHBOOT_MS,
  });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('queue and workers', () => {
  it('jobs wait IN_QUEUE while workersMax workers are busy, and start as soon as one is free', async () => {
    const { api } = endpoint({ workersMax: 2, flashBootType: 'FLASHBOOT' });
    const jobs = [];
    for (let i = 0; i < 3; i++) jobs.push((await api.run({ input: { hang: true } })).body.id as string);
    advance(FLASHBOOT_MS);
    advance(10 * MINUTE - FLASHBOOT_MS - 1);
    const statuses = await Promise.all(jobs.map(async (id) => (await api.status(id)).body.status));
    expect(statuses).toEqual(['IN_PROGRESS', 'IN_PROGRESS', 'IN_QUEUE']);
    expect((await api.health()).body).toMatchObject({
      jobs: { inQueue: 1, inProgress: 2 },
      workers: { running: 2, idle: 0, initializing: 0 },
    });

    await api.cancel(jobs[0]!);
    advance(0);
    const third = await api.status(jobs[2]!);
    expect(third.body.status).toBe('IN_PROGRESS');
    expect(third.body.delayTime).toBe(10 * MINUTE - 1);
  });

  it('with workersMax 0 a job stays IN_QUEUE (stuck in queue) and no worker starts', async () => {
    const { api } = endpoint({ workersMax: 0 });
    const job = await api.run({ input: {} });
    advance(60 * MINUTE);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'IN_QUEUE',
      delayTime: 60 * MINUTE,
    });
    expect((await api.health()).body.workers).toMatchObject({ idle: 0, running: 0, initializing: 0 });
  });

  it('never runs more than workersMax workers however many jobs wait', async () => {
    const { api } = endpoint({ workersMax: 3, flashBootType: 'FLASHBOOT' });
    await Promise.all(Array.from({ length: 10 }, () => api.run({ input: { sleepMs: 1000 } })));
    expect((await api.health()).body.workers.initializing).toBe(3);
    advance(FLASHBOOT_MS);
    expect((await api.health()).body).toMatchObject({
      jobs: { inQueue: 7, inProgress: 3 },
      workers: { running: 3 },
    });
    advance(1000);
    expect((await api.health()).body).toMatchObject({ jobs: { inQueue: 4, inProgress: 3, completed: 3 } });
    advance(3000);
    expect((await api.health()).body.jobs).toMatchObject({ inQueue: 0, inProgress: 0, completed: 10 });
  });
});

describe('cold start', () => {
  it('a job that starts a worker waits the cold start; with FLASHBOOT the shorter start', async () => {
    const cold = endpoint();
    const flash = endpoint({ flashBootType: 'FLASHBOOT' });
    const coldJob = await cold.api.run({ input: {} });
    const flashJob = await flash.api.run({ input: {} });
    expect((await cold.api.health()).body.workers.initializing).toBe(1);
    advance(FLASHBOOT_MS);
    expect((await flash.api.status(flashJob.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      delayTime: FLASHBOOT_MS,
    });
    expect((await cold.api.status(coldJob.body.id)).body.status).toBe('IN_QUEUE');
    advance(COLD_START_MS - FLASHBOOT_MS);
    expect((await cold.api.status(coldJob.body.id)).body).toMatchObject({
      status: 'COMPLETED',
      delayTime: COLD_START_MS,
    });
  });

  it('flashBootType OFF pays the full cold start', async () => {
    const { api } = endpoint({ flashBootType: 'OFF' });
    const job = await api.run({ input: {} });
    advance(COLD_START_MS);
    expect((await api.status(job.body.id)).body.delayTime).toBe(COLD_START_MS);
  });

  it('workersMin keeps warm workers: a job then waits no cold start', async () => {
    const { api } = endpoint({ workersMin: 1 });
    advance(COLD_START_MS);
    expect((await api.health()).body.workers).toMatchObject({ idle: 1, ready: 1 });
    const job = await api.run({ input: {} });
    advance(0);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', delayTime: 0 });
  });
});

describe('idle timeout', () => {
  it('stops a worker idleTimeout seconds after its last job; the next job pays a cold start again', async () => {
    const { api } = endpoint({ idleTimeout: 10, flashBootType: 'FLASHBOOT' });
    await api.run({ input: {} });
    advance(FLASHBOOT_MS);
    expect((await api.health()).body.workers).toMatchObject({ idle: 1, running: 0 });
    advance(10_000 - 1);
    expect((await api.health()).body.workers.idle).toBe(1);
    advance(1);
    expect((await api.health()).body.workers).toMatchObject({ idle: 0, running: 0, initializing: 0 });

    const next = await api.run({ input: {} });
    advance(FLASHBOOT_MS);
    expect((await api.status(next.body.id)).body.delayTime).toBe(FLASHBOOT_MS);
  });

  it('a worker that gets work before its idle timeout keeps running', async () => {
    const { api } = endpoint({ idleTimeout: 10, flashBootType: 'FLASHBOOT' });
    await api.run({ input: {} });
    advance(FLASHBOOT_MS);
    advance(9000);
    const job = await api.run({ input: { sleepMs: 5000 } });
    advance(0);
    advance(2000);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    expect((await api.health()).body.workers.running).toBe(1);
  });

  it('never goes below workersMin', async () => {
    const { api } = endpoint({ workersMin: 1, idleTimeout: 1, flashBootType: 'FLASHBOOT' });
    advance(FLASHBOOT_MS);
    advance(60 * MINUTE);
    expect((await api.health()).body.workers.idle).toBe(1);
  });
});

describe('lowPriority', () => {
  it('a lowPriority job does not make a scaled-to-zero endpoint start a worker', async () => {
    const { api } = endpoint({ flashBootType: 'FLASHBOOT' });
    const low = await api.run({ input: {}, policy: { lowPriority: true } });
    expect((await api.health()).body.workers).toMatchObject({ initializing: 0, idle: 0, running: 0 });
    advance(60 * MINUTE);
    expect((await api.status(low.body.id)).body.status).toBe('IN_QUEUE');

    // A normal job scales the endpoint; the queue is served in order, so the low one runs too.
    const normal = await api.run({ input: {} });
    expect((await api.health()).body.workers.initializing).toBe(1);
    advance(FLASHBOOT_MS);
    advance(FLASHBOOT_MS);
    expect((await api.status(low.body.id)).body.status).toBe('COMPLETED');
    expect((await api.status(normal.body.id)).body.status).toBe('COMPLETED');
  });

  it('lowPriority jobs wait for busy workers instead of adding one, while a normal job adds one', async () => {
    const { api } = endpoint({ workersMin: 1, workersMax: 3, flashBootType: 'FLASHBOOT' });
    advance(FLASHBOOT_MS);
    await api.run({ input: { hang: true } });
    advance(0);
    await api.run({ input: {}, policy: { lowPriority: true } });
    await api.run({ input: {}, policy: { lowPriority: true } });
    expect((await api.health()).body).toMatchObject({
      jobs: { inQueue: 2, inProgress: 1 },
      workers: { running: 1, initializing: 0 },
    });
    await api.run({ input: {} });
    expect((await api.health()).body.workers.initializing).toBe(1);
  });
});

describe('changing the scaling bounds', () => {
  it('raising workersMin starts workers; lowering workersMax stops idle ones', async () => {
    const { id, api } = endpoint({ flashBootType: 'FLASHBOOT', workersMax: 5 });
    emulator.control.updateEndpoint(id, { workersMin: 4 });
    expect((await api.health()).body.workers.initializing).toBe(4);
    advance(FLASHBOOT_MS);
    expect((await api.health()).body.workers.idle).toBe(4);
    emulator.control.updateEndpoint(id, { workersMin: 0, workersMax: 1 });
    expect((await api.health()).body.workers.idle).toBe(1);
    expect(emulator.control.endpoints(KEY).find((e) => e.id === id)?.workers).toEqual({
      initializing: 0,
      idle: 1,
      running: 0,
      throttled: 0,
    });
  });
});
