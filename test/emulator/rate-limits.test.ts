import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RATE_LIMITS } from '../../api';
import { type Emulator, RATE_LIMITS, type RateOperation } from '../../emulator';
import { type HttpResult, http, jobsApi, KEY, OTHER_KEY, startTestEmulator, waitFor } from './helpers';

/**
 * SERVICE_SPEC.md, "Rate limits, per endpoint and operation", copied by hand: every expectation
 * below comes from this table, never from the emulator's or the client's own table, so a typo in
 * either shows up here instead of being checked against itself.
 */
const SPEC_RATE_LIMITS: Record<RateOperation, { perWindow: number; concurrent: number | null }> = {
  runsync: { perWindow: 2000, concurrent: 400 }, // POST /runsync: 2000 requests per 10 seconds, 400
  run: { perWindow: 1000, concurrent: 200 }, // POST /run: 1000 per 10 s, 200
  status: { perWindow: 2000, concurrent: 400 }, // GET /status: 2000 per 10 s, 400
  stream: { perWindow: 2000, concurrent: 400 }, // GET /stream: 2000 per 10 s, 400
  cancel: { perWindow: 100, concurrent: 20 }, // POST /cancel: 100 per 10 s, 20
  'purge-queue': { perWindow: 2, concurrent: null }, // POST /purge-queue: 2 per 10 s, not applicable
  openai: { perWindow: 2000, concurrent: 400 }, // POST /openai/*: 2000 per 10 s, 400
  requests: { perWindow: 10, concurrent: 2 }, // GET /requests: 10 per 10 s, 2
};
const specRules = Object.entries(SPEC_RATE_LIMITS) as Array<
  [RateOperation, (typeof SPEC_RATE_LIMITS)[RateOperation]]
>;

// The spec's rate-limit table, per endpoint and operation: each window at its bound and one beyond,
// each concurrency cap, the dynamic rule and Retry-After. The clock is frozen, so the 10-second
// window cannot slide under a slow machine; control.advance slides it on purpose.

let emulator: Emulator;
let counter = 0;

function endpoint(key = KEY, fields: { templateId?: string; workersMin?: number; workersMax?: number } = {}) {
  const state = emulator.control.createEndpoint(key, {
    name: `rate-${++counter}`,
    templateId: fields.templateId ?? 'echo',
    workersMin: fields.workersMin ?? 0,
    workersMax: fields.workersMax ?? 3,
    flashBootType: 'FLASHBOOT',
  });
  return { id: state.id, api: jobsApi(emulator, state.id, key) };
}

/** One request of each rate-limited operation against an endpoint. */
function caller(base: string, jobId: string, key = KEY): Record<RateOperation, () => Promise<HttpResult>> {
  const headers = { authorization: `Bearer ${key}` };
  return {
    run: () => http('POST', `${base}/run`, { headers, json: { input: {} } }),
    runsync: () => http('POST', `${base}/runsync`, { headers, json: { input: {} } }),
    status: () => http('GET', `${base}/status/${jobId}`, { headers }),
    stream: () => http('GET', `${base}/stream/${jobId}`, { headers }),
    cancel: () => http('POST', `${base}/cancel/${jobId}`, { headers }),
    'purge-queue': () => http('POST', `${base}/purge-queue`, { headers }),
    openai: () => http('POST', `${base}/openai/v1/chat/completions`, { headers, json: {} }),
    requests: () => http('GET', `${base}/requests`, { headers }),
  };
}

/** Sends `count` requests, at most `parallel` at a time; returns their statuses in order. */
async function burst(count: number, send: () => Promise<HttpResult>, parallel = 50): Promise<number[]> {
  const statuses: number[] = [];
  for (let done = 0; done < count; done += parallel) {
    const batch = Math.min(parallel, count - done);
    const results = await Promise.all(Array.from({ length: batch }, send));
    statuses.push(...results.map((r) => r.status));
  }
  return statuses;
}

/** A COMPLETED job, submitted through an operation other than the one under test. */
async function finishedJob(api: ReturnType<typeof jobsApi>, operation?: RateOperation): Promise<string> {
  if (operation !== 'runsync') return (await api.runsync({ input: {} })).body.id;
  const { body } = await api.run({ input: {} });
  emulator.control.advance(0);
  return body.id;
}

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6 });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe("the spec's rate-limit table", () => {
  it("is the emulator's table, row for row", () => {
    expect(RATE_LIMITS).toEqual(SPEC_RATE_LIMITS);
  });

  it("is the client's table for every operation the client calls; retry and health have no limit", () => {
    // The client names operations in camelCase and has no /openai or /requests calls.
    const clientName: Partial<Record<RateOperation, string>> = {
      runsync: 'runSync',
      run: 'run',
      status: 'status',
      stream: 'stream',
      cancel: 'cancel',
      'purge-queue': 'purgeQueue',
    };
    const expected = Object.fromEntries(
      specRules.flatMap(([operation, rule]) => {
        const name = clientName[operation];
        if (!name) return [];
        return [
          [
            name,
            rule.concurrent === null
              ? { perTenSeconds: rule.perWindow }
              : { perTenSeconds: rule.perWindow, concurrent: rule.concurrent },
          ],
        ];
      }),
    );
    expect(DEFAULT_RATE_LIMITS).toEqual(expected);
  });
});

