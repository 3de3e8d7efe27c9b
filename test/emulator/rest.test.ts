import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { graphqlApi, http, jobsApi, KEY, startTestEmulator } from './helpers';

// The REST interface under /v1: POST /endpoints (first available of gpuTypeIds) and
// DELETE /networkvolumes/{id} (204, 400, 401).

let emulator: Emulator;
const auth = { authorization: `Bearer ${KEY}` };
const createEndpoint = (body: unknown) =>
  http('POST', `${emulator.restUrl}/endpoints`, { headers: auth, json: body });
const deleteVolume = (id: string) =>
  http('DELETE', `${emulator.restUrl}/networkvolumes/${id}`, { headers: auth });

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6, gpuAvailability: { AMPERE_80: false } });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('POST /v1/endpoints', () => {
  it('creates a queue-based endpoint on the first requested GPU type and answers it', async () => {
    const result = await createEndpoint({
      name: 'rest-made',
      templateId: 'echo',
      gpuTypeIds: ['AMPERE_48', 'AMPERE_16'],
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 7,
    });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'rest-made',
      templateId: 'echo',
      gpuIds: 'AMPERE_48',
      gpuTypeIds: ['AMPERE_48', 'AMPERE_16'],
      type: 'QB',
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 7,
    });
    // It is a real endpoint: jobs run on it and GraphQL lists it.
    const api = jobsApi(emulator, result.body.id);
    const job = await api.run({ input: { ping: 1 } });
    emulator.control.advance(5000);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', output: { ping: 1 } });
    const listed = await graphqlApi(emulator)('{ myself { endpoints { id gpuIds } } }');
    expect(listed.body.data.myself.endpoints).toContainEqual({ id: result.body.id, gpuIds: 'AMPERE_48' });
  });

  it('skips an unavailable type and takes the next in priority order', async () => {
    const result = await createEndpoint({
      name: 'n',
      templateId: 'echo',
      gpuTypeIds: ['AMPERE_80', 'ADA_24'],
    });
    expect(result.status).toBe(200);
    expect(result.body.gpuIds).toBe('ADA_24');
  });

  it('follows availability changed at run time', async () => {
    emulator.control.setGpuAvailability('ADA_24', false);
    try {
      const result = await createEndpoint({
        name: 'n',
        templateId: 'echo',
        gpuTypeIds: ['ADA_24', 'AMPERE_24'],
      });
      expect(result.body.gpuIds).toBe('AMPERE_24');
    } finally {
      emulator.control.setGpuAvailability('ADA_24', true);
    }
  });

  it('answers 400 when none of the requested types is available', async () => {
    const result = await createEndpoint({ name: 'n', templateId: 'echo', gpuTypeIds: ['AMPERE_80'] });
    expect(result.status).toBe(400);
    expect(result.body).toEqual({ error: expect.stringMatching(/none of the requested GPU types/) });
  });

  it('defaults workersMin 0, workersMax 3, idleTimeout 5', async () => {
    const result = await createEndpoint({ name: 'n', templateId: 'echo', gpuTypeIds: ['AMPERE_16'] });
    expect(result.body).toMatchObject({ workersMin: 0, workersMax: 3, idleTimeout: 5 });
  });

  const invalid: Array<[string, unknown]> = [
    ['name is missing', { templateId: 'echo', gpuTypeIds: ['AMPERE_16'] }],
    ['templateId is missing', { name: 'n', gpuTypeIds: ['AMPERE_16'] }],
    ['gpuTypeIds is missing', { name: 'n', templateId: 'echo' }],
    ['gpuTypeIds is empty', { name: 'n', templateId: 'echo', gpuTypeIds: [] }],
    ['gpuTypeIds is a string', { name: 'n', templateId: 'echo', gpuTypeIds: 'AMPERE_16' }],
    [
      'workersMin exceeds workersMax',
      { name: 'n', templateId: 'echo', gpuTypeIds: ['AMPERE_16'], workersMin: 3, workersMax: 1 },
    ],
    ['workersMax is negative', { name: 'n', templateId: 'echo', gpuTypeIds: ['AMPERE_16'], workersMax: -1 }],
  ];
  for (const [what, body] of invalid) {
    it(`answers 400 when ${what}`, async () => {
      const before = emulator.control.endpoints().length;
      const result = await createEndpoint(body);
      expect(result.status).toBe(400);
      expect(result.body).toEqual({ error: expect.any(String) });
      expect(emulator.control.endpoints()).toHaveLength(before);
    });
  }
});

describe('DELETE /v1/networkvolumes/{networkVolumeId}', () => {
  it('answers 204 with no body and the volume is gone (a second delete is 400)', async () => {
    emulator.control.createNetworkVolume(KEY, 'vol-delete-1');
    const deleted = await deleteVolume('vol-delete-1');
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    const again = await deleteVolume('vol-delete-1');
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: expect.stringMatching(/invalid network volume id/) });
  });

  it('answers 400 for a malformed id, an unknown id and no id', async () => {
    for (const id of ['bad%20id', 'x'.repeat(65), 'unknown-volume', '']) {
      const result = await deleteVolume(id);
      expect(result.status, id).toBe(400);
      expect(result.body.error).toMatch(/invalid network volume id/);
    }
  });

  it('answers 400 while the volume is attached to an endpoint', async () => {
    emulator.control.createNetworkVolume(KEY, 'vol-attached');
    const endpoint = emulator.control.createEndpoint(KEY, {
      name: 'with-volume',
      templateId: 'echo',
      networkVolumeId: 'vol-attached',
    });
    const result = await deleteVolume('vol-attached');
    expect(result.status).toBe(400);
    expect(result.body.error).toContain(endpoint.id);
  });

  it('answers 401 without a valid bearer key', async () => {
    emulator.control.createNetworkVolume(KEY, 'vol-auth');
    const result = await http('DELETE', `${emulator.restUrl}/networkvolumes/vol-auth`, {
      headers: { authorization: 'Bearer wrong' },
    });
    expect(result.status).toBe(401);
    expect((await deleteVolume('vol-auth')).status).toBe(204);
  });

  it('answers 404 for REST operations the emulator does not have', async () => {
    const result = await http('GET', `${emulator.restUrl}/pods`, { headers: auth });
    expect(result.status).toBe(404);
    expect(result.body).toEqual({ error: expect.any(String) });
  });
});
