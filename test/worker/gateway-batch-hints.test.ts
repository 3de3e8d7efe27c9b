/**
 * The gateway and a batch's webhooks: it asks the batch (a query, no history event) whether a job's
 * webhook is worth a signal. A batch answers 'wait' for a job whose page has not answered yet; the
 * gateway asks again after short pauses and signals only a possible orphan; a job still 'wait' then
 * gets a 503 once (the service calls again in 10 s, when its page has answered), and a signal on
 * the next call. The Temporal client is a
 * stand-in that answers the query from a script and records signals; the gateway serves real HTTP.
 */
import type { Client } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createDeferrals, startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { webhookUrlFor } from '../../worker/webhook-token';
import type { BatchHintAnswer } from '../../workflows/batch-definitions';

const SECRET = 'webhook-secret-0123456789abcdefghijkl';

function scriptedClient(answers: Array<BatchHintAnswer | Error>) {
  const asked: unknown[] = [];
  const signals: unknown[] = [];
  const handle = {
    async query(_query: unknown, arg: unknown) {
      asked.push(arg);
      const answer = answers[Math.min(asked.length, answers.length) - 1];
      if (answer instanceof Error) throw answer;
      return answer;
    },
    async signal(_signal: unknown, payload: unknown) {
      signals.push(payload);
    },
  };
  const client = {
    workflow: { getHandle: () => handle },
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
  } as unknown as Client;
  return { client, asked, signals };
}

describe('gateway: a batch job webhook', () => {
  let gateway: WebhookGateway | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  async function post(client: Client, item: number) {
    gateway ??= await startWebhookGateway({ client, secrets: [SECRET], port: 0 });
    const url = `${webhookUrlFor(gateway.url, SECRET, 'batch-1')}&item=${item}`;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'job-7', status: 'COMPLETED' }),
    });
    return response.status;
  }

  it("asks again while the batch says 'wait', and signals nothing once the job is known", async () => {
    const stand = scriptedClient(['wait', 'wait', false]);
    expect(await post(stand.client, 3)).toBe(200);
    expect(stand.asked).toEqual([
      { item: 3, jobId: 'job-7' },
      { item: 3, jobId: 'job-7' },
      { item: 3, jobId: 'job-7' },
    ]);
    expect(stand.signals).toEqual([]);
  });

  it('signals once the batch says the job may be an orphan', async () => {
    const stand = scriptedClient(['wait', true]);
    expect(await post(stand.client, 3)).toBe(200);
    expect(stand.asked).toHaveLength(2);
    expect(stand.signals).toEqual([{ jobId: 'job-7', status: 'COMPLETED', item: 3 }]);
  });

  it("still 'wait' after the last pause: a 503 on the first call, a signal on the service's retry", async () => {
    const stand = scriptedClient(['wait']);
    expect(await post(stand.client, 3)).toBe(503);
    const askedFirst = stand.asked.length;
    expect(askedFirst).toBeGreaterThan(2);
    expect(stand.signals).toEqual([]);
    // The service's retry: deferred once already, so signalled (a hint too many is harmless).
    expect(await post(stand.client, 3)).toBe(200);
    expect(stand.asked.length).toBeGreaterThan(askedFirst);
    expect(stand.signals).toEqual([{ jobId: 'job-7', status: 'COMPLETED', item: 3 }]);
  });

  it('a deferred job whose page has answered by the retry costs no signal', async () => {
    const stand = scriptedClient(['wait', 'wait', 'wait', 'wait', 'wait', false]);
    expect(await post(stand.client, 3)).toBe(503);
    expect(await post(stand.client, 3)).toBe(200);
    expect(stand.signals).toEqual([]);
  });
});

describe('gateway: a batch that does not answer the query', () => {
  let gateway: WebhookGateway | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  it('defers the first call like a wait, and signals on the next', async () => {
    const stand = scriptedClient([new Error('query timed out: the worker is busy')]);
    gateway = await startWebhookGateway({ client: stand.client, secrets: [SECRET], port: 0 });
    const url = `${webhookUrlFor(gateway.url, SECRET, 'batch-1')}&item=4`;
    const call = () =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'job-9', status: 'COMPLETED' }),
      }).then((response) => response.status);
    expect(await call()).toBe(503);
    expect(stand.signals).toEqual([]);
    expect(await call()).toBe(200);
    expect(stand.signals).toEqual([{ jobId: 'job-9', status: 'COMPLETED', item: 4 }]);
  });
});

describe('gateway: the memory of deferred webhooks', () => {
  it('defers a job once, and forgets it after a minute', () => {
    let now = 0;
    const deferrals = createDeferrals(() => now);
    expect(deferrals.deferOnce('a')).toBe(true);
    expect(deferrals.deferOnce('a')).toBe(false);
    now = 30_000;
    expect(deferrals.deferOnce('b')).toBe(true);
    expect(deferrals.deferOnce('a')).toBe(false);
    // A minute on, 'a' is forgotten (the service has made its last call about it); 'b' is not yet.
    now = 61_000;
    expect(deferrals.deferOnce('a')).toBe(true);
    expect(deferrals.deferOnce('b')).toBe(false);
  });

  it('is bounded: past its room it defers nothing', () => {
    const deferrals = createDeferrals(() => 0);
    let deferred = 0;
    for (let k = 0; k < 100_001; k++) if (deferrals.deferOnce(`job-${k}`)) deferred++;
    expect(deferred).toBe(100_000);
  });
});
