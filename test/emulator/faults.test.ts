import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { graphqlApi, http, jobsApi, KEY, startTestEmulator } from './helpers';

// Fault injection per operation: answers with a chosen status (429 with Retry-After, 5xx), dropped
// connections before or after processing, slow answers; filtered by endpoint, counted, randomised.

let emulator: Emulator;
let endpointId: string;
let api: ReturnType<typeof jobsApi>;
/** Dice the emulator rolls for `probability`, in order. */
let dice: number[] = [];

const socketError = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
  throw new Error('expected the connection to fail');
};

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6, random: () => dice.shift() ?? 0.5 });
});
afterAll(() => emulator.close());
beforeEach(() => {
  emulator.control.reset();
  dice = [];
  endpointId = emulator.control.createEndpoint(KEY, {
    name: `faults-${Math.random()}`,
    templateId: 'echo',
    workersMin: 1,
    flashBootType: 'FLASHBOOT',
  }).id;
  emulator.control.advance(500);
  api = jobsApi(emulator, endpointId);
});

describe('status faults', () => {
  it('429 with the given Retry-After, before anything is processed', async () => {
    emulator.control.injectFault({ operation: 'run', kind: 'status', httpStatus: 429, retryAfterSeconds: 7 });
    const result = await api.run({ input: {} });
    expect(result.status).toBe(429);
    expect(result.headers['retry-after']).toBe('7');
    expect(result.body).toEqual({ error: expect.stringMatching(/injected/) });
    expect(emulator.control.submissions(endpointId)).toBe(0);
    expect((await api.health()).status).toBe(200);
  });

  it("'*' with an endpoint filter hits every operation of that endpoint only", async () => {
    const other = emulator.control.createEndpoint(KEY, { name: 'other', templateId: 'echo' });
    emulator.control.injectFault({ operation: '*', endpointId, kind: 'status', httpStatus: 503 });
    expect((await api.health()).status).toBe(503);
    expect((await api.run({ input: {} })).status).toBe(503);
    expect((await jobsApi(emulator, other.id).health()).status).toBe(200);
  });

  it('times limits how often a rule applies; the remover ends it early', async () => {
    emulator.control.injectFault({ operation: 'health', kind: 'status', httpStatus: 500, times: 2 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api.health()).status);
    expect(statuses).toEqual([500, 500, 200]);

    const remove = emulator.control.injectFault({ operation: 'health', kind: 'status', httpStatus: 502 });
    expect((await api.health()).status).toBe(502);
    remove();
    expect((await api.health()).status).toBe(200);
  });

  it('probability: a share of requests, by the dice', async () => {
    emulator.control.injectFault({ operation: 'health', kind: 'status', httpStatus: 500, probability: 0.3 });
    dice = [0.1, 0.9, 0.29, 0.3];
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await api.health()).status);
    expect(statuses).toEqual([500, 200, 500, 200]);
  });

  it('answers GraphQL faults in the GraphQL error shape', async () => {
    emulator.control.injectFault({ operation: 'graphql', kind: 'status', httpStatus: 500, times: 1 });
    const result = await graphqlApi(emulator)('{ myself { id } }');
    expect(result.status).toBe(500);
    expect(result.body).toEqual({ errors: [{ message: expect.stringMatching(/injected/) }] });
  });

  it('applies to REST operations', async () => {
    emulator.control.injectFault({
      operation: 'rest-delete-volume',
      kind: 'status',
      httpStatus: 503,
      times: 1,
    });
    const result = await http('DELETE', `${emulator.restUrl}/networkvolumes/anything`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(result.status).toBe(503);
  });

  it('refuses an invalid rule', () => {
    expect(() => emulator.control.injectFault({ operation: 'run', kind: 'status', probability: 2 })).toThrow(
      /probability/,
    );
  });
});

describe('dropped connections', () => {
  it('drop-before: the connection closes without an answer and nothing was processed', async () => {
    emulator.control.injectFault({ operation: 'run', kind: 'drop-before', times: 1 });
    const code = await socketError(api.run({ input: {} }));
    expect(code).toMatch(/UND_ERR_SOCKET|ECONNRESET/);
    expect(emulator.control.submissions(endpointId)).toBe(0);
    expect(emulator.control.jobs(endpointId)).toHaveLength(0);
  });

  it('drop-after: the submit was processed (the job exists and runs) but its answer is lost', async () => {
    emulator.control.injectFault({ operation: 'run', kind: 'drop-after', times: 1 });
    const code = await socketError(api.run({ input: { lost: 'response' } }));
    expect(code).toMatch(/UND_ERR_SOCKET|ECONNRESET/);
    expect(emulator.control.submissions(endpointId)).toBe(1);
    emulator.control.advance(0);
    const [job] = emulator.control.jobs(endpointId);
    expect(job).toMatchObject({ status: 'COMPLETED', output: { lost: 'response' } });
    // The next submit answers normally.
    expect((await api.run({ input: {} })).status).toBe(200);
  });

  it('drop-after on /runsync: the job ran, its id never reached the client', async () => {
    emulator.control.injectFault({ operation: 'runsync', kind: 'drop-after', times: 1 });
    await socketError(api.runsync({ input: { x: 1 } }));
    const [job] = emulator.control.jobs(endpointId);
    expect(job).toMatchObject({ sync: true, status: 'COMPLETED' });
  });

  it('drop-after on REST endpoint creation: the endpoint exists although the client saw an error', async () => {
    const before = emulator.control.endpoints(KEY).length;
    emulator.control.injectFault({ operation: 'rest-create-endpoint', kind: 'drop-after', times: 1 });
    await socketError(
      http('POST', `${emulator.restUrl}/endpoints`, {
        headers: { authorization: `Bearer ${KEY}` },
        json: { name: 'ghost', templateId: 'echo', gpuTypeIds: ['AMPERE_16'] },
      }),
    );
    expect(emulator.control.endpoints(KEY)).toHaveLength(before + 1);
  });
});

describe('slow answers', () => {
  it('holds the answer of a processed request: a client with a shorter timeout gives up, the job exists', async () => {
    const remove = emulator.control.injectFault({ operation: 'run', kind: 'slow', delayMs: 60_000 });
    const code = await socketError(
      request(`${api.base}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: {} }),
        headersTimeout: 100,
      }),
    );
    expect(code).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(emulator.control.submissions(endpointId)).toBe(1);
    remove();
  });

  it('answers normally once held long enough', async () => {
    emulator.control.injectFault({ operation: 'health', kind: 'slow', delayMs: 20, times: 1 });
    const result = await api.health();
    expect(result.status).toBe(200);
    expect(result.body.jobs).toBeDefined();
  });
});
