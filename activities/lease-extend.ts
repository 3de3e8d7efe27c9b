/**
 * A submit lease's extension made by the submit activity itself, right after the job id arrived
 * (workflows/submit-lease.ts): no workflow task and no other activity between the answer and the
 * extension, so a worker backlog or a slow page cannot let the lease run out while the job waits
 * for the workflow to hear of it (a job that completes inside its lease and is deleted at its end
 * would otherwise be taken for a lapse and run again). Tried until the lease ends, or until the
 * activity must answer; when it still fails, the workflow extends by its own rules. Shared by the
 * job's submit (activities/job.ts) and the batch's page submit (activities/batch.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceClient } from '../api/client';
import { ServiceError } from '../api/errors';
import { JOB_LIMITS } from '../api/schemas/job';
import { extensionRetryPauseMs, leaseEndsBy } from '../workflows/submit-lease';

export interface LeaseToExtend {
  endpointId: string;
  jobId: string;
  leaseTtlMs: number;
  /** The caller's ttl (the request's); absent: the service's default. */
  callerTtlMs: number | undefined;
  /** When the request went out: the service's lease started no earlier. */
  sentAt: number;
  /** When the activity must stop trying, to answer within its own timeout. */
  notAfter: number;
}

/**
 * The latest moment a submit activity may spend on extensions: a quarter of its start-to-close
 * timeout (at least 5 s) is left for the rest of its work and its answer.
 */
export function extensionsNotAfter(startedAt: number, startToCloseMs: number): number {
  return startedAt + startToCloseMs - Math.max(5_000, startToCloseMs / 4);
}

/** True: the job now has the caller's ttl (or the lease already was it). */
export async function extendLeaseInSubmit(
  client: Pick<ServiceClient, 'jobs'>,
  lease: LeaseToExtend,
  beat: () => void = () => {},
): Promise<boolean> {
  const ttl = lease.callerTtlMs ?? JOB_LIMITS.ttlDefaultMs;
  if (ttl <= lease.leaseTtlMs) return true;
  const until = Math.min(leaseEndsBy(lease.sentAt, lease.leaseTtlMs), lease.notAfter);
  // Short tries: one slow answer must not use up the lease.
  const tryMs = Math.min(10_000, Math.max(2_000, lease.leaseTtlMs / 6));
  for (let tries = 0; ; tries++) {
    beat();
    try {
      await client.jobs.status(lease.endpointId, lease.jobId, { ttl, signal: AbortSignal.timeout(tryMs) });
      return true;
    } catch (error) {
      // Gone (the lease ran out already: the workflow's rules take it from there), or an answer no
      // try will change (400, 401, a bug): only a retryable service error is tried again.
      if (!(error instanceof ServiceError) || !error.retryable) return false;
      const pause = extensionRetryPauseMs(tries, until - Date.now());
      if (Date.now() + pause >= until) return false;
      await sleep(pause);
    }
  }
}
