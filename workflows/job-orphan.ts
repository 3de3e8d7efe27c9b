/**
 * Adopting the orphan of an uncertain submit: the webhook URL is per workflow, so a webhook naming
 * a job this workflow never saw is that job. It is believed once /status confirms it.
 */
import { CancellationScope, condition, isCancellation, log } from '@temporalio/workflow';
import type { JobObservation } from '../contracts/job-types';
import { extensionTtl } from '../contracts/submit-lease';
import { leaseActivities, leaseAttemptMs } from './job-activities';
import { activityOutcome } from './job-failures';
import { inlineLimit, leaseExtended, ownJob, type Run } from './job-run';
import type { OrphanWait } from './job-submit-rules';
import { lookQuietly } from './job-watch';

type OrphanLease = NonNullable<OrphanWait['lease']>;

/**
 * Waits until `until` (a timer: no worker slot is held) for an orphan's webhook, and adopts the
 * orphan once a look finds it. `lease`: the orphan went out under one, so the look must come before
 * the service deletes it (with its output) at the lease's end: its tries are short, so that a
 * worker dying mid-look does not use up the lease.
 */
export async function adoptOrphan(
  run: Run,
  sentAt: number,
  until: number,
  lease?: OrphanLease,
): Promise<boolean> {
  run.s.phase = 'adopting';
  const adoptable = () => run.hints.some((hint) => !run.s.jobIds.includes(hint.jobId));
  for (;;) {
    const index = run.hints.findIndex((hint) => !run.s.jobIds.includes(hint.jobId));
    if (index >= 0) {
      const [hint] = run.hints.splice(index, 1);
      const observation: (JobObservation & { extendedTo?: number }) | undefined = hint
        ? lease
          ? await lookWithinLease(run, hint.jobId, lease)
          : await lookQuietly(run, hint.jobId)
        : undefined;
      if (observation) {
        log.info('adopted the job of an uncertain submit from its webhook', { jobId: observation.jobId });
        ownJob(run, observation, sentAt, true, lease?.ttlMs);
        if (observation.extendedTo !== undefined) leaseExtended(run, observation.extendedTo);
        run.s.uncertainAdopted += 1;
        return true;
      }
      continue;
    }
    const left = until - Date.now();
    if (left <= 0) return false;
    await condition(adoptable, left);
  }
}

/**
 * One /status, tried in short tries until the lease ends; undefined once it has (or on a 404). The
 * look also extends the orphan to the caller's ttl when that is longer than the lease;
 * `extendedTo`: the caller's ttl the orphan now lives under.
 */
async function lookWithinLease(
  run: Run,
  jobId: string,
  lease: OrphanLease,
): Promise<(JobObservation & { extendedTo?: number }) | undefined> {
  const left = lease.endsBy - Date.now();
  if (left <= 0) return undefined;
  const ttl = run.job.ttlMs;
  try {
    const observation = await leaseActivities(left, leaseAttemptMs(lease.ttlMs)).fetchJobStatus({
      endpointId: run.s.endpointId,
      jobId,
      ...(ttl !== undefined && extensionTtl(lease.ttlMs, ttl) !== undefined ? { ttl } : {}),
      ...inlineLimit(run),
    });
    return ttl === undefined ? observation : { ...observation, extendedTo: ttl };
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    log.warn('an orphan could not be looked at within its lease', {
      jobId,
      error: activityOutcome(error)?.message ?? String(error),
    });
    return undefined;
  }
}
