/**
 * The worker process killed with SIGKILL while its job runs, and started again: the job completes
 * and the service saw exactly one submission. The workers are the real entry point
 * (`npm run worker`, worker/main.ts) in child processes, configured through the environment, each
 * with the webhook gateway beside it on a port of its own, behind one public address (a relay, as
 * a load balancer would be). The emulator's clock is frozen: the job runs until the test moves it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob } from '../../client/jobs';
import {
  eventually,
  FAST_POLLING,
  historyText,
  type JobStack,
  seenRunning,
  spawnWorker,
  startJobStack,
} from '../support/integration';
import { type Relay, startRelay } from '../support/relay';
import { uniqueTaskQueue } from '../support/temporal';

describe('a worker killed mid-job (dev server, emulator over HTTP, worker processes)', () => {
  let stack: JobStack;
  let relay: Relay;
  beforeAll(async () => {
    // No in-process worker: this file's jobs run on the child processes only.
    stack = await startJobStack({ name: 'job-crash', timeScale: 100, worker: false });
    relay = await startRelay();
  });
  afterAll(async () => {
    await relay?.close();
    await stack?.close();
  });

  it('SIGKILL while IN_PROGRESS, another worker started: the job completes, submitted once', async () => {
    const taskQueue = uniqueTaskQueue('job-crash');
    const secret = randomBytes(32).toString('base64url');
    const { TEMPORAL_ADDRESS: _address, WORKER_SHUTDOWN_GRACE_MS: _grace, ...service } = stack.workerEnv;
    const vars = {
      ...service,
      TEMPORAL_TASK_QUEUE: taskQueue,
      // Each worker's gateway takes any free port; the service calls the relay in front of them.
      WEBHOOK_PORT: '0',
      WEBHOOK_PUBLIC_URL: relay.url,
      WEBHOOK_SECRET: secret,
    };
    const endpointId = stack.endpoint();
    // Service time moves only when the test says: the job cannot finish while no worker runs.
    stack.control.freeze();
    const first = spawnWorker(vars);
    const workers = [first];
    try {
      await first.running;
      relay.target = first.gatewayUrl();
      expect(relay.target).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // An hour of service time: it finishes when the test moves the emulator's clock.
      const handle = await stack.start(
        {
          endpointId,
          request: {
            input: { sleepMs: 3_600_000, output: { survived: true } },
            policy: { executionTimeout: 7_200_000 },
          },
          polling: FAST_POLLING,
        },
        { taskQueue },
      );
      // Submitted; past the worker's cold start it runs.
      await eventually(() => stack.control.jobs(endpointId).length === 1, 60_000);
      stack.control.advance(5_000);
      const running = await stack.snapshotWhen(handle.workflowId, seenRunning, 60_000);
      const jobId = running.jobId as string;

      await first.kill();
      expect(first.child.signalCode).toBe('SIGKILL');
      expect(stack.control.job(jobId)?.status).toBe('IN_PROGRESS');

      const second = spawnWorker(vars);
      workers.push(second);
      await second.running;
      relay.target = second.gatewayUrl();
      // The job finishes now; its webhook reaches the new worker's gateway through the relay.
      stack.control.advance(3_600_000);
      const result = await awaitJob(stack.client, { job: handle });

      expect(result).toMatchObject({
        jobId,
        jobIds: [jobId],
        output: { survived: true },
        attempts: 1,
        submissions: 1,
        uncertainSubmits: 0,
      });
      expect(stack.control.submissions(endpointId)).toBe(1);
      expect(stack.control.jobs(endpointId).map((job) => job.id)).toEqual([jobId]);
      // The webhook, sent to the public address, reached the second worker's gateway.
      await eventually(() =>
        stack.control.webhookDeliveries().some((d) => d.jobId === jobId && d.httpStatus === 200),
      );
      // Both processes worked on this workflow: the one killed, then the one started after it.
      const history = await handle.fetchHistory();
      const identities = new Set(
        (history.events ?? []).map((e) => e.workflowTaskStartedEventAttributes?.identity).filter(Boolean),
      );
      expect(identities.size).toBe(2);
      expect(historyText(history)).not.toContain(stack.apiKey);
    } finally {
      stack.control.resume();
      for (const worker of workers) await worker.kill();
    }
  }, 180_000);
});
