/**
 * PostgreSQL stopped as in a crash (`pg_ctl stop -m immediate`: no checkpoint, WAL replay at the
 * next start) and started again while 200 jobs run on the real server: every job completes with
 * its output and the service acted on exactly one /run per job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgresAgain, stopPostgresAsInACrash } from '../../scripts/prod-temporal';
import {
  examples,
  instance,
  type ManagedProcess,
  outage,
  report,
  runJobs,
  type Stack,
  scriptedJob,
  startStack,
  tally,
} from './support';

const JOBS = 200;
const KILL_AFTER_SUBMISSIONS = 100;

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

  it(`PostgreSQL stopped as in a crash and started again with jobs in flight: ${JOBS} jobs, none lost, none run twice`, async () => {
    const startedAt = Date.now();
    const run = runJobs(stack, {
      name: 'postgres-restart',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 1_000 + (index % 5) * 500,
          polling: { initialInterval: 500, maxInterval: 2_000, backoffCoefficient: 1.5 },
          // A submit whose start or answer the server could not record may time out as uncertain:
          // its orphan reports itself, or (none existing) it is sent again (see support.ts).
          uncertainSubmitWaitMs: 30_000,
          onUncertainSubmit: 'resubmit',
          submitTimeoutMs: 15_000,
        }),
      timeoutMs: 400_000,
    });
    // Mid-run, chosen by the service's count: half the jobs sent, a full window in flight. The
    // server's persistence calls fail during the outage, and so do the gateway's signals and the
    // workers' completions.
    const down = await outage(stack, run, KILL_AFTER_SUBMISSIONS, {
      begin: async () => stopPostgresAsInACrash(instance()),
      end: () => startPostgresAgain(instance()),
    });
    expect(down.inFlight).toBeGreaterThan(0);

    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    report(
      'postgres-restart',
      figures,
      `PostgreSQL stopped (immediate) after ${KILL_AFTER_SUBMISSIONS} submissions with ${down.inFlight} jobs in flight, ` +
        `down ${(down.downMs / 1000).toFixed(1)} s while the ${down.runningAtService} running at the service finished`,
      startedAt,
    );
    expect(figures.ranTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
  });
});
