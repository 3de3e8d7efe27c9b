/**
 * The wait that holds no worker slot. Each attempt of the wait activity looks at /status once; when
 * nothing changed it fails with the retryable, benign `JobUnchanged` whose `nextRetryDelay` is the
 * next polling interval. The Temporal server keeps that timer: attempts add no history events (only
 * the last one is written), and between two looks no worker holds anything. A worker follows as
 * many waiting jobs as the service's /status limit allows, with the SDK's default slots.
 *
 * Fast schedules (sync mode's first second or two) stay inside one attempt while the next interval
 * is under INLINE_MAX_INTERVAL_MS, heartbeating: a retry round trip would cost more than the wait.
 *
 * Under `returnOn: 'end'` a job that starts does not end the wait (the workflow would spend a
 * history event on each status it records): the start rides in the details, the wait goes on until
 * the job has finished.
 *
 * The interval is a function of the time since the wait was first scheduled (intervalAfter), not
 * of a counter. No state has to survive a worker restart, an error attempt
 * or a retry, and a restarted worker does not fall back to the initial interval.
 *
 * A change found while a workflow task of this worker looks at the job itself (a local activity),
 * or is about to (the gateway here signalled the job's end), is left to that task for a moment
 * (task-looks.ts): the attempt looks again after it.
 *
 * The latest progress update rides in the JobUnchanged failure's details, which Temporal keeps as
 * the pending activity's last failure: `getJobSnapshot(..., { live: true })` reads it there.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { ServiceClient } from '../api/client';
import { isTerminalStatus } from '../api/schemas/job';
import { JOB_EXPIRED, JOB_UNCHANGED } from '../contracts/failures';
import type { ParsedWaitForJobChangeInput, WaitHeartbeat, WaitResult } from '../contracts/job-types';
import { INLINE_BUDGET_MS, INLINE_MAX_INTERVAL_MS, intervalAfter } from '../contracts/job-wait-policy';
import { toApplicationFailure } from './failures';
import { type ObserveOptions, observe, smallProgress } from './job-observe';
import type { TaskLooks } from './task-looks';

export async function lookForChange(
  client: Pick<ServiceClient, 'jobs'>,
  input: ParsedWaitForJobChangeInput,
  observeOptions: ObserveOptions,
  taskLooks?: Pick<TaskLooks, 'heldUntil'>,
): Promise<WaitResult> {
  const context = Context.current();
  const { info } = context;
  const signal = context.cancellationSignal;
  const waitingSince = info.scheduledTimestampMs;
  const attemptStarted = Date.now();
  let looks = 0;

  for (;;) {
    let status: Awaited<ReturnType<typeof client.jobs.status>>;
    try {
      status = await client.jobs.status(input.endpointId, input.jobId, { signal });
    } catch (error) {
      throw withLastAlive(
        toApplicationFailure(error, { jobOperation: true, signal }),
        lastAliveAt(input, looks),
      );
    }
    looks += 1;
    // Attempts before this one each looked once (or a few times inline): close enough for a figure.
    const polls = info.attempt - 1 + looks;
    const changed = status.status !== input.knownStatus;
    // A workflow task of this worker is looking, or about to look, at the job itself: an answer
    // now would make the server refuse that task (task-looks.ts).
    const heldUntil = changed ? taskLooks?.heldUntil(input.jobId) : undefined;
    if (
      changed &&
      heldUntil === undefined &&
      (input.returnOn === 'change' || isTerminalStatus(status.status))
    ) {
      return { ...(await observe(input.jobId, status, observeOptions)), reason: 'changed', polls };
    }
    const progress =
      status.status === 'IN_PROGRESS' && status.output !== undefined
        ? smallProgress(status.output, observeOptions.progressMaxBytes)
        : undefined;
    const now = Date.now();
    const remaining = input.returnBy - now;
    if (remaining <= 0) {
      return {
        jobId: input.jobId,
        status: status.status,
        observedAt: now,
        ...(progress !== undefined ? { progress } : {}),
        reason: 'deadline',
        polls,
      };
    }
    const delay = Math.min(
      Math.max(intervalAfter(now - waitingSince, input.polling), (heldUntil ?? now) - now),
      remaining,
    );
    const details: WaitHeartbeat = {
      jobId: input.jobId,
      knownStatus: input.knownStatus,
      ...(changed ? { status: status.status } : {}),
      polls,
      intervalMs: Math.max(delay, 1),
      ...(progress !== undefined ? { progress } : {}),
    };
    if (delay < INLINE_MAX_INTERVAL_MS && now + delay - attemptStarted <= INLINE_BUDGET_MS) {
      context.heartbeat(details);
      // Rejects with a CancelledFailure when the workflow cancels the wait (e.g. a webhook won).
      await context.sleep(delay);
      continue;
    }
    throw ApplicationFailure.create({
      type: JOB_UNCHANGED,
      message:
        heldUntil === undefined
          ? `job ${input.jobId} is still ${status.status}; next look in ${delay} ms`
          : `job ${input.jobId} is ${status.status}, left to its workflow's own look; next look in ${delay} ms`,
      nonRetryable: false,
      nextRetryDelay: delay,
      // Expected on every look: no error log or failure metric for it.
      category: ApplicationFailureCategory.BENIGN,
      details: [details],
    });
  }
}

/**
 * When the job was last seen alive, if this wait has seen it: the previous attempt looked at most
 * one maximum interval before the current one was scheduled. A 404 soon after cannot mean its
 * results expired (that takes a whole retention period after it finished), so the workflow can
 * name the ttl; a 404 after a long outage (a worker down for an hour) names the results.
 */
function lastAliveAt(input: ParsedWaitForJobChangeInput, looks: number): number | undefined {
  const { info } = Context.current();
  if (looks > 0) return Date.now();
  if (info.attempt <= 1) return undefined;
  return info.currentAttemptScheduledTimestampMs - input.polling.maxIntervalMs;
}

function withLastAlive<T extends Error>(failure: T, lastAlive: number | undefined): T | ApplicationFailure {
  if (!(failure instanceof ApplicationFailure) || failure.type !== JOB_EXPIRED || lastAlive === undefined) {
    return failure;
  }
  const facts = failure.details?.[0];
  return ApplicationFailure.create({
    type: failure.type,
    message: failure.message,
    nonRetryable: true,
    details: [{ ...(facts && typeof facts === 'object' ? facts : {}), lastAliveAt: lastAlive }],
  });
}
