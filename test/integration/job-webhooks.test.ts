/**
 * Webhooks on the real stack: the worker hands out per-workflow URLs of the gateway that runs
 * beside it (WEBHOOK_PUBLIC_URL is the gateway's loopback address), the emulator calls them, and
 * the workflow treats each call as a hint it confirms with /status. Lost, duplicated and forged
 * calls, and the orphan of a lost submit response adopted through its webhook.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, getJobSnapshot } from '../../client/jobs';
import { signWebhookToken, webhookExpiry, webhookUrlFor } from '../../worker/webhook-token';
import {
  eventually,
  FAST_POLLING,
  type JobStack,
  scheduledActivities,
  startJobStack,
} from '../support/integration';

/** Polling that never gets a say within a test: what finishes the job is the webhook. */
const SLOW_POLLING = { initialInterval: 60_000, maxInterval: 60_000, backoffCoefficient: 1 };

describe('job workflow webhooks (dev server, emulator over HTTP, real worker and gateway)', () => {
  let stack: JobStack;
  let removeFault: (() => void) | undefined;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'job-webhooks', timeScale: 100, webhooks: true });
  });
  afterEach(() => {
    removeFault?.();
    removeFault = undefined;
    stack.control.resume();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const deliveriesOf = (jobId: string) => stack.control.webhookDeliveries().filter((d) => d.jobId === jobId);

  async function post(url: string, body: unknown): Promise<number> {
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await response.body.dump();
    return response.statusCode;
  }

  async function signals(workflowId: string): Promise<number> {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
  }

  async function activities(workflowId: string): Promise<string[]> {
    return scheduledActivities(await stack.client.workflow.getHandle(workflowId).fetchHistory());
  }

  /** The workflow's local activities so far: the /status looks that confirm webhooks. */
  async function confirmations(workflowId: string): Promise<number> {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).filter((e) => e.markerRecordedEventAttributes).length;
  }

  it('lost (the service never calls): polling finishes the job', async () => {
    removeFault = stack.control.webhookFaults({ lose: 1 });
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: 'found by polling' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'found by polling', submissions: 1 });
    expect(stack.control.job(result.jobId)?.webhook).toContain('/webhooks/');
    expect(deliveriesOf(result.jobId)).toEqual([
      expect.objectContaining({ attempt: 1, error: 'lost (injected fault)' }),
    ]);
    expect(await signals(handle.workflowId)).toBe(0);
  });

  it('a job costs at most 20 history events, finished by its webhook or by polling', async () => {
    const eventsOf = async (workflowId: string) =>
      ((await stack.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).length;

    // By its webhook: service time stands still until the poller has looked once (then it sleeps a
    // minute), so only the webhook can tell the workflow that the job finished.
    stack.control.freeze();
    const hooked = await stack.start({
      endpointId: stack.endpoint(),
      request: { input: { sleepMs: 1_000, output: 'by webhook' } },
      polling: SLOW_POLLING,
    });
    const looked = await stack.snapshotWhen(hooked.workflowId, (s) => (s.live?.polls ?? 0) >= 1);
    expect(looked).toMatchObject({ status: 'IN_QUEUE', phase: 'waiting' });
    stack.control.advance(6_000); // the worker's cold start (5 s) and the run (1 s)
    expect(await awaitJob(stack.client, { job: hooked })).toMatchObject({
      output: 'by webhook',
      submissions: 1,
    });
    expect(await confirmations(hooked.workflowId)).toBe(1);
    const byWebhook = await eventsOf(hooked.workflowId);

    // By polling: every webhook is lost.
    stack.control.resume();
    removeFault = stack.control.webhookFaults({ lose: 1 });
    const polled = await stack.start({
      endpointId: stack.endpoint(),
      request: { input: { sleepMs: 1_000, output: 'by polling' } },
      polling: FAST_POLLING,
    });
    expect(await awaitJob(stack.client, { job: polled })).toMatchObject({
      output: 'by polling',
      submissions: 1,
    });
    expect(await signals(polled.workflowId)).toBe(0);
    const byPolling = await eventsOf(polled.workflowId);

    console.log(`INTEGRATION job history: ${byWebhook} events by webhook, ${byPolling} by polling`);
    expect(byWebhook).toBeLessThanOrEqual(20);
    expect(byPolling).toBeLessThanOrEqual(20);
  });

  it('duplicated (the service calls twice): harmless, one look at /status and one result', async () => {
    removeFault = stack.control.webhookFaults({ duplicate: 1 });
    const endpointId = stack.endpoint();
    // Service time stands still until the poller has had its one look (then sleeps a minute): the
    // job cannot finish before that look, so only the webhook can tell the workflow it did.
    stack.control.freeze();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000, output: 'once' } },
      polling: SLOW_POLLING,
    });
    const looked = await eventually(async () => {
      const snapshot = await getJobSnapshot(stack.client, {
        workflowId: handle.workflowId,
        live: true,
      }).catch(() => undefined);
      return snapshot?.live && snapshot.live.polls >= 1 ? snapshot : undefined;
    });
    expect(looked).toMatchObject({ status: 'IN_QUEUE', phase: 'waiting' });
    // Cold start (5 s) and the run (1 s): the job completes and the service calls twice.
    stack.control.advance(6_000);
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({ output: 'once', submissions: 1, jobIds: [result.jobId] });
    expect(stack.control.submissions(endpointId)).toBe(1);
    // Both calls were answered 200 (the second one perhaps after the workflow had closed).
    const deliveries = await eventually(() => {
      const list = deliveriesOf(result.jobId);
      return list.length === 2 ? list : undefined;
    });
    expect(deliveries.map((d) => d.httpStatus)).toEqual([200, 200]);
    expect(deliveries.filter((d) => d.duplicate)).toHaveLength(1);
    // The webhook finished the job (the poller was asleep), with a single confirmation, a local
    // activity (the submit lease's extension is made by the submit activity itself, right after
    // the id arrived).
    expect(await signals(handle.workflowId)).toBeGreaterThanOrEqual(1);
    expect(await confirmations(handle.workflowId)).toBe(1);
    expect((await activities(handle.workflowId)).filter((name) => name === 'fetchJobStatus')).toHaveLength(0);
    const history = await handle.fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowExecutionCompletedEventAttributes)).toHaveLength(1);
  });

  it('forged: a bad token gets 401 and changes nothing; a signed claim is never trusted without /status', async () => {
    const endpointId = stack.endpoint();
    // An hour of service time, on a frozen clock: it finishes when the test moves the clock.
    stack.control.freeze();
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 3_600_000, output: 'genuine' }, policy: { executionTimeout: 7_200_000 } },
      polling: FAST_POLLING,
      // The workflow records the start, so a claim's look that finds it running changes nothing.
      recordStart: true,
    });
    const { workflowId } = handle;
    await eventually(() => stack.control.jobs(endpointId).length === 1);
    stack.control.advance(5_000); // the worker's cold start: the job runs
    const running = await stack.snapshotWhen(workflowId, (s) => s.status === 'IN_PROGRESS');
    const jobId = running.jobId as string;
    const gateway = stack.gatewayUrl as string;
    const secret = stack.webhookSecret as string;
    const claim = { id: jobId, status: 'COMPLETED', output: 'forged' };

    // Bad tokens: made up, signed with another secret, or signed for another workflow.
    const base = `${gateway}/webhooks/${encodeURIComponent(workflowId)}`;
    const otherSecret = randomBytes(32).toString('base64url');
    expect(await post(`${base}?token=forged`, claim)).toBe(401);
    const exp = webhookExpiry(undefined);
    const expiresAt = { expiresAt: exp };
    expect(
      await post(`${base}?token=${signWebhookToken(otherSecret, workflowId, expiresAt)}&exp=${exp}`, claim),
    ).toBe(401);
    expect(
      await post(
        `${base}?token=${signWebhookToken(secret, `${workflowId}-other`, expiresAt)}&exp=${exp}`,
        claim,
      ),
    ).toBe(401);
    expect(await post(base, claim)).toBe(401);
    expect(await signals(workflowId)).toBe(0);
    expect((await stack.snapshotWhen(workflowId, () => true)).webhooks).toBe(0);

    // A valid token naming another job: noted as a stray, not even looked up.
    const genuineUrl = webhookUrlFor(gateway, secret, workflowId);
    const strayId = '00000000-0000-4000-8000-000000000000-u1';
    expect(await post(genuineUrl, { id: strayId, status: 'COMPLETED' })).toBe(200);
    const afterStray = await stack.snapshotWhen(workflowId, (s) => s.strayJobIds.includes(strayId));
    expect(afterStray).toMatchObject({ status: 'IN_PROGRESS', phase: 'waiting', jobId, webhooks: 1 });
    // No /status look so far (the submit extended its lease itself): the stray was not looked up.
    expect(await confirmations(workflowId)).toBe(0);

    // A valid token and the right job, claiming COMPLETED while it runs: /status says otherwise.
    expect(await post(genuineUrl, claim)).toBe(200);
    // The workflow looked at /status (its local activity's marker) before the snapshot is read.
    await eventually(async () => (await confirmations(workflowId)) === 1);
    const afterClaim = await stack.snapshotWhen(workflowId, (s) => s.webhooks === 2);
    expect(afterClaim).toMatchObject({ status: 'IN_PROGRESS', phase: 'waiting', jobId });
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(stack.control.job(jobId)?.status).toBe('IN_PROGRESS');

    // The job really finishes: the result is the service's output, not the forged one.
    stack.control.advance(3_600_000);
    const result = await awaitJob(stack.client, { job: handle });
    expect(result).toMatchObject({ jobId, output: 'genuine', submissions: 1 });
  });

  it('a lost submit response: with uncertainSubmitWait, the orphan job is adopted through its webhook', async () => {
    const endpointId = stack.endpoint();
    stack.control.injectFault({ operation: 'run', endpointId, kind: 'drop-after', times: 1 });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 2_000, output: 'adopted' } },
      onUncertainSubmit: 'fail',
      uncertainSubmitWait: '1 minute',
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const jobs = stack.control.jobs(endpointId);
    expect(jobs).toHaveLength(1);
    expect(stack.control.submissions(endpointId)).toBe(1);
    expect(result).toMatchObject({
      output: 'adopted',
      jobId: jobs[0]?.id,
      jobIds: [jobs[0]?.id],
      submissions: 1,
      uncertainSubmits: 1,
    });
    const snapshot = await stack.snapshotWhen(handle.workflowId, () => true);
    expect(snapshot).toMatchObject({ adopted: true, phase: 'completed', uncertainSubmits: 1 });
    expect(await signals(handle.workflowId)).toBeGreaterThanOrEqual(1);
  });
});
