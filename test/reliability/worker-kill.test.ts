/**
 * The worker process SIGKILLed 20 times in a row while 200 jobs run: each worker is killed once it
 * has finished a few jobs, the next one started after it. Every job completes with its output and
 * the service acted on exactly one /run per job. The webhook gateway is its own process (as in
 * docker-compose.yml), so webhooks still turn into signals while no worker runs.
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

const JOBS = 200;
const KILLS = 20;
/** Jobs each worker finishes before it is killed: the kills spread over the first half of the run. */
const JOBS_PER_WORKER = 5;

describe('reliability: the worker killed again and again (real server on PostgreSQL)', () => {
  let stack: Stack;
  const workers: ManagedProcess[] = [];
  beforeAll(async () => {
    stack = await startStack({ name: 'worker-kill', timeScale: 1 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${KILLS} SIGKILLs of the worker during ${JOBS} jobs: none lost, none submitted twice`, async () => {
    const startedAt = Date.now();
    workers.push(stack.startWorker());
    const run = runJobs(stack, {
      name: 'worker-kill',
      count: JOBS,
      spec: (index, endpointId) =>
        scriptedJob(index, endpointId, {
          sleepMs: 1_000 + (index % 5) * 500,
          polling: { initialIntervalMs: 500, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
          // A submit cut off by the kill is uncertain: its orphan reports itself through the
          // gateway and is adopted, or (none existing) it is sent again (see support.ts).
          uncertainSubmitWaitMs: 30_000,
          onUncertainSubmit: 'resubmit',
        }),
      timeoutMs: 480_000,
    });
    let killedWithInFlight = 0;
    let startingMs = 0;
    for (let kill = 1; kill <= KILLS; kill++) {
      const worker = workers.at(-1) as ManagedProcess;
      const spawnedAt = Date.now();
      await worker.running;
      startingMs += Date.now() - spawnedAt;
      // This worker has done work: jobs finished since it came up (a job only finishes on a worker).
      await run.whenSettled(Math.min(run.settled() + JOBS_PER_WORKER, JOBS), 180_000);
      killedWithInFlight += Math.min(JOBS - run.settled(), 80);
      await worker.kill();
      expect(worker.child.signalCode).toBe('SIGKILL');
      if (process.env.RELIABILITY_VERBOSE === '1') {
        console.log(`kill ${kill} at ${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${run.settled()} jobs finished`);
      }
      workers.push(stack.startWorker());
    }
    const killsDoneAt = Date.now();
    const settledAtLastKill = run.settled();

    const outcomes = await run.done;
    const figures = tally(stack, outcomes);
    report(
      'worker-kill',
      figures,
      `${KILLS} SIGKILLs in ${((killsDoneAt - startedAt) / 1000).toFixed(0)} s, ` +
        `${(killedWithInFlight / KILLS).toFixed(0)} jobs in flight per kill on average, ${settledAtLastKill} finished by the last; ` +
        `a worker takes ${(startingMs / KILLS / 1000).toFixed(1)} s to start`,
      startedAt,
    );
    expect(figures.submittedTwice, examples(outcomes, stack)).toBe(0);
    expect(figures.completed, examples(outcomes, stack)).toBe(JOBS);
  }, 600_000);
});
