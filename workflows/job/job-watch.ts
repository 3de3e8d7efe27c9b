/**
 * Waiting for the job: webhook and polling at once. Polling is one activity whose looks the server
 * retries; it returns when the job has finished (or at each status change, where the workflow
 * records the job's start). A webhook is a hint, confirmed with /status as a local activity
 * (unless the poller's answer came in the same workflow task), after which the poller is
 * cancelled. History grows by the statuses the workflow records, never by running time. Just
 * before the ttl deadline the workflow stops waiting and looks once more.
 */
import { CancellationScope, condition, isCancellation, log } from '@temporalio/workflow';
import type { JobStatusValue } from '../../api/schemas/job';
import {
  extendJobTtlSummary,
  fetchJobStatusSummary,
  waitForJobSummary,
} from '../../contracts/activity-summaries';
import { JOB_UNCHANGED } from '../../contracts/failures';
import type { JobObservation, WaitResult } from '../../contracts/job-types';
import { activationSettled } from '../shared/activation-settled';
import { activityOutcome, JOB_FAILURE } from '../shared/job-failures';
import { confirmActivities, shortActivities, waitActivities } from './job-activities';
import { advanceJob, jobDeadline } from './job-item';
import { lookAtQueue, queueCheckDue } from './job-route';
import { applyObservation, inlineLimit, isTerminal, type Run, type WatchEnd } from './job-run';
import { noteStray } from './job-signals';

/** How one stretch of waiting ended: the status changed, the deadline came, or the poller must start over. */
type Segment = 'changed' | 'deadline' | 'restart' | WatchEnd;

/** The poller activity and, once it has ended, how. */
interface Poller {
  scope: CancellationScope;
  settled?: { ok: true; value: WaitResult } | { ok: false; error: unknown };
}

/** Until the job is finished (undefined), gone, or at its deadline unfinished. */
export async function watchUntilTerminal(run: Run): Promise<WatchEnd | undefined> {
  while (!isTerminal(run.s.status)) {
    run.s.phase = 'waiting';
    // Stop looking a little before the service deletes the job: one last look must still find it.
    const returnBy = jobDeadline(run).lastLookAt;
    if (Date.now() >= returnBy) return lastLook(run);
    const segment = await watchSegment(run, returnBy);
    if (segment === 'deadline') return lastLook(run);
    if (typeof segment === 'object') return segment;
  }
  return undefined;
}

/** At the deadline: a job that is not finished now will be deleted by the service. */
async function lastLook(run: Run): Promise<WatchEnd | undefined> {
  const observation = await lookQuietly(run, run.s.jobId as string);
  if (!observation) return { kind: 'deadline' };
  applyObservation(run, observation);
  return isTerminal(observation.status) ? undefined : { kind: 'deadline', status: observation.status };
}

/**
 * One poller activity, raced against webhook hints, ttl requests and the deadline. Whatever comes
 * first ends the segment; a poller still running is cancelled on the way out. On a route, the look
 * at a queued job's endpoint (job-route.ts) is a deadline of the segment too: the segment goes on
 * unless the job was withdrawn.
 */
async function watchSegment(run: Run, returnBy: number): Promise<Segment> {
  const jobId = run.s.jobId as string;
  const poller = startPoller(run, jobId, returnBy);
  let pollerAtDeadline = false;
  // Webhook claims already checked against the status they were checked at.
  const checked = new Set<string>();
  try {
    for (;;) {
      // On a route, a job queued past the route's limit is looked at before the deadline.
      const checkAt = queueCheckDue(run);
      const lookFirst = checkAt !== undefined && checkAt < returnBy;
      const wakeAt = lookFirst ? checkAt : returnBy;
      const wakes = () =>
        (poller.settled !== undefined && !pollerAtDeadline) ||
        run.hints.length > 0 ||
        run.ttlRequests.length > 0;
      // The poller's schedule-to-close timeout is the deadline: a timer of the workflow's own (two
      // more history events per wait) only for a look before it, or once the poller has returned.
      let woken = true;
      if (lookFirst || pollerAtDeadline) {
        woken = await condition(wakes, Math.max(wakeAt - Date.now(), 1), {
          summary: waitForJobSummary(jobId, wakeAt),
        });
      } else await condition(wakes);
      // A hint and the poller's answer can come in one workflow task: the hint wakes the loop
      // first. The poller's answer, when it came, is read before the hint is checked with a look.
      if (run.hints.length > 0 && poller.settled === undefined) await activationSettled();
      const settled = poller.settled;
      if (settled?.ok && !pollerAtDeadline) {
        applyObservation(run, settled.value);
        if (settled.value.reason === 'changed') return 'changed';
        // The worker's clock reached the deadline before the workflow's: wait out the rest with the
        // timer (webhooks still count) rather than start another poller for a few seconds.
        pollerAtDeadline = true;
      }
      if (settled && !settled.ok) return pollerFailed(settled.error);
      if (!woken && !lookFirst) return 'deadline';
      if (!woken) {
        // The poller keeps watching meanwhile: a job that starts now is seen as usual.
        const withdrawn = await lookAtQueue(run);
        if (withdrawn) return withdrawn;
        continue;
      }

      const ttl = run.ttlRequests.shift();
      if (ttl !== undefined) {
        await extendTtl(run, ttl);
        return 'restart';
      }
      if (await hintChangedStatus(run, jobId, checked)) return 'changed';
    }
  } finally {
    if (!poller.settled) poller.scope.cancel();
  }
}

