import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Emulator } from '../../emulator';
import { KEY, startTestEmulator, waitFor } from './helpers';

// The service's public JavaScript SDK (npm `runpod-sdk`), unchanged, pointed at the emulator through
// its `baseUrl` option: run, status, stream, cancel, health, purge-queue, runSync (/status-sync).

type Sdk = typeof import('runpod-sdk', { with: { 'resolution-mode': 'import' }});
type SdkEndpoint = NonNullable<ReturnType<ReturnType<Sdk['default']>['endpoint']>>;

let emulator: Emulator;
let sdk: Sdk;
let counter = 0;

function sdkEndpoint(
  templateId: string,
  fields: { workersMax?: number; workersMin?: number } = {},
): SdkEndpoint {
  const state = emulator.control.createEndpoint(KEY, {
    name: `sdk-${++counter}`,
    templateId,
    flashBootType: 'FLASHBOOT',
    workersMax: fields.workersMax ?? 2,
    workersMin: fields.workersMin ?? 0,
  });
  const endpoint = sdk.default(KEY, { baseUrl: emulator.apiUrl }).endpoint(state.id);
  if (!endpoint) throw new Error('the SDK gave no endpoint');
  return endpoint;
}

beforeAll(async () => {
  // The SDK is an ES module; the project compiles to CommonJS, so it is loaded with import().
  sdk = await import('runpod-sdk');
  emulator = await startTestEmulator({ timeScale: 1000, streamShape: 'object' });
  // runSync prints every poll; keep the test output readable.
  vi.spyOn(console, 'log').mockImplementation(() => undefined);
});
afterAll(async () => {
  vi.restoreAllMocks();
  await emulator.close();
});

describe('runpod-sdk against the emulator', () => {
  it('run, then status until COMPLETED', async () => {
    const endpoint = sdkEndpoint('scripted');
    const submitted = await endpoint.run({ input: { sleepMs: 20_000, output: { answer: 42 } } });
    expect(submitted).toEqual({ id: expect.stringMatching(/-u1$/), status: 'IN_QUEUE' });
    const first = await endpoint.status(submitted.id);
    expect(first).toMatchObject({ id: submitted.id, started: true });
    const done = await waitFor(async () => {
      const status = await endpoint.status(submitted.id);
      return 'completed' in status && status.completed ? status : undefined;
    }, 'completion');
    expect(done).toMatchObject({
      status: 'COMPLETED',
      output: { answer: 42 },
      succeeded: true,
      executionTime: 20_000,
    });
  });

  it('stream yields every chunk, with output and metrics, until the job is finished', async () => {
    const endpoint = sdkEndpoint('stream');
    const { id } = await endpoint.run({ input: { text: 'one two three four five', tokenDelayMs: 2000 } });
    const chunks = [];
    for await (const chunk of endpoint.stream(id)) chunks.push(chunk);
    expect(chunks.map((c) => c.output.text.join(''))).toEqual(['one ', 'two ', 'three ', 'four ', 'five']);
    expect(chunks.map((c) => c.metrics.stream_index)).toEqual([0, 1, 2, 3, 4]);
    expect(chunks.every((c) => c.metrics.scenario === 'stream')).toBe(true);
  });

  it('cancel stops a running job', async () => {
    const endpoint = sdkEndpoint('scripted');
    const { id } = await endpoint.run({ input: { hang: true } });
    await waitFor(async () => (await endpoint.status(id)).status === 'IN_PROGRESS', 'the job to start');
    const cancelled = await endpoint.cancel(id);
    expect(cancelled).toMatchObject({ id, status: 'CANCELLED' });
    expect(await endpoint.status(id)).toMatchObject({
      status: 'CANCELLED',
      completed: true,
      succeeded: false,
    });
  });

  it('health reports the jobs and workers', async () => {
    const endpoint = sdkEndpoint('scripted', { workersMax: 1 });
    await endpoint.run({ input: { hang: true } });
    await endpoint.run({ input: {} });
    const health = await waitFor(async () => {
      const h = await endpoint.health();
      return h.jobs.inProgress === 1 ? h : undefined;
    }, 'a running job');
    expect(health).toMatchObject({
      jobs: { completed: 0, failed: 0, inProgress: 1, inQueue: 1, retried: 0 },
      workers: { idle: 0, running: 1, initializing: 0, ready: 1, throttled: 0 },
    });
  });

  it('purgeQueue removes the queued jobs', async () => {
    const endpoint = sdkEndpoint('scripted', { workersMax: 0 });
    for (let i = 0; i < 3; i++) await endpoint.run({ input: {} });
    expect(await endpoint.purgeQueue()).toEqual({ removed: 3, status: 'completed' });
    expect((await endpoint.health()).jobs.inQueue).toBe(0);
  });

  it('runSync: /runsync, then /status-sync while the job outlives the wait', async () => {
    const endpoint = sdkEndpoint('scripted');
    const quick = await endpoint.runSync({ input: { output: 'fast' } });
    expect(quick).toMatchObject({
      status: 'COMPLETED',
      output: 'fast',
      succeeded: true,
      id: expect.stringMatching(/^sync-/),
    });
    // wait is clamped to 1000 ms by the SDK; the job runs 30 s of service time, so /status-sync takes over.
    const slow = await endpoint.runSync({ input: { sleepMs: 30_000, output: 'slow' } }, 1000);
    expect(slow).toMatchObject({ status: 'COMPLETED', output: 'slow', completed: true });
  });

  it('statusSync waits for the end of a job', async () => {
    const endpoint = sdkEndpoint('scripted');
    const { id } = await endpoint.run({ input: { sleepMs: 10_000, output: 'waited' } });
    const result = await waitFor(async () => {
      const status = await endpoint.statusSync(id, 90_000);
      return status.status === 'COMPLETED' ? status : undefined;
    }, 'the end of the job');
    expect(result).toMatchObject({ output: 'waited' });
  });
});
