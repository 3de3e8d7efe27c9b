import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Emulator, LIMITS } from '../../emulator';
import { http, jobsApi, KEY, MINUTE, startTestEmulator, waitFor } from './helpers';

// Each limit of the spec at its bound and one step beyond, over real HTTP, on a frozen clock.

let emulator: Emulator;
let counter = 0;
const MIB = 1024 * 1024;
const DAY = 24 * 60 * MINUTE;

function endpoint(templateId = 'scripted', workersMin = 1) {
  const state = emulator.control.createEndpoint(KEY, {
    name: `limits-${++counter}`,
    templateId,
    workersMin,
    workersMax: 3,
    flashBootType: 'FLASHBOOT',
  });
  emulator.control.advance(500);
  return { id: state.id, api: jobsApi(emulator, state.id) };
}

/** A job request body of exactly `size` bytes whose scripted output is small. */
function bodyOfSize(size: number): string {
  const prefix = '{"input":{"output":"ok","padding":"';
  const suffix = '"}}';
  return prefix + 'x'.repeat(size - prefix.length - suffix.length) + suffix;
}

const post = (url: string, body: string) =>
  http('POST', url, {
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body,
  });

beforeAll(async () => {
  emulator = await startTestEmulator({ timeScale: 1e-6 });
});
afterAll(() => emulator.close());
beforeEach(() => emulator.control.reset());

describe('payload limits', () => {
  it('/run accepts a body of exactly 10 MB and answers 400 one byte beyond', async () => {
    const { id, api } = endpoint();
    const atLimit = await post(`${api.base}/run`, bodyOfSize(LIMITS.runMaxBytes));
    expect(LIMITS.runMaxBytes).toBe(10 * MIB);
    expect(atLimit.status).toBe(200);
    const beyond = await post(`${api.base}/run`, bodyOfSize(LIMITS.runMaxBytes + 1));
    expect(beyond.status).toBe(400);
    expect(beyond.body.error).toMatch(/exceeds the 10485760-byte limit of \/run/);
    expect(emulator.control.submissions(id)).toBe(1);
  });

  it('/runsync accepts a body of exactly 20 MB and answers 400 one byte beyond', async () => {
    const { id, api } = endpoint();
    const atLimit = await post(`${api.base}/runsync`, bodyOfSize(LIMITS.runSyncMaxBytes));
    expect(atLimit.status).toBe(200);
    expect(atLimit.body).toMatchObject({ status: 'COMPLETED', output: 'ok' });
    const beyond = await post(`${api.base}/runsync`, bodyOfSize(LIMITS.runSyncMaxBytes + 1));
    expect(beyond.status).toBe(400);
    expect(beyond.body.error).toMatch(/20971520-byte limit of \/runsync/);
    expect(emulator.control.submissions(id)).toBe(1);
  });
});

/**
 * A raw HTTP/1.1 client that writes the request's whole body, waiting for each write to be taken,
 * and only then reads the answer, as many clients do. Resolves with what came back and the
 * socket error, if any (a server that closed without reading the body causes EPIPE/ECONNRESET).
 */
