/**
 * The batch's activity proxies, one per kind of call, each with the timeouts and retries its call
 * can bear: submits are never retried by Temporal (a submit cut off after sending could run its jobs
 * twice); reads are retried without end; lease extensions must end before the leases do.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BatchActivities } from '../../activities/batch';
import type { RouteActivities } from '../../activities/route';

export const stageActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['BadRequest'] },
});

export const shortActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * Reads are harmless to repeat: unlimited attempts, and JobUnchanged says when to look again. The
 * watcher beats every second while it runs, so a dead worker's watcher is noticed in 30 s (its jobs
 * are looked at again by a new one) rather than in minutes. A watcher's round goes under its
 * endpoint's look key, named where it is called (contracts/task-priority.ts).
 */
export const watchActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Never retried by Temporal: a submit cut off after sending could run its jobs twice. */
export function submitActivities(submitTimeoutMs: number, pageSize: number) {
  return proxyActivities<BatchActivities>({
    startToCloseTimeout: submitTimeoutMs + pageSize * 200,
    // A dead worker is noticed within this; its last heartbeat names the jobs it had created.
    heartbeatTimeout: Math.min(submitTimeoutMs, 30_000),
    retry: { maximumAttempts: 1 },
  });
}

/**
 * The extension of a page's leases: the activity tries each job until its lease would end. Its
 * heartbeat timeout is the job workflow's try length for the shortest lease: a worker that dies
 * holding it is noticed while the leases still run, and the items are tried again.
 */
export function leaseActivities(untilMs: number, heartbeatMs: number) {
  return proxyActivities<BatchActivities>({
    startToCloseTimeout: Math.max(untilMs, 1_000) + 30_000,
    heartbeatTimeout: heartbeatMs,
    retry: { maximumAttempts: 1 },
  });
}

/**
 * A route's reads of an endpoint's room and withdrawals of queued jobs: both safe to repeat (a
 * withdrawal heartbeats the jobs it has settled, and a retried attempt skips them).
 */
export const routeActivities = proxyActivities<RouteActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});
