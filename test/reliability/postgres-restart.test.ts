/**
 * PostgreSQL stopped as in a crash (`pg_ctl stop -m immediate`: no checkpoint, WAL replay at the
 * next start) and started again while 200 jobs run on the real server: every job completes with
 * its output and the service acted on exactly one /run per job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartPostgres } from '../../scripts/prod-temporal';
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

describe('reliability: PostgreSQL restarted mid-run under the real server', () => {
  let stack: Stack;
  let worker: ManagedProcess;
  beforeAll(async () => {
    // Service time is real time: webhook retries are the spec's 10 s apart, longer than a restart.
    stack = await startStack({ name: 'postgres-restart', timeScale: 1 });
    worker = stack.startWorker();
    await worker.running;
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`PostgreSQL down for 3 s with jobs in flight: ${JOBS} jobs, none lost, none submitted twice`, async () => {
    const startedAt = Date.now();
    const run = runJobs(stack, {
      name: 'postgres-restart',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 1_000 + (index % 5) * 500,
          polling: { initialIntervalMs: 500, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
          // A submit whose start or answer the server could not record may time out as uncertain:
          // its orphan reports itself, or (none existing) it is sent again (see support.ts).
          uncertainSubmitWaitMs: 30_000,
          onUncertainSubmit: 'resubmit',
        }),
      timeoutMs: 240_000,
    });
    // Mid-run: some jobs done, a full window in flight.
    await run.whenSettled(60);
    const inFlightAtKill = Math.min(JOBS - run.settled(), 80);
    // Down as long as a database failover might take; the server's persistence calls fail meanwhile.
    const stoppedAt = Date.now();
    await restartPostgres(instance(), { downMs: 3_000 });
    const downMs = Date.now() - stoppedAt;

    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    report(
      'postgres-restart',
      figures,
      `PostgreSQL stopped (immediate) with ${inFlightAtKill} jobs in flight, accepting connections again after ${(downMs / 1000).toFixed(1)} s`,
      startedAt,
    );
    expect(figures.submittedTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
  });
});
