import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { graphqlApi, http, jobsApi, KEY, OTHER_KEY, startTestEmulator } from './helpers';

// Authentication as each interface takes it, account isolation, and every error status of the spec
// with the emulator's error bodies: `{ error }` for job operations and REST, `{ errors }` for GraphQL.

let emulator: Emulator;
let endpointId: string;

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6 });
});
afterAll(() => emulator.close());
beforeEach(() => {
  emulator.control.reset();
  endpointId = emulator.control.createEndpoint(KEY, {
    name: 'auth',
    templateId: 'echo',
    workersMin: 1,
    flashBootType: 'FLASHBOOT',
  }).id;
  emulator.control.advance(500);
});

describe('job operations: the authorization header', () => {
  const health = (authorization?: string) =>
    http('GET', `${emulator.apiUrl}/${endpointId}/health`, {
      headers: authorization === undefined ? {} : { authorization },
    });

  it('takes "Bearer <key>", "bearer <key>" and the bare key', async () => {
    expect((await health(`Bearer ${KEY}`)).status).toBe(200);
    expect((await health(`bearer ${KEY}`)).status).toBe(200);
    expect((await health(KEY)).status).toBe(200);
  });

  it('answers 401 with { error } when the key is missing, empty, wrong or in another scheme', async () => {
    for (const header of [undefined, '', 'Bearer', 'Bearer wrong-key', 'wrong-key', `Basic ${KEY}`]) {
      const result = await health(header);
      expect(result.status, String(header)).toBe(401);
      expect(result.body).toEqual({ error: expect.stringMatching(/unauthorized/) });
    }
  });

  it('does not take the key as an api_key query parameter', async () => {
    const result = await http('GET', `${emulator.apiUrl}/${endpointId}/health?api_key=${KEY}`);
    expect(result.status).toBe(401);
  });

  it('checks the key before reading a body, so an unauthorised large submit is refused with 401', async () => {
    const result = await http('POST', `${emulator.apiUrl}/${endpointId}/run`, {
      json: { input: { padding: 'x'.repeat(1024 * 1024) } },
    });
    expect(result.status).toBe(401);
    expect(emulator.control.submissions(endpointId)).toBe(0);
  });
});

