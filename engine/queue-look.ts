/**
 * A route's look at a queued job (contracts/route.ts): when a job that waits IN_QUEUE on an
 * endpoint with another after it is next worth a look at that endpoint's room (/health). The job
 * workflow asks it for its one job, the batch for each endpoint's oldest job not seen started.
 *
 * First once the job has waited the route's queueDelayLimit since its submit; after a look that
 * found room (or failed), no sooner than half that limit later, so a job that keeps waiting is
 * looked at again before it has waited half as long again, without a look per poll.
 */

/** When the job submitted at `submittedAt` is due a look; `lookedAt`: the last look, if any. */
export function queueLookDue(submittedAt: number, queueDelayLimit: number, lookedAt?: number): number {
  const first = submittedAt + queueDelayLimit;
  return lookedAt === undefined ? first : Math.max(first, lookedAt + Math.ceil(queueDelayLimit / 2));
}
