/**
 * The job on a route (contracts/route.ts) while it waits IN_QUEUE on an endpoint that has another
 * after it: once it has waited the route's queueDelayLimit since its submit, the workflow looks at
 * the endpoint's room; with no idle worker there it withdraws the job, and the engine queues it for
 * the next endpoint (the submit loop sends it there). With room, it looks again when the route's
 * rule says (engine/queue-look.ts, the batch's rule too). The look is a deadline of the watch's waiting segment (job-watch.ts): no worker slot is
 * held while the job waits.
 *
 * Never two runs of one job: the withdrawal activity (activities/route.ts) cancels a job only while
 * it is queued and lets it go only once the service confirms it never started; a job seen running
 * stays where it runs, and is never looked at again.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { endpointCapacitySummary, withdrawJobsSummary } from '../../contracts/activity-summaries';
import { lacksCapacity } from '../../contracts/route';
import { queueLookDue } from '../../engine/queue-look';
import { activityOutcome } from '../shared/job-failures';
import { routeActivities } from './job-activities';
import { advanceJob, jobRoute } from './job-item';
import type { Run, WatchEnd } from './job-run';

/** When the wait should stop to look at the endpoint's room: only while the job is queued and may move. */
export function queueCheckDue(run: Run): number | undefined {
  return run.s.status === 'IN_QUEUE' ? run.queueCheckAt : undefined;
}

/**
 * The job has waited IN_QUEUE past the route's limit: withdrawn if its endpoint has no idle worker
 * (its end, which moves it on), else undefined: there is room, it started, it finished or it is
 * gone, and the watch goes on and sees which.
 */
export async function lookAtQueue(run: Run): Promise<WatchEnd | undefined> {
  const { s } = run;
  const jobId = s.jobId as string;
  const endpointId = s.endpointId;
  const again = () => {
    if (run.item.phase === 'running')
      run.queueCheckAt = queueLookDue(run.item.submittedAt, jobRoute(run).queueDelayLimit, Date.now());
  };
  const capacity = await quietly(run, 'reading the room of the endpoint', () =>
    routeActivities.endpointCapacity.executeWithOptions({ summary: endpointCapacitySummary(endpointId) }, [
      { endpointId },
    ]),
  );
  if (capacity === undefined || !lacksCapacity(capacity)) {
    again();
    return undefined;
  }
  const withdrawal = await quietly(run, 'withdrawing the queued job', () =>
    routeActivities.withdrawQueuedJobs.executeWithOptions({ summary: withdrawJobsSummary(1, endpointId) }, [
      { endpointId, jobs: [[0, jobId]] },
    ]),
  );
  if (withdrawal === undefined) {
    again();
    return undefined;
  }
  const outcome = withdrawal.results.find((result) => result.jobId === jobId)?.outcome;
  log.info('withdrawal of a job queued past the route queueDelayLimit', { jobId, endpointId, outcome });
  if (outcome === 'withdrawn' || outcome === 'stopped') return { kind: 'withdrawn', outcome };
  delete run.queueCheckAt;
  // Seen running before any cancel: it stays where it runs.
  if (outcome === 'started') advanceJob(run, { kind: 'withdrawn', outcome: 'started', now: Date.now() });
  // 'ended', 'gone': the watch sees the job's end as usual.
  return undefined;
}

/** A route call; undefined when it failed (the job stays, and is looked at again later). */
async function quietly<T>(run: Run, what: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn(`${what} failed; the job stays queued where it is for now`, {
      jobId: run.s.jobId,
      error: activityOutcome(error)?.message ?? String(error),
    });
    return undefined;
  }
}
