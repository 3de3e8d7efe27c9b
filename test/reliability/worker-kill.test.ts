/**
 * The worker process SIGKILLed 20 times in a row while 200 jobs run. Each worker is killed once
 * the service has acted on a few more submissions since it came up (it did work, and more is in
 * its hands: submits, polls, workflow tasks), then the next one is started. Every job completes
 * with its output and the service acted on exactly one /run per job. The webhook gateway is its
 * own process (as in docker-compose.yml), so webhooks still turn into signals while no worker runs.
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
  until,
} from './support';

const JOBS = 200;
const KILLS = 20;
/**
 * Submissions each worker gets the service to act on before it is killed: the first window sends
 * about 80 at once, then one goes out per finished job, so 20 kills land within the first ~160.
 */
const SUBMISSIONS_PER_WORKER = 6;
const MAX_SUBMISSIONS = 10;
const LEASE = '3 minutes';
const LEASE_MS = 3 * 60_000;

describe('reliability: the worker killed again and again (real server on PostgreSQL)', () => {
  let stack: Stack;
  const workers: ManagedProcess[] = [];
  beforeAll(async () => {
    stack = await startStack({ name: 'worker-kill', timeScale: 1 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${KILLS} SIGKILLs of the worker during ${JOBS} jobs: none lost, none run twice`, async () => {
    const startedAt = Date.now();
    workers.push(stack.startWorker());
    const run = runJobs(stack, {
      name: 'worker-kill',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 1_000 + (index % 5) * 500,
          polling: { initialInterval: 500, maxInterval: 2_000, backoffCoefficient: 1.5 },
          // A submit cut off by the kill is uncertain. Under the submit lease (the default with
          // webhooks) its orphan reports itself through the gateway within the lease and is
          // adopted, or (none reporting) the lease is waited out and it is sent again: never two
          // live copies. These two settings apply only without a lease; they are not used here.
          uncertainSubmitWaitMs: 15_000,
          onUncertainSubmit: 'fail',
          submitTimeoutMs: 15_000,
          // Each new worker takes over the submits the last one held, and is killed after a few:
          // one job's submit can be cut off by several kills in a row. The library's default of 3
          // submissions then ends it as SubmitUncertain, as documented; a caller expecting crash
          // loops raises it.
          maxSubmissions: MAX_SUBMISSIONS,
          // A crash loop: a kill every ~9 s, 80 jobs in flight at each. An orphan can be adopted
          // only while its lease runs, and in a loop like this the workflow may learn of it (dead
          // submit noticed, the workers asked, the hint looked at) later than 60 s after it went
          // out: with the default lease 7 of 200 orphans had been deleted by then, and ran again.
          // The lease must outlast the workers' recovery; the README says so.
          submitLease: LEASE,
        }),
      timeoutMs: 720_000,
    });
    const inFlightAtKills: number[] = [];
    let startingMs = 0;
    for (let kill = 1; kill <= KILLS; kill++) {
      const worker = workers.at(-1) as ManagedProcess;
      const spawnedAt = Date.now();
      await worker.running;
      startingMs += Date.now() - spawnedAt;
      // The worker did work: the service acted on a few more submissions, or a few more jobs
      // settled (late in the run, the jobs left to submit may all be waiting out a lease).
      const target = stack.submissions() + SUBMISSIONS_PER_WORKER;
      const settledTarget = Math.min(run.settled() + SUBMISSIONS_PER_WORKER, JOBS);
      await until(
        `worker ${kill}: the service acted on ${target} submissions or ${settledTarget} jobs settled`,
        () => stack.submissions() >= target || run.settled() >= settledTarget,
        // At worst every job left waits out its lease and the webhook window before it goes out.
        LEASE_MS + 60_000,
      );
      inFlightAtKills.push(run.started() - run.settled());
      await worker.kill();
      expect(worker.child.signalCode).toBe('SIGKILL');
      workers.push(stack.startWorker());
    }
    const killsDoneAt = Date.now();
    const settledAtLastKill = run.settled();

    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    const mostUncertain = Math.max(0, ...outcomes.map((o) => o.result?.uncertainSubmits ?? 0));
    const average = inFlightAtKills.reduce((sum, n) => sum + n, 0) / KILLS;
    report(
      'worker-kill',
      figures,
      `${KILLS} SIGKILLs in ${((killsDoneAt - startedAt) / 1000).toFixed(0)} s, each after ${SUBMISSIONS_PER_WORKER} more submissions, ` +
        `${average.toFixed(0)} jobs in flight per kill on average (fewest ${Math.min(...inFlightAtKills)}), ` +
        `${settledAtLastKill} finished by the last; at most ${mostUncertain} uncertain submits for one job (maxSubmissions ${MAX_SUBMISSIONS}); a worker takes ${(startingMs / KILLS / 1000).toFixed(1)} s to start`,
      startedAt,
    );
    // Every kill hit a worker with jobs in its hands.
    expect(Math.min(...inFlightAtKills)).toBeGreaterThan(0);
    expect(settledAtLastKill).toBeLessThan(JOBS);
    expect(figures.ranTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
  }, 900_000);
});
