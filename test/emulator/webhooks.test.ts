import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../emulator';
import { jobsApi, KEY, startTestEmulator, waitFor } from './helpers';

// Job webhooks: a POST of the /status body when the job finishes; when the receiver does not answer
// 200, two more tries 10 seconds (service time) apart; injected loss, duplication and delay.

interface Received {
  body: unknown;
  contentType: string | undefined;
  method: string | undefined;
}

let emulator: Emulator;
let receiver: Server;
let receiverUrl: string;
let received: Received[] = [];
/** Statuses the receiver answers, in order; 200 once exhausted. */
let answers: number[] = [];

function endpoint(templateId = 'scripted') {
  const state = emulator.control.createEndpoint(KEY, {
    name: `webhooks-${Math.random()}`,
    templateId,
    workersMin: 1,
    flashBootType: 'FLASHBOOT',
  });
  emulator.control.advance(500);
  return jobsApi(emulator, state.id);
}

const deliveriesOf = (jobId: string) => emulator.control.webhookDeliveries().filter((d) => d.jobId === jobId);

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let data = '';
    req.on('data', (chunk) => {
      data += chunk;
    });
    req.on('end', () => {
      received.push({ body: JSON.parse(data), contentType: req.headers['content-type'], method: req.method });
      res.statusCode = answers.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  emulator = await startTestEmulator({ timeScale: 1e-6 });
});
afterAll(async () => {
  await emulator.close();
  await new Promise((resolve) => receiver.close(resolve));
});
beforeEach(() => {
  emulator.control.reset();
  received = [];
  answers = [];
});
afterEach(() => emulator.control.reset());

describe('delivery', () => {
  it('POSTs the job /status body as JSON when the job completes; one try when the answer is 200', async () => {
    const api = endpoint();
    const job = await api.run({ input: { output: { answer: 42 } }, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => deliveriesOf(job.body.id).length === 1, 'the delivery');
    const status = await api.status(job.body.id);
    expect(received).toEqual([{ body: status.body, contentType: 'application/json', method: 'POST' }]);
    expect(status.body).toMatchObject({ status: 'COMPLETED', output: { answer: 42 } });
    expect(deliveriesOf(job.body.id)).toEqual([
      { jobId: job.body.id, url: receiverUrl, attempt: 1, httpStatus: 200, at: expect.any(Number) },
    ]);
  });

  for (const [state, input, policy] of [
    ['FAILED', { fail: 'bad' }, undefined],
    ['TIMED_OUT', { hang: true }, { executionTimeout: 5000 }],
  ] as const) {
    it(`is sent for a ${state} job too, with its error`, async () => {
      const api = endpoint();
      const job = await api.run({ input, webhook: receiverUrl, ...(policy ? { policy } : {}) });
      emulator.control.advance(0);
      emulator.control.advance(5000);
      await waitFor(() => received.length === 1, 'the webhook');
      expect(received[0]?.body).toMatchObject({ id: job.body.id, status: state, error: expect.any(String) });
    });
  }

  it('is sent for a cancelled job', async () => {
    const api = endpoint();
    const job = await api.run({ input: { hang: true }, webhook: receiverUrl });
    emulator.control.advance(0);
    await api.cancel(job.body.id);
    await waitFor(() => received.length === 1, 'the webhook');
    expect(received[0]?.body).toMatchObject({ id: job.body.id, status: 'CANCELLED' });
  });
});

describe('retries', () => {
  it('tries twice more, 10 seconds apart, when the receiver does not answer 200', async () => {
    answers = [500, 503, 404];
    const api = endpoint();
    const job = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => deliveriesOf(job.body.id).length === 1, 'the first try');
    emulator.control.advance(9999);
    expect(received).toHaveLength(1);
    emulator.control.advance(1);
    await waitFor(() => deliveriesOf(job.body.id).length === 2, 'the second try');
    emulator.control.advance(10_000);
    await waitFor(() => deliveriesOf(job.body.id).length === 3, 'the third try');
    emulator.control.advance(60_000);

    const tries = deliveriesOf(job.body.id);
    expect(tries.map((t) => [t.attempt, t.httpStatus])).toEqual([
      [1, 500],
      [2, 503],
      [3, 404],
    ]);
    expect(tries[1]!.at - tries[0]!.at).toBe(10_000);
    expect(tries[2]!.at - tries[1]!.at).toBe(10_000);
    expect(received).toHaveLength(3);
    expect(received[2]?.body).toEqual(received[0]?.body);
  });

  it('stops retrying once a try gets 200', async () => {
    answers = [500];
    const api = endpoint();
    const job = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => deliveriesOf(job.body.id).length === 1, 'the first try');
    emulator.control.advance(10_000);
    await waitFor(() => deliveriesOf(job.body.id).length === 2, 'the second try');
    emulator.control.advance(60_000);
    expect(deliveriesOf(job.body.id).map((t) => t.httpStatus)).toEqual([500, 200]);
  });

  it('counts an unreachable receiver as a failed try, with the network error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/hook`;
    await new Promise((resolve) => closed.close(resolve));

    const api = endpoint();
    const job = await api.run({ input: {}, webhook: deadUrl });
    emulator.control.advance(0);
    for (const n of [1, 2, 3]) {
      await waitFor(() => deliveriesOf(job.body.id).length === n, `try ${n}`);
      emulator.control.advance(10_000);
    }
    const tries = deliveriesOf(job.body.id);
    expect(tries).toHaveLength(3);
    for (const t of tries) {
      expect(t.httpStatus).toBeUndefined();
      expect(t.error).toEqual(expect.any(String));
    }
  });

  it('keeps the 10-second spacing in scaled time with a large time scale', async () => {
    const fast = await startTestEmulator({ timeScale: 2000 });
    try {
      answers = [500, 500, 500];
      const state = fast.control.createEndpoint(KEY, {
        name: 'fast',
        templateId: 'echo',
        flashBootType: 'FLASHBOOT',
      });
      const job = await jobsApi(fast, state.id).run({ input: {}, webhook: receiverUrl });
      await waitFor(() => fast.control.webhookDeliveries().length === 3, 'three tries');
      const tries = fast.control.webhookDeliveries();
      expect(tries.every((t) => t.jobId === job.body.id)).toBe(true);
      expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(10_000);
      expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(10_000);
    } finally {
      await fast.close();
    }
  });
});