function startPoller(run: Run, jobId: string, returnBy: number): Poller {
  const poller: Poller = { scope: new CancellationScope() };
  poller.scope
    .run(() =>
      waitActivities(returnBy - Date.now(), run.s.endpointId).waitForJobChange.executeWithOptions(
        { summary: waitForJobSummary(jobId, returnBy) },
        [
          {
            endpointId: run.s.endpointId,
            jobId,
            knownStatus: run.s.status as JobStatusValue,
            // A start is recorded only when asked for, or on a route while the job may still move
            // (a job seen running is never moved).
            returnOn: run.job.options.recordStart || run.queueCheckAt !== undefined ? 'change' : 'end',
            returnBy,
            polling: run.job.polling,
            ...inlineLimit(run),
          },
        ],
      ),
    )
    .then(
      (value) => {
        poller.settled = { ok: true, value };
      },
      (error: unknown) => {
        poller.settled = { ok: false, error };
      },
    );
  return poller;
}

/** The oldest webhook hint, checked with /status when it claims something new of this job. */
async function hintChangedStatus(run: Run, jobId: string, checked: Set<string>): Promise<boolean> {
  const hint = run.hints.shift();
  if (!hint) return false;
  if (hint.jobId !== jobId) {
    noteStray(run, hint.jobId);
    return false;
  }
  // A claim already checked against this status is not checked again (the service retries webhooks).
  const claim = `${hint.status}@${run.s.status}`;
  if (hint.status === run.s.status || checked.has(claim)) return false;
  checked.add(claim);
  const observation = await lookQuietly(run, jobId, confirmActivities);
  if (observation && observation.status !== run.s.status) {
    applyObservation(run, observation);
    return true;
  }
  return false;
}

function pollerFailed(error: unknown): Segment {
  if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
  const outcome = activityOutcome(error);
  if (outcome?.type === JOB_FAILURE.expired) {
    // The engine tells a ttl that passed from results that expired unseen (a long outage, say).
    const lastAliveAt = outcome.facts.lastAliveAt;
    return { kind: 'gone', ...(typeof lastAliveAt === 'number' ? { lastAliveAt } : {}) };
  }
  // Out of time (the schedule-to-close timeout is the deadline) is the deadline; so is a last
  // "unchanged" look that the server could not retry within it.
  if (outcome?.source === 'timeout' || outcome?.type === JOB_UNCHANGED) return 'deadline';
  // Cancelled by a worker shutting down, not by us: poll again.
  if (outcome?.source === 'cancelled') return 'restart';
  throw error;
}

/** /status?ttl=: the service counts the new ttl from submission, and so does the deadline. */
async function extendTtl(run: Run, ttl: number): Promise<void> {
  try {
    const jobId = run.s.jobId as string;
    const observation = await shortActivities.fetchJobStatus.executeWithOptions(
      { summary: extendJobTtlSummary(jobId, ttl) },
      [{ endpointId: run.s.endpointId, jobId, ttl }],
    );
    advanceJob(run, { kind: 'ttl-extended', ttlMs: ttl });
    // The caller's ttl from now on: a job submitted afresh later (say once this one expired) asks it too.
    run.job = { ...run.job, ttlMs: ttl };
    delete run.s.ttlExtensionError;
    applyObservation(run, observation);
  } catch (error) {
    if (isCancellation(error)) throw error;
    run.s.ttlExtensionError = activityOutcome(error)?.message ?? String(error);
  }
}

/** One /status; undefined when it could not be read (404 included). Cancellation still propagates. */
export async function lookQuietly(
  run: Run,
  jobId: string,
  activities: Pick<typeof shortActivities, 'fetchJobStatus'> = shortActivities,
): Promise<JobObservation | undefined> {
  try {
    return await activities.fetchJobStatus.executeWithOptions({ summary: fetchJobStatusSummary(jobId) }, [
      { endpointId: run.s.endpointId, jobId, ...inlineLimit(run) },
    ]);
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn('a status check failed', { jobId, error: activityOutcome(error)?.message ?? String(error) });
    return undefined;
  }
}
