/**
 * The long wait: one activity that polls /status with growing intervals until the status differs
 * from the one the workflow knows, or until `returnBy`. However long the job runs, the workflow's
 * history gains one activity's events per status change; the polls themselves live only in
 * heartbeats, which Temporal keeps as the latest value, not as history.
 *
 * Each poll heartbeats the schedule reached, the poll count and the latest progress update. A
 * retry (after a worker restart or a transient error) resumes from those details, so a restarted
 * worker does not fall back to hammering the service at the initial interval.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ServiceClient } from '../api/client';
import { JOB_EXPIRED, toApplicationFailure } from './failures';
import { type ObserveOptions, observe, smallProgress } from './job-observe';
import {
  type WaitForJobChangeInput,
  type WaitHeartbeat,
  type WaitResult,
  waitHeartbeatSchema,
} from './job-types';

/** Where a retried attempt picks up: the previous attempt's heartbeat, if it was about the same wait. */
export function resumePoint(details: unknown, input: WaitForJobChangeInput): WaitHeartbeat | undefined {
  const parsed = waitHeartbeatSchema.safeParse(details);
  if (!parsed.success) return undefined;
  const { jobId, knownStatus } = parsed.data;
  return jobId === input.jobId && knownStatus === input.knownStatus ? parsed.data : undefined;
}

export function nextInterval(current: number, input: WaitForJobChangeInput): number {
  const { backoffCoefficient, maxIntervalMs } = input.polling;
  return Math.min(Math.round(current * backoffCoefficient), maxIntervalMs);
}

export async function waitForChange(
  client: Pick<ServiceClient, 'jobs'>,
  input: WaitForJobChangeInput,
  observeOptions: ObserveOptions,
): Promise<WaitResult> {
  const context = Context.current();
  const signal = context.cancellationSignal;
  const resumed = resumePoint(context.info.heartbeatDetails, input);
  let intervalMs = resumed?.intervalMs ?? input.polling.initialIntervalMs;
  let polls = resumed?.polls ?? 0;
  let progress = resumed?.progress;
  // When this attempt last saw the job exist: a 404 soon after cannot mean its results expired
  // (that takes the whole retention period after it finished), so the workflow can name the ttl.
  let lastAliveAt: number | undefined;

  for (;;) {
    let status: Awaited<ReturnType<typeof client.jobs.status>>;
    try {
      status = await client.jobs.status(input.endpointId, input.jobId, { signal });
    } catch (error) {
      throw withLastAlive(toApplicationFailure(error, { jobOperation: true, signal }), lastAliveAt);
    }
    lastAliveAt = Date.now();
    polls += 1;
    if (status.status !== input.knownStatus) {
      return { ...(await observe(input.jobId, status, observeOptions)), reason: 'changed', polls };
    }
    if (status.status === 'IN_PROGRESS' && status.output !== undefined) {
      progress = smallProgress(status.output, observeOptions.progressMaxBytes);
    }
    const details: WaitHeartbeat = {
      jobId: input.jobId,
      knownStatus: input.knownStatus,
      polls,
      intervalMs,
      ...(progress !== undefined ? { progress } : {}),
    };
    context.heartbeat(details);

    const remaining = input.returnBy - Date.now();
    if (remaining <= 0) {
      return {
        jobId: input.jobId,
        status: status.status,
        observedAt: Date.now(),
        ...(progress !== undefined ? { progress } : {}),
        reason: 'deadline',
        polls,
      };
    }
    // Rejects with a CancelledFailure when the workflow cancels the wait (e.g. a webhook won).
    await context.sleep(Math.min(intervalMs, remaining));
    intervalMs = nextInterval(intervalMs, input);
  }
}

function withLastAlive<T extends Error>(failure: T, lastAliveAt: number | undefined): T | ApplicationFailure {
  if (!(failure instanceof ApplicationFailure) || failure.type !== JOB_EXPIRED || lastAliveAt === undefined) {
    return failure;
  }
  const facts = failure.details?.[0];
  return ApplicationFailure.create({
    type: failure.type,
    message: failure.message,
    nonRetryable: true,
    details: [{ ...(facts && typeof facts === 'object' ? facts : {}), lastAliveAt }],
  });
}
