/**
 * Waiting holds no worker slot: one real worker with the SDK's default slots (100 activity slots)
 * follows 1,000 jobs in progress at once, and while they wait a short job completes, a cancel of
 * one of the 1,000 reaches the service and an endpoint teardown runs to its end. Then the service's
 * clock moves past the 1,000 and every one completes, each sent to the service once. With webhooks
 * and with polling only (every job then ends by a look at /status).
 *
 * Service time runs at scale 1 and the jobs sleep an hour: they finish only when the test moves the
 * emulator's clock, however slow the machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teardownEndpoint } from '../../client/endpoints';
import { awaitJob, cancelJob, type JobHandle } from '../../client/jobs';
import {
  eventually,
  FAST_POLLING,
  HOUR_MS,
  hourLongJob,
  inBatches,
  type JobStack,
  jobsInProgress,
  seenRunning,
  startJobStack,
} from '../support/integration';

const JOBS = 1_000;
// Each look is an activity task; on 2 cores thousands of them a minute slow every file running beside
// this one. With webhooks a job's end comes by its webhook and the looks are the backstop, so they
// are rare; with polling only a job ends at its next look after the clock moves, at most 40 s later
// (a wait in which this file costs the machine almost nothing). Either way 1,000 jobs stay well
// under the spec's /status rate (200 a second).
const BACKSTOP_POLLING = { initialInterval: 30_000, maxInterval: 60_000, backoffCoefficient: 1.5 };
const ONLY_POLLING = { initialInterval: 20_000, maxInterval: 40_000, backoffCoefficient: 1.5 };

function manyJobsSuite(webhooks: boolean): void {
  const how = webhooks ? 'webhooks and polling' : 'polling only';
  const polling = webhooks ? BACKSTOP_POLLING : ONLY_POLLING;
  describe(`1,000 jobs in progress on one worker with default slots (${how})`, () => {
    let stack: JobStack;
    beforeAll(async () => {
      stack = await startJobStack({ name: webhooks ? 'many-hooks' : 'many-polls', timeScale: 1, webhooks });
    });
    afterAll(async () => {
      await stack?.close();
    });

    it('submits, cancels and tears down beside them, then completes all 1,000, each sent to the service once', async () => {
      const { control } = stack;
      const endpointId = stack.endpoint({ workersMin: 0, workersMax: JOBS });
      const handles: JobHandle[] = await inBatches(JOBS, 50, (index) =>
        stack.start(hourLongJob(endpointId, index, polling), { label: `long-${index}` }),
      );
      // All 1,000 submitted and running: far more waits than the worker has activity slots.
      await jobsInProgress(control, endpointId, JOBS, {
        workflows: { client: stack.client, ids: handles.map((handle) => handle.workflowId) },
      });

      // A short job beside them completes.
      const shortEndpoint = stack.endpoint();
      const short = await stack.start(
        { endpointId: shortEndpoint, request: { input: { output: { quick: true } } }, polling: FAST_POLLING },
        { label: 'short' },
      );
      expect(await awaitJob(stack.client, { job: short })).toMatchObject({
        output: { quick: true },
        submissions: 1,
      });

      // A cancel of one of the 1,000 reaches the service.
      const victim = handles[0] as JobHandle;
      const victimJob = await stack.snapshotWhen(victim.workflowId, seenRunning);
      await cancelJob(stack.client, { workflowId: victim.workflowId });
      await eventually(() => control.job(victimJob.jobId as string)?.status === 'CANCELLED', 120_000);

      // An endpoint teardown runs to its end.
      const doomed = stack.endpoint({ workersMin: 1, workersMax: 2 });
      const teardown = await teardownEndpoint(
        stack.client,
        { endpointId: doomed, pollInterval: 200 },
        { taskQueue: stack.taskQueue },
      );
      expect(teardown).toMatchObject({ drained: true });
      expect(control.endpoints(stack.apiKey).some((endpoint) => endpoint.id === doomed)).toBe(false);

      // All of that happened while the 999 others were still running.
      const stillRunning = control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS');
      expect(stillRunning).toHaveLength(JOBS - 1);

      // The hour passes: every one of the 999 completes with its own output.
      control.advance(HOUR_MS);
      const results = await inBatches(JOBS - 1, 100, (k) =>
        awaitJob(stack.client, { job: handles[k + 1] as JobHandle }),
      );
      results.forEach((result, k) => {
        expect(result.output).toEqual({ index: k + 1 });
      });
      // Every job reached the service once. A submit the workflow cannot be sure of (on a loaded
      // machine its activity task can be lost on its way to the worker: see hourLongJob) is sent
      // again only once its lease has run out, so no second job can run: it costs latency, and
      // the service's count shows it sent nothing twice. Any job the workflow sent again must have
      // had such a submit.
      const again = results
        .filter((result) => result.submissions !== 1)
        .map(({ output: _output, ...counts }) => counts);
      const uncertain = results.reduce((sum, result) => sum + (result.uncertainSubmits ?? 0), 0);
      console.log(
        `INTEGRATION job-many (${how}): ${JOBS} jobs, ${uncertain} uncertain submits, ${again.length} sent again`,
      );
      expect(control.submissions(endpointId), JSON.stringify(again)).toBe(JOBS);
      expect(again.filter((counts) => (counts.uncertainSubmits ?? 0) !== counts.submissions - 1)).toEqual([]);
      const ids = new Set(results.map((result) => result.jobId));
      expect(ids.size).toBe(JOBS - 1);
    }, 1_200_000);
  });
}

manyJobsSuite(true);
manyJobsSuite(false);
