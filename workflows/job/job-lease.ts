/**
 * The submit lease (contracts/submit-lease.ts) once the workflow owns a job: the job went out with
 * a short ttl, which /status?ttl= extends to the caller's. An extension that never lands lets the
 * lease run out: the service deletes the job, and submitting again cannot make two live jobs. The
 * outcome is the engine's event (lease-extended, or gone: a lapse).
 */
import { CancellationScope, isCancellation, log, sleep } from '@temporalio/workflow';
import {
  extendJobTtlSummary,
  fetchJobStatusSummary,
  leaseEndSummary,
} from '../../contracts/activity-summaries';
import { leaseEndsBy } from '../../contracts/submit-lease';
import { leaseExtensionTtl } from '../../engine/job-submit-rules';
import { activityOutcome, JOB_FAILURE } from '../shared/job-failures';
import { leaseActivities, leaseAttemptMs } from './job-activities';
import { advanceJob } from './job-item';
import { inlineLimit, type Run } from './job-run';

/** Extends the running job's lease, or finds it lapsed (the engine then sends it again or ends it). */
export async function holdLease(run: Run): Promise<void> {
  const { item } = run;
  if (item.phase !== 'running' || !item.lease) return;
  const ttl = leaseExtensionTtl(item.lease.ttlMs, item.ttlMs, run.s.status);
  if (ttl === undefined || (await extendLease(run, item.lease, ttl))) {
    advanceJob(run, { kind: 'lease-extended', ...(ttl === undefined ? {} : { ttlMs: ttl }) });
    return;
  }
  advanceJob(run, { kind: 'gone', now: Date.now(), stopping: false });
}

/**
 * /status?ttl= sets the caller's ttl (counted from submission, as the service counts it), tried
 * until the lease runs out. False: the job is gone (deleted at its lease) or may be by the time
 * anything could be tried again.
 */
async function extendLease(
  run: Run,
  lease: { ttlMs: number; answeredAt: number },
  ttl: number,
): Promise<boolean> {
  // The status it answers with is left to the watcher: a stream must start before the job is seen
  // finished, and a short job may finish before this answer comes.
  try {
    const until = leaseEndsBy(lease.answeredAt, lease.ttlMs);
    const jobId = run.s.jobId as string;
    await leaseActivities(until - Date.now(), leaseAttemptMs(lease.ttlMs)).fetchJobStatus.executeWithOptions(
      { summary: extendJobTtlSummary(jobId, ttl) },
      [{ endpointId: run.s.endpointId, jobId, ttl, ...inlineLimit(run) }],
    );
    return true;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    const outcome = activityOutcome(error);
    log.warn('the lease could not be extended before it ran out', {
      jobId: run.s.jobId,
      error: outcome?.message ?? String(error),
    });
    // A 404: the job is gone.
    if (outcome?.type === JOB_FAILURE.expired) return false;
  }
  return lookAfterLease(run, lease, ttl);
}

/**
 * Every try of the extension went unanswered, but one may have reached the service and only its
 * answer was lost: then the job lives on with the caller's ttl. Once the lease is over, a look
 * tells which (alive: it was extended; 404: deleted). It is retried, during an outage until even
 * the caller's ttl would have ended, because sending again while the job may live could make two.
 */
async function lookAfterLease(
  run: Run,
  lease: { ttlMs: number; answeredAt: number },
  ttl: number,
): Promise<boolean> {
  const leaseEnd = leaseEndsBy(lease.answeredAt, lease.ttlMs);
  if (leaseEnd > Date.now()) await sleep(leaseEnd - Date.now(), { summary: leaseEndSummary(leaseEnd) });
  try {
    const until = leaseEndsBy(lease.answeredAt, ttl);
    const jobId = run.s.jobId as string;
    await leaseActivities(until - Date.now()).fetchJobStatus.executeWithOptions(
      { summary: fetchJobStatusSummary(jobId) },
      [{ endpointId: run.s.endpointId, jobId, ...inlineLimit(run) }],
    );
    return true;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    return false;
  }
}
