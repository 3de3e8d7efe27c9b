/**
 * The API client against the emulator over real HTTP: every operation, both written from the spec
 * independently (the emulator shares no code with api/), so a disagreement about a body, a path,
 * an auth form or a status fails here. The fault cases live in the other api suites.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient, ServiceError } from '../../api';
import { type Emulator, startEmulator } from '../../emulator';

const API_KEY = 'conformance-key';

describe('API client against the emulator', () => {
  let emulator: Emulator;
  let client: ServiceClient;
  let echo: string;
  let stream: string;
  let scripted: string;

  beforeAll(async () => {
    // Service time moves only when a test advances it: a job starts and ends when the test says.
    emulator = await startEmulator({ accounts: [{ apiKey: API_KEY }] });
    emulator.control.freeze();
    client = createServiceClient({
      apiKey: API_KEY,
      apiUrl: emulator.apiUrl,
      graphqlUrl: emulator.graphqlUrl,
      restUrl: emulator.restUrl,
    });
    const seed = (templateId: string) =>
      emulator.control.createEndpoint(API_KEY, {
        name: `conf-${templateId}`,
        templateId,
        workersMin: 1,
        workersMax: 2,
      }).id;
    echo = seed('echo');
    stream = seed('stream');
    scripted = seed('scripted');
    // Each endpoint's warm worker boots (a 5 s cold start).
    emulator.control.advance(10_000);
  });

  afterAll(async () => {
    await client?.close();
    await emulator?.close();
  });

  it('run, then status until COMPLETED with the output', async () => {
    const submitted = await client.jobs.run(echo, { input: { prompt: 'hi' }, policy: { ttl: 60_000 } });
    expect(submitted.status).toBe('IN_QUEUE');
    emulator.control.advance(1);
    const done = await client.jobs.status(echo, submitted.id);
    expect(done).toMatchObject({ id: submitted.id, status: 'COMPLETED', output: { prompt: 'hi' } });
    expect(typeof done.executionTime).toBe('number');
  });

  it('runSync returns the final status of a sync- job', async () => {
    const result = await client.jobs.runSync(echo, { input: { n: 1 } }, { wait: 5_000 });
    expect(result.id.startsWith('sync-')).toBe(true);
    expect(result).toMatchObject({ status: 'COMPLETED', output: { n: 1 } });
  });

  it('status with ttl sets the job ttl', async () => {
    const { id } = await client.jobs.run(scripted, { input: { hang: true } });
    await client.jobs.status(scripted, id, { ttl: 120_000 });
    const job = emulator.control.job(id);
    expect(job?.ttlDeadline !== undefined && job.ttlDeadline - (job.submittedAt ?? 0)).toBe(120_000);
    await client.jobs.cancel(scripted, id);
  });

  it('stream drains chunks with the spec fields, and the output still comes from status', async () => {
    const { id } = await client.jobs.run(stream, { input: { text: 'one two three', tokenDelayMs: 10 } });
    // The first word after 10 ms of service time, then the job runs to its end.
    emulator.control.advance(10);
    const first = await client.jobs.stream(stream, id);
    expect(first.chunks.map((chunk) => chunk.output)).toEqual([expect.objectContaining({ text: ['one '] })]);
    emulator.control.advance(1_000);
    const rest = await client.jobs.stream(stream, id);
    expect(rest.chunks.map((chunk) => chunk.output)).toEqual([
      expect.objectContaining({ text: ['two '] }),
      expect.objectContaining({ text: ['three'] }),
    ]);
    const final = await client.jobs.status(stream, id);
    expect(final.status).toBe('COMPLETED');
    expect(Array.isArray(final.output)).toBe(true);
  });

  it('cancel, retry after FAILED, purge-queue and health', async () => {
    const hanging = await client.jobs.run(scripted, { input: { hang: true } });
    expect((await client.jobs.cancel(scripted, hanging.id)).status).toBe('CANCELLED');

    const failing = await client.jobs.run(scripted, { input: { failTimes: 1, output: 'ok' } });
    emulator.control.advance(1);
    expect(await client.jobs.status(scripted, failing.id)).toMatchObject({ status: 'FAILED' });
    expect(await client.jobs.retry(scripted, failing.id)).toEqual({ id: failing.id, status: 'IN_QUEUE' });
    emulator.control.advance(1);
    expect(await client.jobs.status(scripted, failing.id)).toMatchObject({
      status: 'COMPLETED',
      output: 'ok',
    });

    const health = await client.jobs.health(scripted);
    expect(health.jobs).toMatchObject({ completed: 1, retried: 1, inQueue: 0 });
    expect(health.workers).toMatchObject({ idle: 1, running: 0 });
    // Four jobs that never end: one runs on the warm worker, a second worker boots (and stays
    // booting, the clock being frozen), three wait in the queue and are purged.
    for (let i = 0; i < 4; i++) await client.jobs.run(scripted, { input: { hang: true } });
    const queued = emulator.control.jobs(scripted).filter((job) => job.status === 'IN_QUEUE').length;
    expect(queued).toBe(3);
    expect(await client.jobs.purgeQueue(scripted)).toEqual({ removed: queued, status: 'completed' });
  });

  it('GraphQL: save (create, update), list with pods, account, delete', async () => {
    const name = 'conformance "quoted" \\ back\nslash ✓';
    const created = await client.endpoints.save({
      name,
      templateId: 'echo',
      gpuIds: 'ADA_24',
      workersMax: 1,
    });
    expect(created).toMatchObject({ name, templateId: 'echo', gpuIds: 'ADA_24', type: 'QB' });
    const updated = await client.endpoints.save({
      id: created.id,
      name,
      templateId: 'echo',
      gpuIds: 'ADA_24',
      workersMax: 0,
    });
    expect(updated.workersMax).toBe(0);
    const listed = await client.endpoints.list();
    expect(listed.find((endpoint) => endpoint.id === created.id)).toMatchObject({ name });
    const account = await client.endpoints.account();
    expect(account.endpoints.map((endpoint) => endpoint.id)).toContain(created.id);
    await client.endpoints.delete(created.id);
    expect((await client.endpoints.list()).some((endpoint) => endpoint.id === created.id)).toBe(false);
  });

  it('REST: create an endpoint from gpuTypeIds in priority order, delete a network volume', async () => {
    const created = await client.rest.createEndpoint({
      name: 'rest-conformance',
      templateId: 'echo',
      gpuTypeIds: ['AMPERE_80', 'ADA_24'],
      workersMin: 0,
      workersMax: 1,
      idleTimeout: 5,
    });
    expect(created.id).toEqual(expect.any(String));
    const volume = emulator.control.createNetworkVolume(API_KEY);
    await expect(client.rest.deleteNetworkVolume(volume.id)).resolves.toBeUndefined();
    const again = await client.rest.deleteNetworkVolume(volume.id).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(ServiceError);
    expect(again).toMatchObject({ kind: 'BadRequest', status: 400, operation: 'deleteNetworkVolume' });
  });

  it('a wrong key is Unauthorized on all three interfaces, and the key appears in no error', async () => {
    const wrong = createServiceClient({
      apiKey: 'not-the-key-at-all',
      apiUrl: emulator.apiUrl,
      graphqlUrl: emulator.graphqlUrl,
      restUrl: emulator.restUrl,
    });
    try {
      const errors = await Promise.all([
        wrong.jobs.health(echo).catch((error: unknown) => error),
        wrong.endpoints.list().catch((error: unknown) => error),
        wrong.rest.deleteNetworkVolume('vol-x').catch((error: unknown) => error),
      ]);
      for (const error of errors) {
        expect(error).toMatchObject({ kind: 'Unauthorized', status: 401 });
        expect(`${String(error)} ${JSON.stringify(error)} ${(error as Error).stack}`).not.toContain(
          'not-the-key',
        );
      }
    } finally {
      await wrong.close();
    }
  });
});
