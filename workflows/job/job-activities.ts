/**
 * The job activities as the workflow calls them, each with the timeouts and retry policy its kind
 * of call needs. Kept apart from the workflow's logic because these numbers are the policy.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { JobActivities } from '../../activities/job';
import type { RouteActivities } from '../../activities/route';
import type { Polling } from '../../contracts/job-types';
import { INLINE_BUDGET_MS } from '../../contracts/job-wait-policy';
import { lookTaskPriority } from '../../contracts/task-priority';

/**
 * Submits are never retried by Temporal: a timeout (a worker that died mid-submit, or an answer
 * that never came) or any failure after sending could mean the job exists, and sending again could
 * run it twice. The workflow retries what the activity reports as certainly not sent.
 */
export function submitActivities(startToCloseMs: number, heartbeatMs?: number) {
  return proxyActivities<JobActivities>({
    startToCloseTimeout: startToCloseMs,
    // Under a lease, a worker that dies mid-submit must be noticed while the lease runs: its
    // orphan may finish and report inside it, and is deleted (output and all) when it ends.
    ...(heartbeatMs === undefined ? {} : { heartbeatTimeout: heartbeatMs }),
    retry: { maximumAttempts: 1 },
  });
}

/** Questions to the worker itself (no HTTP): a dead worker is noticed within seconds. */
export const workerActivities = proxyActivities<JobActivities>({
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 20 },
});

// One HTTP call's worst case: the client's connect + headers + body timeouts and its 429 budget.
const HTTP_CALL_MS = 90_000;

/**
 * The wait: each attempt looks once (a fast schedule may look a few times inline, for at most
 * INLINE_BUDGET_MS) and, when nothing changed, fails with JobUnchanged whose nextRetryDelay is the
 * next polling interval, so between looks the server keeps the timer and no worker slot is held.
 * Attempts are unlimited until the deadline (reads are harmless to repeat); a real error retries on
 * the policy's own backoff. A worker that dies mid-attempt is noticed by the start-to-close timeout.
 * Looks go under their endpoint's look key, after the calls that start or end work when the task
 * queue is backlogged, and beside other endpoints' work (contracts/task-priority.ts).
 */
export function waitActivities(untilMs: number, endpointId: string) {
  return proxyActivities<JobActivities>({
    priority: lookTaskPriority(endpointId),
    startToCloseTimeout: HTTP_CALL_MS + INLINE_BUDGET_MS,
    scheduleToCloseTimeout: Math.max(untilMs, 1_000) + HTTP_CALL_MS,
    heartbeatTimeout: HTTP_CALL_MS,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
}

/**
 * The stream drain: one activity for the whole stream (it holds one slot while its job runs),
 * retried without limit until the deadline, heartbeat-checked so a dead worker is noticed within
 * one polling interval plus one HTTP call.
 */
export function streamActivities(polling: Polling, untilMs: number) {
  const timeout = Math.max(untilMs, 1_000) + HTTP_CALL_MS;
  return proxyActivities<JobActivities>({
    startToCloseTimeout: timeout,
    scheduleToCloseTimeout: timeout,
    heartbeatTimeout: polling.maxIntervalMs + HTTP_CALL_MS,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
}

/**
 * The extension of a submit lease (/status?ttl=): retried (it is harmless to repeat) until the lease
 * runs out, after which the service has deleted the job and trying again is pointless.
 */
export function leaseActivities(untilMs: number, attemptMs = HTTP_CALL_MS) {
  const left = Math.max(untilMs, 1_000);
  return proxyActivities<JobActivities>({
    startToCloseTimeout: Math.min(attemptMs, left),
    scheduleToCloseTimeout: left,
    // Tries keep coming until the lease ends: no pause longer than a quarter of it.
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: Math.min(10_000, Math.max(1_000, Math.floor(left / 4))),
    },
  });
}

/**
 * One try of a lease's extension: a quarter of the lease, at least 5 s. A worker that dies holding
 * a try is noticed only when the try times out; with one HTTP call's worst case (90 s) that would
 * outlast a 60 s lease, and the job would be deleted (its output with it) before another worker
 * could try again.
 */
export function leaseAttemptMs(leaseTtlMs: number): number {
  return Math.min(HTTP_CALL_MS, Math.max(5_000, Math.floor(leaseTtlMs / 4)));
}

/**
 * /retry, harmless to repeat (activities/job-retry.ts): tried until the job's ttl deadline, after
 * which the service has deleted it. A 404 (its results expired) ends the tries at once.
 */
export function retryActivities(untilMs: number) {
  return proxyActivities<JobActivities>({
    startToCloseTimeout: HTTP_CALL_MS,
    scheduleToCloseTimeout: Math.max(untilMs, 1_000),
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  });
}

/** A one-shot call's tries: a few, then the workflow decides. */
const FEW_TRIES = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  maximumAttempts: 6,
} as const;

/** One-shot calls (status, cancel). */
export const shortActivities = proxyActivities<JobActivities>({
  startToCloseTimeout: HTTP_CALL_MS,
  retry: FEW_TRIES,
});

/**
 * The route's calls (activities/route.ts): a look at an endpoint's room, and the withdrawal of a
 * queued job (reads and a cancel of a job still queued: harmless to repeat, and the activity skips
 * what a failed attempt already did).
 */
export const routeActivities = proxyActivities<RouteActivities>({
  startToCloseTimeout: 3 * HTTP_CALL_MS,
  retry: FEW_TRIES,
});

/**
 * The look that confirms a webhook's claim: a local activity, so its answer is one marker in the
 * workflow task the signal woke, instead of an activity's three events and a workflow task of its
 * own. A read, harmless to repeat: a worker that dies during it leaves the task to another.
 */
export const confirmActivities = proxyLocalActivities<JobActivities>({
  startToCloseTimeout: HTTP_CALL_MS,
  retry: FEW_TRIES,
});
