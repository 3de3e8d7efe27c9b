/**
 * Every webhook lost (the emulator makes no call at all) for 500 jobs: all complete, by polling
 * alone, each with its output and one /run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  examples,
  type ManagedProcess,
  report,
  runJobs,
  type Stack,
  scriptedJob,
  startStack,
  tally,
} from './support';

const JOBS = 500;

describe('reliability: every webhook lost (real server on PostgreSQL)', () => {
  let stack: Stack;
  let worker: ManagedProcess;
  beforeAll(async () => {
    // Jobs of 10 s service time run 1 s.
    stack = await startStack({ name: 'webhooks-lost', timeScale: 10 });
    worker = stack.startWorker();
    await worker.running;
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${JOBS} jobs, no webhook delivered: all complete by polling`, async () => {
    const startedAt = Date.now();
    stack.control.webhookFaults({ lose: 1 });
    const run = runJobs(stack, {
      name: 'webhooks-lost',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 10_000,
          polling: { initialInterval: 250, maxInterval: 1_000, backoffCoefficient: 1.5 },
          // Under CPU load a submit task was seen to time out without its request ever reaching
          // the service (1 or 2 in 500, never on an idle machine). That is not what this case is
          // about: such a submit is sent again, and a second job would show as submitted twice.
          uncertainSubmitWaitMs: 0,
          // Time scale 10: see scriptedJob's submitLease.
          submitLease: false,
          onUncertainSubmit: 'resubmit',
          submitTimeoutMs: 30_000,
        }),
      timeoutMs: 540_000,
    });
    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    // Every finished job's webhook was decided, and lost: none reached the gateway.
    const deliveries = stack.control.webhookDeliveries();
    const lost = deliveries.filter((d) => d.error === 'lost (injected fault)').length;
    report(
      'webhooks-lost',
      figures,
      `${lost} webhooks lost, ${deliveries.length - lost} delivered`,
      startedAt,
    );
    expect(figures.ranTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
    expect(deliveries.length).toBeGreaterThanOrEqual(JOBS);
    expect(lost).toBe(deliveries.length);
  });
});
