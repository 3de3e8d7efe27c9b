/**
 * Adopting the orphan of an uncertain submit: the webhook URL is per workflow, so a webhook naming
 * a job this workflow never saw is that job. It is believed once /status confirms it.
 */
import { CancellationScope, condition, isCancellation, log } from '@temporalio/workflow';
import { fetchJobStatusSummary, orphanWebhookSummary } from '../../contracts/activity-summaries';
import type { JobObservation } from '../../contracts/job-types';
import { extensionTtl, leaseEndsBy } from '../../contracts/submit-lease';
import type { UncertainItem } from '../../engine/item-state';
import { activityOutcome } from '../shared/job-failures';
import { leaseActivities, leaseAttemptMs } from './job-activities';
import { inlineLimit, type Run } from './job-run';
import { lookQuietly } from './job-watch';

type OrphanLease = { ttlMs: number; endsBy: number };
type Adopted = JobObservation & { extendedTo?: number };

/**
 * Waits until the uncertain submit's wait ends (a timer: no worker slot is held) for an orphan's
 * webhook, and returns the orphan once a look finds it. Under a lease the look must come before the
 * service deletes the orphan (with its output) at the lease's end: its tries are short, so that a
 * worker dying mid-look does not use up the lease.
 */
export async function adoptOrphan(run: Run, item: UncertainItem): Promise<Adopted | undefined> {
  run.s.phase = 'adopting';
  const lease = item.lease && {
    ttlMs: item.lease.ttlMs,
    endsBy: leaseEndsBy(item.lease.answeredAt, item.lease.ttlMs),
  };
  const adoptable = () => run.hints.some((hint) => !run.s.jobIds.includes(hint.jobId));
  for (;;) {
    const index = run.hints.findIndex((hint) => !run.s.jobIds.includes(hint.jobId));
    if (index >= 0) {
      const [hint] = run.hints.splice(index, 1);
      const observation: Adopted | undefined = hint
        ? lease
          ? await lookWithinLease(run, hint.jobId, lease)
          : await lookQuietly(run, hint.jobId)
        : undefined;
      if (observation) return observation;
      continue;
    }
    const left = item.waitUntil - Date.now();
    if (left <= 0) return undefined;
    await condition(adoptable, left, { summary: orphanWebhookSummary(item.waitUntil) });
  }
}

/**
 * One /status, tried in short tries until the lease ends; undefined once it has (or on a 404). The
 * look also extends the orphan to the caller's ttl when that is longer than the lease;
 * `extendedTo`: the caller's ttl the orphan now lives under.
 */
async function lookWithinLease(run: Run, jobId: string, lease: OrphanLease): Promise<Adopted | undefined> {
  const left = lease.endsBy - Date.now();
  if (left <= 0) return undefined;
  const ttl = run.job.ttlMs;
  try {
    const observation = await leaseActivities(
      left,
      leaseAttemptMs(lease.ttlMs),
    ).fetchJobStatus.executeWithOptions({ summary: fetchJobStatusSummary(jobId) }, [
      {
        endpointId: run.s.endpointId,
        jobId,
        ...(ttl !== undefined && extensionTtl(lease.ttlMs, ttl) !== undefined ? { ttl } : {}),
        ...inlineLimit(run),
      },
    ]);
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