describe('GraphQL: the api_key query parameter', () => {
  const query = '{ myself { id } }';

  it('takes a valid key', async () => {
    const result = await graphqlApi(emulator)(query);
    expect(result.status).toBe(200);
    expect(result.body.data.myself.id).toEqual(expect.any(String));
  });

  it('answers 401 with { errors: [{ message }] } when it is missing or wrong, even with an authorization header', async () => {
    const urls = [
      emulator.graphqlUrl,
      `${emulator.graphqlUrl}?api_key=wrong`,
      `${emulator.graphqlUrl}?api_key=`,
    ];
    for (const url of urls) {
      const result = await http('POST', url, {
        json: { query },
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(result.status, url).toBe(401);
      expect(result.body).toEqual({ errors: [{ message: expect.stringMatching(/unauthorized/) }] });
    }
  });
});

describe('REST: the bearer scheme', () => {
  const create = (authorization?: string) =>
    http('POST', `${emulator.restUrl}/endpoints`, {
      headers: authorization === undefined ? {} : { authorization },
      json: { name: 'rest', templateId: 'echo', gpuTypeIds: ['AMPERE_16'] },
    });

  it('takes "Bearer <key>"', async () => {
    expect((await create(`Bearer ${KEY}`)).status).toBe(200);
  });

  it('answers 401 for a missing, wrong or bare key', async () => {
    for (const header of [undefined, 'Bearer wrong', KEY]) {
      const result = await create(header);
      expect(result.status, String(header)).toBe(401);
      expect(result.body).toEqual({ error: expect.stringMatching(/unauthorized/) });
    }
    const volume = await http('DELETE', `${emulator.restUrl}/networkvolumes/vol1`);
    expect(volume.status).toBe(401);
  });
});

describe('accounts are isolated', () => {
  it("another account's endpoint is unknown to this key (404), in job operations and GraphQL", async () => {
    const theirs = jobsApi(emulator, endpointId, OTHER_KEY);
    const health = await theirs.health();
    expect(health.status).toBe(404);
    expect(health.body).toEqual({ error: `endpoint ${endpointId} not found` });
    expect((await theirs.run({ input: {} })).status).toBe(404);

    const list = await graphqlApi(emulator, OTHER_KEY)('{ myself { endpoints { id } } }');
    expect(list.body.data.myself.endpoints).toEqual([]);
    const update = await graphqlApi(
      emulator,
      OTHER_KEY,
    )(
      `mutation { saveEndpoint(input: { id: "${endpointId}", name: "stolen", templateId: "echo", gpuIds: "AMPERE_16" }) { id } }`,
    );
    expect(update.body.errors[0].message).toMatch(/not found/);
    expect(emulator.control.endpoints(KEY)[0]?.name).toBe('auth');
  });

  it('a job id of another endpoint is unknown here (404)', async () => {
    const mine = jobsApi(emulator, endpointId);
    const job = await mine.run({ input: {} });
    const otherEndpoint = emulator.control.createEndpoint(KEY, { name: 'second', templateId: 'echo' });
    const other = jobsApi(emulator, otherEndpoint.id);
    expect((await other.status(job.body.id)).status).toBe(404);
    expect((await mine.status(job.body.id)).status).toBe(200);
  });

  it("another account's network volume cannot be deleted (400) or attached", async () => {
    emulator.control.createNetworkVolume(KEY, 'myvolume01');
    const result = await http('DELETE', `${emulator.restUrl}/networkvolumes/myvolume01`, {
      headers: { authorization: `Bearer ${OTHER_KEY}` },
    });
    expect(result.status).toBe(400);
    const attach = await graphqlApi(
      emulator,
      OTHER_KEY,
    )(
      'mutation { saveEndpoint(input: { name: "x", templateId: "echo", gpuIds: "AMPERE_16", networkVolumeId: "myvolume01" }) { id } }',
    );
    expect(attach.body.errors[0].message).toMatch(/network volume myvolume01 does not exist/);
  });
});

describe('error statuses', () => {
  it('400: malformed request, with { error }', async () => {
    const result = await jobsApi(emulator, endpointId).run({ policy: {} });
    expect(result.status).toBe(400);
    expect(result.body).toEqual({ error: expect.stringMatching(/input/) });
  });

  it('404: unknown endpoint id, unknown job, unknown path', async () => {
    const unknown = await jobsApi(emulator, 'no-such-endpoint').health();
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'endpoint no-such-endpoint not found' });
    const job = await jobsApi(emulator, endpointId).status('no-such-job');
    expect(job.status).toBe(404);
    expect(job.body).toEqual({ error: expect.stringMatching(/job no-such-job not found/) });
    const path = await http('GET', `${emulator.apiUrl}/${endpointId}/nothing-here`, {
      headers: { authorization: KEY },
    });
    expect(path.status).toBe(404);
    expect(path.body).toEqual({ error: expect.any(String) });
  });

  it('429: the rate limit, with Retry-After in seconds', async () => {
    const api = jobsApi(emulator, endpointId);
    await api.purge();
    await api.purge();
    const result = await api.purge();
    expect(result.status).toBe(429);
    expect(result.headers['retry-after']).toMatch(/^\d+$/);
    expect(result.body).toEqual({ error: expect.any(String) });
  });

  it('500: a crashed worker, through fault injection, with { error }', async () => {
    emulator.control.injectFault({ operation: 'status', kind: 'status', httpStatus: 500, times: 1 });
    const result = await jobsApi(emulator, endpointId).status('whatever');
    expect(result.status).toBe(500);
    expect(result.body).toEqual({ error: expect.any(String) });
  });

  it('400 for job operations on a load-balancing endpoint, which has no queue', async () => {
    const lb = emulator.control.createEndpoint(KEY, { name: 'lb', templateId: 'echo', type: 'LB' });
    const result = await jobsApi(emulator, lb.id).run({ input: {} });
    expect(result.status).toBe(400);
    expect(result.body.error).toMatch(/load-balancing/);
  });
});
