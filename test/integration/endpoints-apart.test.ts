/**
 * Endpoints apart: one worker's task queue serves every endpoint, and a burst of jobs on one must
 * not hold up a job on another. The worker takes two activities at a time and endpoint A answers
 * each submit in 200 ms, so a burst of jobs started at once on A backlogs the task queue with its
 * submits; a job started on B right after goes out beside A's burst, not after it: each job starts
 * with its endpoint as its task fairness key (contracts/task-priority.ts), and the dev server
 * matches by it (scripts/server-settings.ts). With `matching.enableFairness` off the same run sends
 * B's job after some 250 of A's 300. B's end is seen by its look, which goes under B's look key at
 * B's priority: with looks at a priority of their own below submits, it was seen after 299 of A's
 * 300 submits. Ordered by the emulator's own record of the submits, never by time. (The server's four partitions of the task queue each keep their own order, and B's task
 * waits for a poller to reach its partition: B goes early in A's burst, not necessarily first.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, type JobHandle } from '../../client/jobs';
import { type JobStack, startJobStack } from '../support/integration';

const BURST = 300;

describe('endpoints apart', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({
      name: 'endpoints-apart',
      timeScale: 1,
      workerEnv: { WORKER_MAX_CONCURRENT_ACTIVITIES: '2' },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('submits a job on endpoint B, and sees it end, before most of a burst just started on endpoint A', async () => {
    const endpointA = stack.endpoint({ workersMin: 10, workersMax: 10 });
    const endpointB = stack.endpoint({ workersMin: 1, workersMax: 1 });
    // A's answers come slowly: its submits hold the worker's two activity slots in turn.
    const answerAtOnce = stack.control.injectFault({
      operation: 'run',
      endpointId: endpointA,
      kind: 'slow',
      delayMs: 200,
    });
    const burst: JobHandle[] = await Promise.all(
      Array.from({ length: BURST }, (_, job) =>
        stack.start(
          { endpointId: endpointA, request: { input: { sleepMs: 10, output: { job } } } },
          { label: 'a' },
        ),
      ),
    );
    try {
      // The burst waits in the task queue: most of it is not out when B's job starts.
      expect(stack.control.submissions(endpointA)).toBeLessThan(BURST / 2);
      const short = await stack.start(
        { endpointId: endpointB, request: { input: { sleepMs: 10, output: { short: true } } } },
        { label: 'b' },
      );
      expect((await awaitJob(stack.client, { job: short })).output).toEqual({ short: true });
      // Its end is seen by its look (no webhooks here), which goes beside A's submits, not after.
      const outWhenBEnded = stack.control.submissions(endpointA);
      expect(outWhenBEnded).toBeLessThan(BURST / 2);

      const [submitted] = stack.control.jobs(endpointB, { removed: true });
      expect(submitted).toBeDefined();
      const before = stack.control
        .jobs(endpointA, { removed: true })
        .filter((job) => job.submittedAt < (submitted?.submittedAt ?? 0)).length;
      // First in, first out, B's job would go after nearly all of A's.
      expect(before).toBeLessThan(BURST / 2);
    } finally {
      answerAtOnce();
      await Promise.all(burst.map((job) => job.terminate('the test is over').catch(() => undefined)));
    }
  }, 240_000);
});
