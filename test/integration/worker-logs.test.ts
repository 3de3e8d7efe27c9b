/**
 * The worker's logs during real jobs, at debug level: the real entry point (`npm run worker`,
 * worker/main.ts) in a child process with LOG_LEVEL=debug, its gateway behind a relay, jobs that
 * complete (by webhook), fail, meet a 5xx, lose their submit answer, and forged webhooks. Every line
 * it printed is searched for the API key and the webhook secret (and the per-workflow tokens).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob } from '../../client/jobs';
import { signWebhookToken } from '../../worker/webhook-token';
import { eventually, FAST_POLLING, type JobStack, spawnWorker, startJobStack } from '../support/integration';
import { type Relay, startRelay } from '../support/relay';
import { uniqueTaskQueue } from '../support/temporal';

describe("the worker's logs at debug level (dev server, emulator over HTTP, worker process)", () => {
  let stack: JobStack;
  let relay: Relay;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'worker-logs', timeScale: 100, worker: false });
    relay = await startRelay();
  });
  afterAll(async () => {
    await relay?.close();
    await stack?.close();
  });

  it('never show the API key, the webhook secret or a webhook token', async () => {
    const taskQueue = uniqueTaskQueue('worker-logs');
    const secret = randomBytes(32).toString('base64url');
    const { TEMPORAL_ADDRESS: _address, ...service } = stack.workerEnv;
    const worker = spawnWorker({
      ...service,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_PORT: '0',
      WEBHOOK_PUBLIC_URL: relay.url,
      WEBHOOK_SECRET: secret,
      LOG_LEVEL: 'debug',
    });
    const workflowIds: string[] = [];
    const jobIds: string[] = [];
    try {
      await worker.running;
      relay.target = worker.gatewayUrl();
      const run = async (input: Parameters<JobStack['start']>[0]) => {
        const handle = await stack.start({ polling: FAST_POLLING, ...input }, { taskQueue });
        workflowIds.push(handle.workflowId);
        return handle;
      };

      // Completes; the webhook comes in through the gateway.
      const completedEndpoint = stack.endpoint();
      const completed = await awaitJob(stack.client, {
        job: await run({
          endpointId: completedEndpoint,
          request: { input: { sleepMs: 1_000, output: 'fine' } },
        }),
      });
      jobIds.push(completed.jobId);
      await eventually(() =>
        stack.control.webhookDeliveries().some((d) => d.jobId === completed.jobId && d.httpStatus === 200),
      );

      // Fails (the workflow's failure is logged), after a 500 on /status (the activity's retry is).
      const failingEndpoint = stack.endpoint();
      stack.control.injectFault({
        operation: 'status',
        endpointId: failingEndpoint,
        kind: 'status',
        httpStatus: 500,
        times: 1,
      });
      const failing = await run({
        endpointId: failingEndpoint,
        request: { input: { sleepMs: 500, fail: 'CUDA out of memory' } },
      });
      await expect(awaitJob(stack.client, { job: failing })).rejects.toThrow();

      // The answer to a submit is lost: an uncertain submit, logged as such; under the submit lease
      // (on by default with webhooks) the orphan reports itself by webhook and is adopted.
      const lostEndpoint = stack.endpoint();
      stack.control.injectFault({ operation: 'run', endpointId: lostEndpoint, kind: 'drop-after', times: 1 });
      const lost = await run({ endpointId: lostEndpoint, request: { input: { sleepMs: 500 } } });
      await expect(awaitJob(stack.client, { job: lost })).resolves.toMatchObject({
        status: 'COMPLETED',
        uncertainSubmits: 1,
        uncertainAdopted: 1,
        submissions: 1,
      });

      // Forged webhooks: refused, and logged as refused.
      for (const token of [
        'forged',
        signWebhookToken(randomBytes(32).toString('base64url'), completed.jobId, { expiresAt: 1 }),
      ]) {
        const forged = await request(
          `${relay.url}/webhooks/${encodeURIComponent(workflowIds[0] as string)}?token=${token}`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"id":"x","status":"COMPLETED"}',
          },
        );
        expect(forged.statusCode).toBe(401);
        await forged.body.dump();
      }
    } finally {
      // A graceful stop, so that every line is written before the output is read.
      if (worker.child.exitCode === null) {
        const exited = once(worker.child, 'exit');
        worker.child.kill('SIGTERM');
        await exited;
      }
    }

    const output = worker.output();
    const lines = output
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    // Debug was on and the lines are about these jobs: what is searched below is the real thing.
    expect(lines.some((line) => line.level === 20)).toBe(true);
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining(['worker running', 'webhook delivered', 'webhook refused', 'worker stopped']),
    );
    expect(output).toContain(jobIds[0]);
    for (const workflowId of workflowIds) expect(output).toContain(workflowId);

    // The tokens the jobs really carried, read from the URLs the service was given.
    const tokens = jobIds.flatMap((id) => {
      const url = stack.control.job(id)?.webhook;
      return url ? [new URL(url).searchParams.get('token') ?? ''] : [];
    });
    expect(tokens.length).toBeGreaterThan(0);
    const secrets = [stack.apiKey, secret, ...tokens];
    for (const value of secrets) {
      expect(output).not.toContain(value);
      expect(output).not.toContain(Buffer.from(value).toString('base64'));
    }
  }, 180_000);
});
