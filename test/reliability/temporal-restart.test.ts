/**
 * The Temporal server SIGKILLed and started again while 200 jobs run: every job completes with its
 * output and the service acted on exactly one /run per job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killTemporalServer, startTemporalServer } from '../../scripts/prod-temporal';
import {
  examples,
  instance,
  type ManagedProcess,
  report,
  runJobs,
  type Stack,
  scriptedJob,
  startStack,
  tally,
} from './support';

const JOBS = 200;

describe('reliability: the Temporal server killed mid-run (real server on PostgreSQL)', () => {
  let stack: Stack;
  let worker: ManagedProcess;
  beforeAll(async () => {
    // Service time is real time: webhook retries are the spec's 10 s apart, longer than a restart.
    stack = await startStack({ name: 'temporal-restart', timeScale: 1 });
    worker = stack.startWorker();
    await worker.running;
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`SIGKILL and restart of the server with jobs in flight: ${JOBS} jobs, none lost, none submitted twice`, async () => {
    const startedAt = Date.now();
    const run = runJobs(stack, {
      name: 'temporal-restart',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 1_000 + (index % 5) * 500,
          polling: { initialIntervalMs: 500, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
          // A submit the server handed out just before it died never reaches the worker: it times
          // out as uncertain, no orphan reports itself, and it is sent again (see support.ts).
          uncertainSubmitWaitMs: 30_000,
          onUncertainSubmit: 'resubmit',
        }),
      timeoutMs: 240_000,
    });
    // Mid-run: some jobs done, a full window in flight.
    await run.whenSettled(60);
    const killedAt = Date.now();
    await killTemporalServer(instance());
    const inFlightAtKill = Math.min(JOBS - run.settled(), 80);
    await startTemporalServer(instance());
    const downMs = Date.now() - killedAt;

    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    report(
      'temporal-restart',
      figures,
      `server SIGKILLed with ${inFlightAtKill} jobs in flight, serving again after ${(downMs / 1000).toFixed(1)} s`,
      startedAt,
    );
    expect(figures.submittedTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
  });
});
