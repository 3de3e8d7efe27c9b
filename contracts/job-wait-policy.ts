/**
 * The numbers of the slot-free wait (see job-wait.ts), in a pure module so the workflow's timeouts
 * and the activity's inline loop agree on them without the workflow importing activity code.
 */
import type { Polling } from './job-types';

/** Below this interval a look stays inside the running attempt (heartbeating) instead of a retry. */
export const INLINE_MAX_INTERVAL_MS = 1_000;
/** How long one attempt may keep looking inline before it hands the timer to the server. */
export const INLINE_BUDGET_MS = 5_000;

/**
 * The polling interval due after `elapsedMs` of waiting on a geometric schedule: after k looks the
 * elapsed time is initial*(c^k-1)/(c-1), so the next interval is initial + elapsed*(c-1).
 */
export function intervalAfter(elapsedMs: number, polling: Polling): number {
  const { initialIntervalMs, backoffCoefficient, maxIntervalMs } = polling;
  const grown = initialIntervalMs + Math.max(0, elapsedMs) * (backoffCoefficient - 1);
  return Math.round(Math.min(grown, maxIntervalMs));
}
