/**
 * A submit lease's extension made by the submit activity itself, right after the job id arrived
 * (workflows/submit-lease.ts): no workflow task and no other activity between the answer and the
 * extension, so a worker dying or a backlog after the answer cannot let the lease run out. One
 * short try; when it fails the workflow extends by its own rules, tried until the lease ends.
 * Shared by the job's submit (activities/job.ts) and the batch's page submit (activities/batch.ts).
 */
import type { ServiceClient } from '../api/client';
import { JOB_LIMITS } from '../api/schemas/job';

/** True: the job now has the caller's ttl (or the lease already was it). */
export async function extendLeaseAtOnce(
  client: Pick<ServiceClient, 'jobs'>,
  endpointId: string,
  jobId: string,
  leaseTtlMs: number,
  callerTtlMs: number | undefined,
): Promise<boolean> {
  const ttl = callerTtlMs ?? JOB_LIMITS.ttlDefaultMs;
  if (ttl <= leaseTtlMs) return true;
  try {
    await client.jobs.status(endpointId, jobId, {
      ttl,
      // Short: a slow try is better left to the workflow's tries than spent here.
      signal: AbortSignal.timeout(Math.min(10_000, Math.max(2_000, leaseTtlMs / 6))),
    });
    return true;
  } catch {
    return false;
  }
}