describe('rate limits per endpoint and operation', () => {
  for (const [operation, rule] of specRules) {
    it(`${operation}: ${rule.perWindow} requests per 10 seconds pass, the next answers 429 with Retry-After`, async () => {
      const { id, api } = endpoint(KEY, { workersMin: 1 });
      emulator.control.advance(500);
      // The job the status/stream/cancel calls look at lives on another endpoint's window.
      const jobId = await finishedJob(api);
      const send = caller(api.base, jobId)[operation];
      const probe = endpoint(KEY, { workersMin: 1 });
      emulator.control.advance(500);
      const probeJob = await finishedJob(probe.api, operation);
      const probeSend = caller(probe.api.base, probeJob)[operation];
      const expectedOk = operation === 'openai' ? 501 : 200;

      const statuses = await burst(rule.perWindow, probeSend, Math.min(50, rule.concurrent ?? 50));
      expect(statuses.every((s) => s === expectedOk)).toBe(true);
      const refused = await probeSend();
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatch(/rate limit/);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(10);

      // Another endpoint's window is untouched.
      expect((await send()).status).toBe(expectedOk);
      expect(id).not.toBe(probe.id);

      // After Retry-After seconds (service time) the window has room again.
      emulator.control.advance(retryAfter * 1000);
      expect((await probeSend()).status).toBe(expectedOk);
    });
  }

  it('counts per account: another account is not limited by this one', async () => {
    const mine = endpoint(KEY);
    const theirs = endpoint(OTHER_KEY);
    const purge = (e: { api: ReturnType<typeof jobsApi> }) => e.api.purge();
    expect((await purge(mine)).status).toBe(200);
    expect((await purge(mine)).status).toBe(200);
    expect((await purge(mine)).status).toBe(429);
    expect((await purge(theirs)).status).toBe(200);
  });

  it('retry and health are not rate limited', async () => {
    const { api } = endpoint(KEY, { workersMin: 1 });
    emulator.control.advance(500);
    const jobId = await finishedJob(api);
    const health = await burst(2100, () => api.health(), 100);
    expect(health.every((s) => s === 200)).toBe(true);
    // A COMPLETED job cannot be retried (400), however often one asks; never 429.
    const retries = await burst(1100, () => api.retry(jobId), 100);
    expect(retries.every((s) => s === 400)).toBe(true);
  });
});

describe('concurrency caps', () => {
  const capped = specRules.filter(([, rule]) => rule.concurrent !== null);
  for (const [operation, rule] of capped) {
    const cap = rule.concurrent as number;
    it(`${operation}: ${cap} requests in flight pass, one more at the same time answers 429`, async () => {
      const probe = endpoint(KEY, { workersMin: 1 });
      emulator.control.advance(500);
      const send = caller(probe.api.base, await finishedJob(probe.api))[operation];
      // Answers are held until the rule is removed, so cap + 1 requests are in flight together.
      const release = emulator.control.injectFault({
        operation,
        endpointId: probe.id,
        kind: 'slow',
        delayMs: 600_000,
      });
      const first: Array<HttpResult | undefined> = [];
      const all = Array.from({ length: cap + 1 }, (_, i) =>
        send().then((r) => {
          first[i] = r;
          return r;
        }),
      );
      const refused = await waitFor(() => first.find((r) => r !== undefined), 'the first answer');
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatch(/concurrent/);
      expect(refused.headers['retry-after']).toBe('1');
      release();
      const statuses = (await Promise.all(all)).map((r) => r.status);
      expect(statuses.filter((s) => s === 429)).toHaveLength(1);
      expect(statuses.filter((s) => s !== 429)).toHaveLength(cap);
    });
  }
});

describe('dynamic rule', () => {
  it('raises the limit to running workers x requestsPerWorker (default 10) when that is higher', async () => {
    // No running worker: the base limit of purge-queue, 2.
    const idle = endpoint();
    expect(await burst(2, () => idle.api.purge())).toEqual([200, 200]);
    expect((await idle.api.purge()).status).toBe(429);

    // Two running workers: max(2, 2 x 10) = 20.
    const busy = endpoint(KEY, { templateId: 'scripted', workersMin: 2, workersMax: 2 });
    emulator.control.advance(500);
    await busy.api.run({ input: { hang: true } });
    await busy.api.run({ input: { hang: true } });
    emulator.control.advance(0);
    expect((await busy.api.health()).body.workers.running).toBe(2);
    const statuses = await burst(20, () => busy.api.purge(), 5);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await busy.api.purge()).status).toBe(429);
  });

  it('takes requestsPerWorker from the options', async () => {
    const other = await startTestEmulator({ timeScale: 1e-6, requestsPerWorker: 3 });
    try {
      const state = other.control.createEndpoint(KEY, {
        name: 'dynamic',
        templateId: 'scripted',
        workersMin: 1,
        workersMax: 1,
        flashBootType: 'FLASHBOOT',
      });
      other.control.advance(500);
      const api = jobsApi(other, state.id);
      await api.run({ input: { hang: true } });
      other.control.advance(0);
      expect(await burst(3, () => api.purge(), 1)).toEqual([200, 200, 200]);
      expect((await api.purge()).status).toBe(429);
    } finally {
      await other.close();
    }
  });
});

describe('rateLimits: false', () => {
  it('never answers 429', async () => {
    const other = await startTestEmulator({ timeScale: 1e-6, rateLimits: false });
    try {
      const state = other.control.createEndpoint(KEY, { name: 'free', templateId: 'echo' });
      const api = jobsApi(other, state.id);
      const statuses = await burst(20, () => api.purge(), 5);
      expect(statuses.every((s) => s === 200)).toBe(true);
    } finally {
      await other.close();
    }
  });
});
