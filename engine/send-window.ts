/**
 * An endpoint's /run window as its gate keeps it (workflows/endpoint/endpoint-gate.ts): the grants of the
 * last window and slack. A grant's requests go out within SEND_SLACK_MS of it or not at all, so no
 * window of RUN_WINDOW_MS + SEND_SLACK_MS holding grants for at most the limit lets more than the
 * limit into any 10 s window of the service's, however many workloads and worker processes share
 * the endpoint.
 */

import { RUN_WINDOW_MS, SEND_SLACK_MS } from '../contracts/endpoint-gate';

export { RUN_WINDOW_MS, SEND_SLACK_MS };

/** The grants of the last window and slack, oldest first: [time, requests]. */
export type SendLog = Array<[at: number, count: number]>;

/**
 * How many requests a reservation at `now` could hold without waiting: none while an earlier
 * reservation is still ahead (times never go back). A page larger than this is cut to it, so that
 * the room left in a window is used now rather than held back with the whole page until the window
 * has passed: while the service's workers are idle, a window's last requests matter most.
 */
export function roomNow(log: SendLog, now: number, limit: number): number {
  if ((log.at(-1)?.[0] ?? now) > now) return 0;
  return Math.max(0, limit - heldAt(log, now));
}

/** The requests reserved in the window (and slack) that ends at `at`. */
function heldAt(log: SendLog, at: number): number {
  let held = 0;
  for (const [from, sent] of log) if (from > at - RUN_WINDOW_MS - SEND_SLACK_MS) held += sent;
  return held;
}
