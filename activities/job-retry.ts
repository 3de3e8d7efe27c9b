/**
 * POST /retry, made harmless to repeat. Both the job and the batch activities send it, and only
 * for a job last seen FAILED or TIMED_OUT. The service accepts /retry of such a job while its
 * results are kept (else 404), so a 400 says the job was retried already: by an earlier try
 * whose answer was lost (a 5xx or a dropped connection after the service acted), or by someone
 * else. What /status says then is the retried run's state, and that is the answer. Only a job
 * FAILED or TIMED_OUT again is ambiguous: its re-run may have failed, or the refusal is real. The
 * caller that knows it tried before takes the first; otherwise the refusal stands.
 *
 * Every other error is the caller's: a 404 (the results expired) and anything a later try may fix.
 */
import type { ServiceClient } from '../api/client';
import { ServiceError } from '../api/errors';
import type { JobStatus, JobStatusValue } from '../api/schemas/job';

export type RetryAnswer =
  /** This call re-queued the job. */
  | { retried: 'now'; status: JobStatusValue }
  /** An earlier call (or someone else) had re-queued it; `now` is the retried run's status. */
  | { retried: 'before'; now: JobStatus };

export async function retryJobOnService(
  jobs: Pick<ServiceClient['jobs'], 'retry' | 'status'>,
  endpointId: string,
  jobId: string,
  options: { signal?: AbortSignal; triedBefore: boolean },
): Promise<RetryAnswer> {
  const call = options.signal === undefined ? {} : { signal: options.signal };
  try {
    const answer = await jobs.retry(endpointId, jobId, call);
    return { retried: 'now', status: answer.status };
  } catch (error) {
    if (!(error instanceof ServiceError && error.kind === 'BadRequest')) throw error;
    const now = await jobs.status(endpointId, jobId, call);
    const retryable = now.status === 'FAILED' || now.status === 'TIMED_OUT';
    if (retryable && !options.triedBefore) throw error;
    return { retried: 'before', now };
  }
}