async function writeWholeBodyThenRead(
  path: string,
  bodyBytes: number,
): Promise<{ answer: string; written: number; error?: string }> {
  const socket = connect(emulator.port, '127.0.0.1');
  let answer = '';
  let error: string | undefined;
  socket.on('data', (data: Buffer) => {
    answer += data.toString('utf8');
  });
  socket.on('error', (caught: Error) => {
    error ??= caught.message;
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const write = (data: string | Buffer) =>
    new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
  let written = 0;
  try {
    await write(
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\n` +
        `content-type: application/json\r\ncontent-length: ${bodyBytes}\r\nconnection: close\r\n\r\n`,
    );
    const chunk = Buffer.alloc(256 * 1024, 'x');
    while (written < bodyBytes) {
      const part = chunk.subarray(0, Math.min(chunk.length, bodyBytes - written));
      await write(part);
      written += part.length;
    }
    socket.end();
  } catch (caught) {
    error ??= (caught as Error).message;
    socket.destroy();
  }
  await closed;
  return { answer, written, ...(error === undefined ? {} : { error }) };
}

describe('oversized bodies', () => {
  it('/run reads a body over its limit to the end, then answers 400 (no reset under the client)', async () => {
    const { id, api } = endpoint();
    const size = LIMITS.runMaxBytes + 5 * MIB;
    const { answer, written, error } = await writeWholeBodyThenRead(
      `${new URL(api.base).pathname}/run`,
      size,
    );
    expect(error).toBeUndefined();
    expect(written).toBe(size);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('exceeds the 10485760-byte limit of /run');
    expect(emulator.control.submissions(id)).toBe(0);
  });
});

describe('/runsync wait parameter', () => {
  it('accepts 1000 and 300000 and refuses 999, 300001 and non-integers with 400', async () => {
    const { api } = endpoint('echo');
    for (const wait of ['1000', '300000', '90000']) {
      const ok = await api.runsync({ input: { wait } }, `?wait=${wait}`);
      expect(ok.status, wait).toBe(200);
      expect(ok.body.status).toBe('COMPLETED');
    }
    for (const wait of ['999', '300001', '0', '-5', '1.5', 'abc', '']) {
      const refused = await api.runsync({ input: {} }, `?wait=${wait}`);
      expect(refused.status, wait).toBe(400);
      expect(refused.body.error).toMatch(/wait/);
    }
  });

  it('answers the current state when the job does not finish within the wait', async () => {
    const { id, api } = endpoint();
    const pending = api.runsync({ input: { sleepMs: 10_000 } }, '?wait=2000');
    // The clock is frozen: move it once the job is running.
    await waitFor(
      () => emulator.control.jobs(id).some((job) => job.status === 'IN_PROGRESS'),
      'a running job',
    );
    emulator.control.advance(2000);
    const result = await pending;
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ id: expect.stringMatching(/^sync-/), status: 'IN_PROGRESS' });
  });
});

describe('policy bounds', () => {
  const cases = [
    ['executionTimeout', 4999, 400],
    ['executionTimeout', 5000, 200],
    ['executionTimeout', 7 * DAY, 200],
    ['executionTimeout', 7 * DAY + 1, 400],
    ['executionTimeout', 5000.5, 400],
    ['ttl', 9999, 400],
    ['ttl', 10_000, 200],
    ['ttl', 7 * DAY, 200],
    ['ttl', 7 * DAY + 1, 400],
    ['ttl', '60000', 400],
    ['lowPriority', 'yes', 400],
  ] as const;
  for (const [field, value, expected] of cases) {
    it(`policy.${field} = ${JSON.stringify(value)} answers ${expected}`, async () => {
      const { api } = endpoint();
      const result = await api.run({ input: {}, policy: { [field]: value } });
      expect(result.status).toBe(expected);
      if (expected === 400) expect(result.body.error).toContain(`policy.${field}`);
    });
  }

  it('executionTimeout defaults to 600000 ms: a job running longer is TIMED_OUT exactly then', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { hang: true }, policy: { ttl: 7 * DAY } });
    emulator.control.advance(0);
    emulator.control.advance(LIMITS.executionTimeoutDefaultMs - 1);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    emulator.control.advance(1);
    expect((await api.status(job.body.id)).body).toMatchObject({
      status: 'TIMED_OUT',
      executionTime: 600_000,
    });
  });

  it('ttl defaults to 24 hours from submission', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { hang: true }, policy: { executionTimeout: 7 * DAY } });
    emulator.control.advance(DAY - 1);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    emulator.control.advance(1);
    expect((await api.status(job.body.id)).status).toBe(404);
  });

  it('a policy executionTimeout overrides the endpoint setting for that job only', async () => {
    const state = emulator.control.createEndpoint(KEY, {
      name: `limits-${++counter}`,
      templateId: 'scripted',
      workersMin: 2,
      workersMax: 2,
      executionTimeoutMs: 20_000,
    });
    emulator.control.advance(5000);
    const api = jobsApi(emulator, state.id);
    const own = await api.run({ input: { hang: true }, policy: { executionTimeout: 8000 } });
    const inherited = await api.run({ input: { hang: true } });
    emulator.control.advance(0);
    emulator.control.advance(8000);
    expect((await api.status(own.body.id)).body.status).toBe('TIMED_OUT');
    expect((await api.status(inherited.body.id)).body.status).toBe('IN_PROGRESS');
    emulator.control.advance(12_000);
    expect((await api.status(inherited.body.id)).body.status).toBe('TIMED_OUT');
  });
});

describe('/status ttl parameter', () => {
  it('refuses values outside 10000..604800000 with 400', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { hang: true } });
    for (const ttl of ['9999', String(7 * DAY + 1), 'soon', '1e5']) {
      const result = await api.status(job.body.id, `?ttl=${ttl}`);
      expect(result.status, ttl).toBe(400);
      expect(result.body.error).toMatch(/ttl/);
    }
    expect((await api.status(job.body.id, '?ttl=10000')).status).toBe(200);
    expect((await api.status(job.body.id, `?ttl=${7 * DAY}`)).status).toBe(200);
  });

  it('sets the time to live, still counted from submission', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { hang: true }, policy: { ttl: 10_000, executionTimeout: DAY } });
    emulator.control.advance(5000);
    expect((await api.status(job.body.id, '?ttl=60000')).body.status).toBe('IN_PROGRESS');
    emulator.control.advance(54_999);
    expect((await api.status(job.body.id)).status).toBe(200);
    emulator.control.advance(1);
    expect((await api.status(job.body.id)).status).toBe(404);
  });

  it('a ttl shorter than the job has already lived deletes it at once', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { hang: true } });
    emulator.control.advance(15_000);
    expect((await api.status(job.body.id, '?ttl=10000')).status).toBe(404);
    expect(emulator.control.job(job.body.id)).toMatchObject({ deleted: true, removedReason: 'ttl' });
  });
});

describe('result retention', () => {
  it('keeps a /runsync result 1 minute without a wait parameter', async () => {
    const { api } = endpoint('echo');
    const { body } = await api.runsync({ input: {} });
    emulator.control.advance(LIMITS.runSyncRetentionMs - 1);
    expect((await api.status(body.id)).status).toBe(200);
    emulator.control.advance(1);
    expect((await api.status(body.id)).status).toBe(404);
  });

  for (const [wait, retention] of [
    [1000, MINUTE],
    [200_000, 200_000],
    [300_000, 5 * MINUTE],
  ] as const) {
    it(`keeps a /runsync result ${retention} ms with wait=${wait}`, async () => {
      const { api } = endpoint('echo');
      const { body } = await api.runsync({ input: {} }, `?wait=${wait}`);
      emulator.control.advance(retention - 1);
      expect((await api.status(body.id)).status).toBe(200);
      emulator.control.advance(1);
      expect((await api.status(body.id)).status).toBe(404);
    });
  }

  it('keeps a /run result 30 minutes after completion, not after submission', async () => {
    const { api } = endpoint();
    const job = await api.run({ input: { sleepMs: 10 * MINUTE } });
    emulator.control.advance(10 * MINUTE);
    expect((await api.status(job.body.id)).body.status).toBe('COMPLETED');
    emulator.control.advance(30 * MINUTE - 1);
    expect((await api.status(job.body.id)).status).toBe(200);
    emulator.control.advance(1);
    expect((await api.status(job.body.id)).status).toBe(404);
    expect(emulator.control.job(job.body.id)?.expired).toBe(true);
  });

  it('drops finished jobs from memory once their results expire', async () => {
    const { id, api } = endpoint('echo');
    await Promise.all(Array.from({ length: 50 }, (_, i) => api.run({ input: { i } })));
    emulator.control.advance(0);
    expect(emulator.control.jobs(id)).toHaveLength(50);
    emulator.control.advance(30 * MINUTE);
    expect(emulator.control.jobs(id)).toHaveLength(0);
  });
});

describe('request body validation', () => {
  const bad: Array<[string, unknown]> = [
    ['no input', {}],
    ['input is an array', { input: [1, 2] }],
    ['input is a string', { input: 'hello' }],
    ['input is null', { input: null }],
    ['webhook is not a URL', { input: {}, webhook: 'not a url' }],
    ['webhook is not http(s)', { input: {}, webhook: 'ftp://example.com/hook' }],
    [
      's3Config lacks bucketName',
      { input: {}, s3Config: { accessId: 'a', accessSecret: 'b', endpointUrl: 'c' } },
    ],
    ['body is an array', [{ input: {} }]],
  ];
  for (const [what, body] of bad) {
    it(`answers 400 when ${what}`, async () => {
      const { id, api } = endpoint();
      const result = await api.run(body);
      expect(result.status).toBe(400);
      expect(result.body).toEqual({ error: expect.any(String) });
      expect(emulator.control.submissions(id)).toBe(0);
    });
  }

  it('answers 400 for malformed JSON, a non-JSON content type and an empty body', async () => {
    const { api } = endpoint();
    expect((await post(`${api.base}/run`, '{"input": {')).status).toBe(400);
    const text = await http('POST', `${api.base}/run`, {
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'text/plain' },
      body: '{"input":{}}',
    });
    expect(text.status).toBe(400);
    expect(text.body.error).toMatch(/application\/json/);
    expect((await post(`${api.base}/run`, '')).status).toBe(400);
  });

  it('accepts s3Config with the four fields and passes extra members through', async () => {
    const { api } = endpoint();
    const s3Config = {
      accessId: 'a',
      accessSecret: 'b',
      bucketName: 'c',
      endpointUrl: 'https://s3',
      objectPath: 'p',
    };
    expect((await api.run({ input: {}, s3Config })).status).toBe(200);
  });
});
