/**
 * The submit lease (contracts/submit-lease.ts) once the workflow owns a job: the job went out with
 * a short ttl, which /status?ttl= extends to the caller's. An extension that never lands lets the
 * lease run out: the service deletes the job, and submitting again cannot make two live jobs.
 */
import { CancellationScope, isCancellation, log, sleep } from '@temporalio/workflow';
import { leaseEndsBy } from '../contracts/submit-lease';
import { leaseActivities, leaseAttemptMs } from './job-activities';
import { activityOutcome, JOB_FAILURE, jobFailure } from './job-failures';
import { details, inlineLimit, leaseExtended, type Run } from './job-run';
import { afterLeaseLapse, leaseExtensionTtl } from './job-submit-rules';

/** True: the job's lease is extended (or needs no extension); false: it lapsed and the job is to be sent again. */
export async function holdLease(run: Run, leaseTtlMs: number, answeredAt: number): Promise<boolean> {
  if (await extendLease(run, leaseTtlMs, answeredAt)) return true;
  leaseLapsed(run);
  return false;
}

/**
 * Under a lease: /status?ttl= sets the caller's ttl (counted from submission, as the service counts
 * it), tried until the lease runs out. False: the job is gone (deleted at its lease) or may be by
 * the time anything could be tried again.
 */
async function extendLease(run: Run, leaseTtlMs: number, answeredAt: number): Promise<boolean> {
  const { s } = run;
  const ttl = leaseExtensionTtl(leaseTtlMs, run.job.ttlMs, s.status);
  if (ttl === undefined) return true;
  // The status it answers with is left to the watcher: a stream must start before the job is seen
  // finished, and a short job may finish before this answer comes.
  try {
    const until = leaseEndsBy(answeredAt, leaseTtlMs);
    await leaseActivities(until - Date.now(), leaseAttemptMs(leaseTtlMs)).fetchJobStatus({
      endpointId: s.endpointId,
      jobId: s.jobId as string,
      ttl,
      ...inlineLimit(run),
    });
    leaseExtended(run, ttl);
    return true;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    const outcome = activityOutcome(error);
    log.warn('the lease could not be extended before it ran out', {
      jobId: s.jobId,
      error: outcome?.message ?? String(error),
    });
    // A 404: the job is gone.
    if (outcome?.type === JOB_FAILURE.expired) return false;
  }
  return lookAfterLease(run, leaseTtlMs, ttl, answeredAt);
}

/**
 * Every try of the extension went unanswered, but one may have reached the service and only its
 * answer was lost: then the job lives on with the caller's ttl. Once the lease is over, a look
 * tells which (alive: it was extended; 404: deleted). It is retried, during an outage until even
 * the caller's ttl would have ended, because sending again while the job may live could make two.
 */
async function lookAfterLease(
  run: Run,
  leaseTtlMs: number,
  ttl: number,
  answeredAt: number,
): Promise<boolean> {
  const leaseEnd = leaseEndsBy(answeredAt, leaseTtlMs);
  if (leaseEnd > Date.now()) await sleep(leaseEnd - Date.now());
  try {
    const until = leaseEndsBy(answeredAt, ttl);
    await leaseActivities(until - Date.now()).fetchJobStatus({
      endpointId: run.s.endpointId,
      jobId: run.s.jobId as string,
      ...inlineLimit(run),
    });
    leaseExtended(run, ttl);
    return true;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    return false;
  }
}

/** The job's lease ran out unextended: the service deleted it; sent again, or the workflow fails. */
function leaseLapsed(run: Run): void {
  const { options } = run.job;
  run.s.leaseLapses += 1;
  if (afterLeaseLapse(options, run.s.submissions) === 'resubmit') return;
  throw jobFailure(
    JOB_FAILURE.expired,
    `job ${run.s.jobId} on endpoint ${run.s.endpointId} expired: its submit lease ran out before it ` +
      `could be extended, and maxSubmissions (${options.maxSubmissions}) is reached`,
    details(run, { expired: 'ttl' }),
  );
}
