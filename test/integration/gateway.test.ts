import { createServer } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskLooks, HELD_MS } from '../../activities/task-looks';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { createLogger } from '../../worker/logger';
import { signWebhookToken, webhookExpiry, webhookUrlFor } from '../../worker/webhook-token';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';
import { receivedWebhooksQuery, webhookReceiver } from '../support/workflows/webhook-receiver';
import { captureLines } from '../worker/capture';

const SECRET = 'gateway-test-secret-0123456789abcdefgh';
const OLD_SECRET = 'gateway-test-old-secret-0123456789abcd';
const OTHER_SECRET = 'gateway-test-unknown-secret-0123456789';

type Answer = { status: number; body: string; headers: Record<string, string | string[] | undefined> };

async function post(
  url: string,
  body: string | Buffer | Readable,
  contentType = 'application/json',
): Promise<Answer> {
  const response = await request(url, { method: 'POST', body, headers: { 'content-type': contentType } });
  return { status: response.statusCode, body: await response.body.text(), headers: response.headers };
}

const statusBody = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    status: 'COMPLETED',
    delayTime: 12,
    executionTime: 340,
    output: { text: 'x'.repeat(2000) },
    ...extra,
  });

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

describe('webhook gateway (real HTTP, real dev server)', () => {
  let env: TestWorkflowEnvironment;
  let worker: Worker;
  let workerRun: Promise<void>;
  let gateway: WebhookGateway;
  // On a clock that stands still: what the gateway noted, whenever the test reads it.
  const taskLooks = createTaskLooks(() => 0);
  const logs = captureLines();
  const taskQueue = uniqueTaskQueue('gateway');

  const startReceiver = (count = 1, workflowId = uniqueTaskQueue('receiver')) =>
    env.client.workflow.start(webhookReceiver, { taskQueue, workflowId, args: [{ count }] });
  const urlFor = (workflowId: string, secret = SECRET) => webhookUrlFor(gateway.url, secret, workflowId);

  beforeAll(async () => {
    env = await devServerEnv();
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: path.resolve(__dirname, '../support/workflows'),
    });
    workerRun = worker.run();
    gateway = await startWebhookGateway({
      client: env.client,
      secrets: [SECRET, OLD_SECRET],
      taskLooks,
      logger: createLogger({ level: 'debug', secrets: [SECRET, OLD_SECRET], destination: logs }),
    });
  });

  afterAll(async () => {
    await gateway?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await workerRun;
    await env?.teardown();
  });

  it('answers /healthz', async () => {
    const response = await request(`${gateway.url}/healthz`);
    expect(response.statusCode).toBe(200);
    expect(await response.body.json()).toEqual({ status: 'ok' });
  });

  it('signals the workflow with the job id and status only, and answers 200', async () => {
    const handle = await startReceiver();
    const answer = await post(urlFor(handle.workflowId), statusBody('job-1-u1', { unknownField: true }));
    expect(answer.status).toBe(200);
    // The output (and every other field) stayed out of the signal, so out of history.
    expect(await handle.result()).toEqual([{ jobId: 'job-1-u1', status: 'COMPLETED' }]);
    // The workflow looks at the end itself: a poller here leaves the job to it a moment.
    expect(taskLooks.heldUntil('job-1-u1')).toBe(HELD_MS);
  });

  it('accepts any content type and a status it does not know', async () => {
    const handle = await startReceiver();
    const answer = await post(
      urlFor(handle.workflowId),
      JSON.stringify({ id: 'job-2', status: 'SOMETHING_NEW' }),
      'text/plain',
    );
    expect(answer.status).toBe(200);
    expect(await handle.result()).toEqual([{ jobId: 'job-2', status: 'SOMETHING_NEW' }]);
    // Not an end: a poller answers it as ever.
    expect(taskLooks.heldUntil('job-2')).toBeUndefined();
  });

  it('refuses a bad, missing, repeated or forged token with 401 and signals nothing', async () => {
    const handle = await startReceiver();
    const { workflowId } = handle;
    const victim = await startReceiver();
    const exp = webhookExpiry(undefined);
    const good = signWebhookToken(SECRET, workflowId, { expiresAt: exp });
    const base = `${gateway.url}/webhooks/${encodeURIComponent(workflowId)}`;
    const refused = [
      `${base}?token=${good.slice(0, -2)}xx`,
      `${base}?token=`,
      base,
      `${base}?token=${good}&token=${good}`,
      `${base}?tok=${good}`,
      urlFor(workflowId, OTHER_SECRET),
      // A valid token of one workflow does not open another's webhook.
      `${gateway.url}/webhooks/${encodeURIComponent(victim.workflowId)}?token=${good}&exp=${exp}`,
      // The expiry is covered by the token: a later one does not verify, nor does a token naming an item.
      `${base}?token=${good}&exp=${exp + 3600}`,
      `${base}?token=${good}&exp=${exp}&item=3`,
      // An expired token, correctly signed, is refused.
      `${base}?token=${signWebhookToken(SECRET, workflowId, { expiresAt: 1 })}&exp=1`,
    ];
    for (const url of refused) {
      const answer = await post(url, statusBody('job-forged'));
      expect(answer.status, url).toBe(401);
      expect(answer.body).not.toContain(good);
    }
    expect(await handle.query(receivedWebhooksQuery)).toEqual([]);
    expect(await victim.query(receivedWebhooksQuery)).toEqual([]);
    await post(urlFor(workflowId), statusBody('job-real'));
    await post(urlFor(victim.workflowId), statusBody('job-real-2'));
    expect(await handle.result()).toEqual([{ jobId: 'job-real', status: 'COMPLETED' }]);
    expect(await victim.result()).toEqual([{ jobId: 'job-real-2', status: 'COMPLETED' }]);
  });

  it('answers 400 to a malformed body and signals nothing', async () => {
    const handle = await startReceiver();
    const url = urlFor(handle.workflowId);
    const malformed = [
      '{"id": "job-1", "status": ',
      '',
      'null',
      '[]',
      '"COMPLETED"',
      JSON.stringify({ status: 'COMPLETED' }),
      JSON.stringify({ id: 'job-1' }),
      JSON.stringify({ id: 7, status: 'COMPLETED' }),
      JSON.stringify({ id: 'job-1', status: { value: 'COMPLETED' } }),
      JSON.stringify({ id: '', status: 'COMPLETED' }),
    ];
    for (const body of malformed) {
      const answer = await post(url, body);
      expect(answer.status, body).toBe(400);
    }
    expect(await handle.query(receivedWebhooksQuery)).toEqual([]);
    await post(url, statusBody('job-ok'));
    expect(await handle.result()).toEqual([{ jobId: 'job-ok', status: 'COMPLETED' }]);
  });

  it('answers 413 to a body over the limit, with or without a content length', async () => {
    const small = await startWebhookGateway({
      client: env.client,
      secrets: [SECRET],
      bodyLimitBytes: 4096,
      logger: createLogger({ secrets: [SECRET], destination: logs }),
    });
    try {
      const handle = await startReceiver();
      const url = webhookUrlFor(small.url, SECRET, handle.workflowId);
      const big = statusBody('job-big', { output: 'y'.repeat(8192) });
      expect((await post(url, big)).status).toBe(413);
      // Chunked: the gateway has to count while it reads.
      expect((await post(url, Readable.from([big.slice(0, 3000), big.slice(3000)]))).status).toBe(413);
      expect(await handle.query(receivedWebhooksQuery)).toEqual([]);
      expect((await post(url, statusBody('job-small'))).status).toBe(200);
      expect(await handle.result()).toEqual([{ jobId: 'job-small', status: 'COMPLETED' }]);
    } finally {
      await small.close();
    }
  });

  it('takes bodies up to 16 MiB by default', async () => {
    const handle = await startReceiver();
    const nearLimit = statusBody('job-large', { output: 'z'.repeat(16 * 1024 * 1024 - 200) });
    expect((await post(urlFor(handle.workflowId), nearLimit)).status).toBe(200);
    expect(await handle.result()).toEqual([{ jobId: 'job-large', status: 'COMPLETED' }]);
    const overLimit = statusBody('job-too-large', { output: 'z'.repeat(16 * 1024 * 1024) });
    expect((await post(urlFor(uniqueTaskQueue('any')), overLimit)).status).toBe(413);
  });

  it('answers 200 for an unknown workflow and for a closed one: late calls are harmless', async () => {
    expect((await post(urlFor(uniqueTaskQueue('never-started')), statusBody('job-x'))).status).toBe(200);
    const handle = await startReceiver();
    expect((await post(urlFor(handle.workflowId), statusBody('job-late'))).status).toBe(200);
    await handle.result();
    // The service's retries of a call that already got through, after the workflow ended.
    expect((await post(urlFor(handle.workflowId), statusBody('job-late'))).status).toBe(200);
    expect((await post(urlFor(handle.workflowId), statusBody('job-late'))).status).toBe(200);
  });

  it('passes duplicates on as they come: each is a hint, and each gets 200', async () => {
    const handle = await startReceiver(2);
    const url = urlFor(handle.workflowId);
    const answers = await Promise.all([post(url, statusBody('job-dup')), post(url, statusBody('job-dup'))]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(await handle.result()).toEqual([
      { jobId: 'job-dup', status: 'COMPLETED' },
      { jobId: 'job-dup', status: 'COMPLETED' },
    ]);
    // A burst at a workflow that wants one: those that land after it closed are still 200, and
    // those that land in its last task are simply more copies of the same hint.
    const single = await startReceiver(1);
    const burst = await Promise.all(
      Array.from({ length: 5 }, () => post(urlFor(single.workflowId), statusBody('job-burst'))),
    );
    expect(burst.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    // How many copies land before it closes is the server's timing; what it returns is exactly the
    // signals its history holds (at least the one it waited for, at most the five sent), each the
    // hint as posted.
    const received = await single.result();
    const { events } = await single.fetchHistory();
    const signalled = (events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes).length;
    expect(signalled).toBeGreaterThanOrEqual(1);
    expect(signalled).toBeLessThanOrEqual(burst.length);
    expect(received).toEqual(
      Array.from({ length: signalled }, () => ({ jobId: 'job-burst', status: 'COMPLETED' })),
    );
  });

  it('accepts URLs signed with a previous secret during a rotation, and not after it', async () => {
    const handle = await startReceiver(2);
    expect((await post(urlFor(handle.workflowId, OLD_SECRET), statusBody('job-old'))).status).toBe(200);
    expect((await post(urlFor(handle.workflowId, SECRET), statusBody('job-new'))).status).toBe(200);
    expect(await handle.result()).toEqual([
      { jobId: 'job-old', status: 'COMPLETED' },
      { jobId: 'job-new', status: 'COMPLETED' },
    ]);

    const rotated = await startWebhookGateway({
      client: env.client,
      secrets: [SECRET],
      logger: createLogger({ secrets: [SECRET], destination: logs }),
    });
    try {
      const later = await startReceiver();
      expect(
        (await post(webhookUrlFor(rotated.url, OLD_SECRET, later.workflowId), statusBody('job-old'))).status,
      ).toBe(401);
      expect(
        (await post(webhookUrlFor(rotated.url, SECRET, later.workflowId), statusBody('job-new'))).status,
      ).toBe(200);
      expect(await later.result()).toEqual([{ jobId: 'job-new', status: 'COMPLETED' }]);
    } finally {
      await rotated.close();
    }
  });

  it('routes workflow ids that need encoding', async () => {
    const workflowId = `batch/7 job?&#%ü-${uniqueTaskQueue('odd')}`;
    const handle = await startReceiver(1, workflowId);
    expect((await post(urlFor(workflowId), statusBody('job-odd'))).status).toBe(200);
    expect(await handle.result()).toEqual([{ jobId: 'job-odd', status: 'COMPLETED' }]);
  });

  it('answers 503 when Temporal cannot be reached, so the service retries', async () => {
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const outage = await startWebhookGateway({
      client: new Client({ connection }),
      secrets: [SECRET],
      signalTimeoutMs: 300,
      logger: createLogger({ secrets: [SECRET], destination: logs }),
    });
    try {
      const answer = await post(
        webhookUrlFor(outage.url, SECRET, 'wf-during-outage'),
        statusBody('job-outage'),
      );
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBe('10');
      expect(logs.text()).toContain('Temporal unavailable');
    } finally {
      await outage.close();
      await connection.close();
    }
  });

  it('never logs a token or a secret', async () => {
    const handle = await startReceiver();
    const token = signWebhookToken(SECRET, handle.workflowId, { expiresAt: webhookExpiry(undefined) });
    await post(`${gateway.url}/no-such-route?token=${token}`, '{}');
    await post(`${gateway.url}/webhooks/${handle.workflowId}?token=${token}x`, statusBody('job-bad'));
    await post(urlFor(handle.workflowId), '{');
    await post(urlFor(handle.workflowId), statusBody('job-logged'));
    await handle.result();

    const text = logs.text();
    expect(text).toContain('webhook delivered');
    expect(text).toContain('webhook refused');
    expect(text).toContain('webhook body malformed');
    expect(text).toContain(handle.workflowId);
    for (const secret of [SECRET, OLD_SECRET, token, encodeURIComponent(SECRET)]) {
      expect(text).not.toContain(secret);
    }
    // Nor any other token handed out in this file: no line carries a token= value at all.
    expect(text).not.toMatch(/token=(?!\[REDACTED\])[A-Za-z0-9_-]/);
  });
});
