/**
 * The gateway and a batch's webhooks: it asks the batch (a query, no history event) whether a job's
 * webhook is worth a signal. A batch answers 'wait' for a job whose page has not answered yet; the
 * gateway asks again after short pauses and signals only a possible orphan, the hints of the moment
 * gathered into one signal (worker/batch-hint-signals.ts). The Temporal client is a
 * stand-in that answers the query from a script and records signals; the gateway serves real HTTP.
 */
import type { Client } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createBatchJobReports } from '../../activities/batch-job-reports';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { webhookExpiry, webhookUrlFor } from '../../worker/webhook-token';
import type { BatchHintAnswer } from '../../workflows/batch/batch-definitions';

const SECRET = 'webhook-secret-0123456789abcdefghijkl';

function scriptedClient(answers: BatchHintAnswer[]) {
  const asked: unknown[] = [];
  const signals: unknown[] = [];
  const handle = {
    async query(_query: unknown, arg: unknown) {
      asked.push(arg);
      return answers[Math.min(asked.length, answers.length) - 1];
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

  async function post(
    client: Client,
    item: number,
    jobId = 'job-7',
    batchJobReports?: ReturnType<typeof createBatchJobReports>,
    stage?: string,
  ) {
    gateway ??= await startWebhookGateway({
      client,
      secrets: [SECRET],
      port: 0,
      ...(batchJobReports ? { batchJobReports } : {}),
    });
    const url = webhookUrlFor(gateway.url, SECRET, 'batch-1', {
      item,
      ...(stage === undefined ? {} : { stage }),
      expiresAt: webhookExpiry(undefined),
    });
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: jobId, status: 'COMPLETED' }),
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
    expect(stand.signals).toEqual([{ hints: [{ jobId: 'job-7', status: 'COMPLETED', item: 3 }] }]);
  });

  it("passes a pipeline job's stage on, in the query and the signal", async () => {
    const stand = scriptedClient([true]);
    expect(await post(stand.client, 3, 'job-7', undefined, 'speak')).toBe(200);
    expect(stand.asked).toEqual([{ item: 3, stage: 'speak', jobId: 'job-7' }]);
    expect(stand.signals).toEqual([
      { hints: [{ jobId: 'job-7', status: 'COMPLETED', item: 3, stage: 'speak' }] },
    ]);
  });

  it('gathers the orphans reported at once into one signal, and answers each webhook 200 once it is sent', async () => {
    const stand = scriptedClient([true]);
    gateway = await startWebhookGateway({ client: stand.client, secrets: [SECRET], port: 0 });
    const answers = await Promise.all([post(stand.client, 3, 'job-7'), post(stand.client, 4, 'job-8')]);
    expect(answers).toEqual([200, 200]);
    expect(stand.signals).toHaveLength(1);
    const [signal] = stand.signals as Array<{ hints: Array<{ jobId: string; item: number }> }>;
    expect(signal?.hints.map((hint) => [hint.item, hint.jobId]).sort()).toEqual([
      [3, 'job-7'],
      [4, 'job-8'],
    ]);
  });

  it("signals when the batch still says 'wait' after the last pause (a hint too many is harmless)", async () => {
    const stand = scriptedClient(['wait']);
    expect(await post(stand.client, 3)).toBe(200);
    expect(stand.asked.length).toBeGreaterThan(2);
    expect(stand.signals).toEqual([{ hints: [{ jobId: 'job-7', status: 'COMPLETED', item: 3 }] }]);
  });

  it('asks the service to call again, but for its last try, for a job a submit here created', async () => {
    const stand = scriptedClient(['wait', true]);
    const reports = createBatchJobReports();
    reports.created('job-7');
    expect(await post(stand.client, 3, 'job-7', reports)).toBe(503);
    expect(await post(stand.client, 3, 'job-7', reports)).toBe(503);
    expect(stand.asked).toEqual([]);
    expect(stand.signals).toEqual([]);
    // The service's last try (its page still unanswered): the batch decides.
    expect(await post(stand.client, 3, 'job-7', reports)).toBe(200);
    expect(stand.asked).toHaveLength(2);
    expect(stand.signals).toEqual([{ hints: [{ jobId: 'job-7', status: 'COMPLETED', item: 3 }] }]);
  });
});