describe('webhook faults', () => {
  it('lose: no call is made at all, the loss is recorded, and /status still has the result', async () => {
    emulator.control.webhookFaults({ lose: 1 });
    const api = endpoint();
    const job = await api.run({ input: { output: 'kept' }, webhook: receiverUrl });
    emulator.control.advance(0);
    emulator.control.advance(60_000);
    expect(deliveriesOf(job.body.id)).toEqual([
      expect.objectContaining({ attempt: 1, error: 'lost (injected fault)' }),
    ]);
    expect(received).toHaveLength(0);
    expect((await api.status(job.body.id)).body).toMatchObject({ status: 'COMPLETED', output: 'kept' });
  });

  it('duplicate: the receiver gets the same body twice', async () => {
    const remove = emulator.control.webhookFaults({ duplicate: 1 });
    const api = endpoint();
    const job = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => received.length === 2, 'two calls');
    expect(received[0]?.body).toEqual(received[1]?.body);
    await waitFor(() => deliveriesOf(job.body.id).length === 2, 'two records');
    expect(deliveriesOf(job.body.id).map((d) => d.duplicate ?? false)).toEqual([false, true]);
    remove();
    const next = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => deliveriesOf(next.body.id).length === 1, 'one call');
  });

  it('delayMs: the first try starts that much service time after the job finished', async () => {
    emulator.control.webhookFaults({ delayMs: 30_000 });
    const api = endpoint();
    const job = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    const finishedAt = emulator.control.job(job.body.id)!.finishedAt!;
    emulator.control.advance(29_999);
    expect(received).toHaveLength(0);
    emulator.control.advance(1);
    await waitFor(() => deliveriesOf(job.body.id).length === 1, 'the delayed try');
    expect(deliveriesOf(job.body.id)[0]!.at - finishedAt).toBe(30_000);
  });

  it('probability 0 never applies', async () => {
    emulator.control.webhookFaults({ lose: 0, duplicate: 0 });
    const api = endpoint();
    const job = await api.run({ input: {}, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => deliveriesOf(job.body.id).length === 1, 'the delivery');
    expect(received).toHaveLength(1);
  });
});

describe('the ttl and webhooks (a submit lease)', () => {
  it('a job deleted mid-run by its ttl stops running and never calls its webhook', async () => {
    const api = endpoint();
    const job = await api.run({
      input: { sleepMs: 30_000, output: 'never' },
      webhook: receiverUrl,
      policy: { ttl: 10_000 },
    });
    emulator.control.advance(5_000);
    expect((await api.status(job.body.id)).body.status).toBe('IN_PROGRESS');
    emulator.control.advance(5_000);
    expect((await api.status(job.body.id)).status).toBe(404);
    expect(emulator.control.job(job.body.id)).toMatchObject({
      deleted: true,
      removedReason: 'ttl',
      status: 'IN_PROGRESS',
    });
    // Long past the time it would have finished, and past every webhook retry: nothing ran on.
    emulator.control.advance(60_000);
    expect(emulator.control.job(job.body.id)).toMatchObject({ status: 'IN_PROGRESS', deleted: true });
    expect(deliveriesOf(job.body.id)).toEqual([]);
    expect(received).toHaveLength(0);
    // Its worker was released: the next job runs at once.
    const next = await api.run({ input: { output: 'next' }, webhook: receiverUrl });
    emulator.control.advance(0);
    await waitFor(() => received.length === 1, "the next job's webhook");
    expect(received[0]?.body).toMatchObject({ id: next.body.id, status: 'COMPLETED' });
  });

  it('a lease extended through /status?ttl= counts from submission: the job finishes and calls its webhook', async () => {
    const api = endpoint();
    const job = await api.run({
      input: { sleepMs: 30_000, output: 'kept' },
      webhook: receiverUrl,
      policy: { ttl: 10_000 },
    });
    emulator.control.advance(4_000);
    expect((await api.status(job.body.id, '?ttl=40000')).status).toBe(200);
    const { ttlDeadline, submittedAt } = emulator.control.job(job.body.id) as {
      ttlDeadline: number;
      submittedAt: number;
    };
    expect(ttlDeadline - submittedAt).toBe(40_000);
    emulator.control.advance(30_000);
    await waitFor(() => received.length === 1, 'the webhook');
    expect(received[0]?.body).toMatchObject({ id: job.body.id, status: 'COMPLETED', output: 'kept' });
    // 40 s after submission (not after the extension) the job is deleted.
    emulator.control.advance(40_000 - 34_000 - 1);
    expect((await api.status(job.body.id)).status).toBe(200);
    emulator.control.advance(1);
    expect((await api.status(job.body.id)).status).toBe(404);
  });
});
