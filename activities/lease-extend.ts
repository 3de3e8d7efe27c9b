/**
 * A submit lease's extension made by the submit activity itself, right after the job id arrived
 * (contracts/submit-lease.ts): no workflow task and no other activity between the answer and the
 * extension, so a worker backlog or a slow page cannot let the lease run out while the job waits
 * for the workflow to hear of it (a job that completes inside its lease and is deleted at its end
 * would otherwise be taken for a lapse and run again). Tried until the lease ends, or until the
 * activity must answer; when it still fails, the workflow extends by its own rules. Shared by the
 * job's submit (activities/job.ts) and the batch's page submit (activities/batch-submit-page.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceClient } from '../api/client';
import { ServiceError } from '../api/errors';
import { JOB_LIMITS } from '../api/schemas/job';
import { extensionRetryPauseMs, leaseEndsBy } from '../contracts/submit-lease';
import type { SubmitBeats } from './submit-beat';

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

/** What trying to give a job its ttl came to. */
export type TtlExtension = 'extended' | 'gone' | 'failed';

export interface TtlToSet {
  endpointId: string;
  jobId: string;
  /** The ttl to set (the service counts it from submission). */
  ttl: number;
  /** Stop trying then (when the lease would end, or when the activity must answer). */
  until: number;
  /** Each try's own limit, so one slow answer cannot use up the lease. */
  tryMs?: number;
  /** Cancels the tries (the activity's cancellation). */
  signal?: AbortSignal;
}

/**
 * The one retry loop of a lease's extension (/status?ttl=), shared by the submits and the batch's
 * later extensions. 'gone' is a 404: the lease ran out already, and the workflow's rules take it
 * from there. 'failed': every try until `until` failed, or an answer no try will change came (400,
 * 401, a bug); the caller's later looks tell which.
 */
export async function extendJobTtl(
  client: Pick<ServiceClient, 'jobs'>,
  target: TtlToSet,
  beat: () => void = () => {},
  pauseFor: (ms: number) => Promise<unknown> = (ms) => sleep(ms),
): Promise<TtlExtension> {
  for (let tries = 0; ; tries++) {
    beat();
    if (target.signal?.aborted) return 'failed';
    const limits = [
      // AbortSignal.timeout throws on a fraction of a millisecond.
      ...(target.tryMs === undefined ? [] : [AbortSignal.timeout(Math.max(1, Math.ceil(target.tryMs)))]),
      ...(target.signal === undefined ? [] : [target.signal]),
    ];
    const signal = limits.length > 1 ? AbortSignal.any(limits) : limits[0];
    try {
      await client.jobs.status(target.endpointId, target.jobId, {
        ttl: target.ttl,
        ...(signal === undefined ? {} : { signal }),
      });
      return 'extended';
    } catch (error) {
      if (error instanceof ServiceError && error.kind === 'NotFound') return 'gone';
      if (!(error instanceof ServiceError) || !error.retryable) return 'failed';
      const pause = extensionRetryPauseMs(tries, target.until - Date.now());
      if (Date.now() + pause >= target.until) return 'failed';
      await pauseFor(pause);
    }
  }
}

/** True: the job now has the caller's ttl (or the lease already was it). */
export async function extendLeaseInSubmit(
  client: Pick<ServiceClient, 'jobs'>,
  lease: LeaseToExtend,
  beats: Pick<SubmitBeats, 'confirm' | 'beat'>,
): Promise<boolean> {
  const ttl = lease.callerTtlMs ?? JOB_LIMITS.ttlDefaultMs;
  if (ttl <= lease.leaseTtlMs) return true;
  // Only once the server has recorded the job (the caller's beat names it): an attempt that ends
  // later hands the job to the workflow, and one that may have ended already extends nothing, so
  // that the orphan the workflow cannot know of is still deleted at its lease (submit-beat.ts).
  const recorded = await beats.confirm().then(
    () => true,
    () => false,
  );
  if (!recorded) return false;
  const extension = await extendJobTtl(
    client,
    {
      endpointId: lease.endpointId,
      jobId: lease.jobId,
      ttl,
      until: Math.min(leaseEndsBy(lease.sentAt, lease.leaseTtlMs), lease.notAfter),
      tryMs: Math.min(10_000, Math.max(2_000, Math.floor(lease.leaseTtlMs / 6))),
    },
    beats.beat,
  );
  return extension === 'extended';
}
