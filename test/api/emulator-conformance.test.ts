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

  const eventually = async <T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> => {
    for (let i = 0; i < 200; i++) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('condition not reached');
  };

  beforeAll(async () => {
    // Service time 100 times faster: a job of a few service seconds takes tens of real ms.
    emulator = await startEmulator({ accounts: [{ apiKey: API_KEY }], timeScale: 100 });
    client = createServiceClient({
      apiKey: API_KEY,
      apiUrl: emulator.apiUrl,
      graphqlUrl: emulator.graphqlUrl,
      restUrl: emulator.restUrl,
    });
    const seed = (templateId: string) =>
      emulator.control.createEndpoint(API_KEY, { name: `conf-${templateId}`, templateId, workersMax: 2 }).id;
    echo = seed('echo');
    stream = seed('stream');
    scripted = seed('scripted');
  });

  afterAll(async () => {
    await client?.close();
    await emulator?.close();
  });

  it('run, then status until COMPLETED with the output', async () => {
    const submitted = await client.jobs.run(echo, { input: { prompt: 'hi' }, policy: { ttl: 60_000 } });
    expect(submitted.status).toBe('IN_QUEUE');
    const done = await eventually(
      () => client.jobs.status(echo, submitted.id),
      (status) => status.status === 'COMPLETED',
    );
    expect(done).toMatchObject({ id: submitted.id, output: { prompt: 'hi' } });
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
    const chunks: unknown[] = [];
    await eventually(
      async () => {
        const batch = await client.jobs.stream(stream, id);
        chunks.push(...batch.chunks);
        return batch;
      },
      () => chunks.length >= 3,
    );
    expect(chunks[0]).toMatchObject({ output: { text: ['one '] } });
    const final = await eventually(
      () => client.jobs.status(stream, id),
      (status) => status.status === 'COMPLETED',
    );
    expect(Array.isArray(final.output)).toBe(true);
  });

  it('cancel, retry after FAILED, purge-queue and health', async () => {
    const hanging = await client.jobs.run(scripted, { input: { hang: true } });
    expect((await client.jobs.cancel(scripted, hanging.id)).status).toBe('CANCELLED');

    const failing = await client.jobs.run(scripted, { input: { failTimes: 1, output: 'ok' } });
    await eventually(
      () => client.jobs.status(scripted, failing.id),
      (status) => status.status === 'FAILED',
    );
    expect(await client.jobs.retry(scripted, failing.id)).toEqual({ id: failing.id, status: 'IN_QUEUE' });
    await eventually(
      () => client.jobs.status(scripted, failing.id),
      (status) => status.status === 'COMPLETED',
    );

    const health = await client.jobs.health(scripted);
    expect(health.jobs.completed).toBeGreaterThanOrEqual(1);
    expect(typeof health.workers.idle).toBe('number');
    const purge = await client.jobs.purgeQueue(scripted);
    expect(purge.status).toBe('completed');
    expect(typeof purge.removed).toBe('number');
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
