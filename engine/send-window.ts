/**
 * A batch holds its endpoint's /run limit itself, whichever workers send its pages: the workflow
 * (state the Temporal server keeps) reserves each page's send time, and a page's requests go out
 * within SEND_SLACK_MS of that time or not at all (they come back unsent and are queued again).
 * No window of RUN_WINDOW_MS + SEND_SLACK_MS holds reservations for more than the limit, so no
 * 10 s window of the service's holds more requests than that, however many worker processes share
 * the batch. Each process's own limiter stays in place for everything else.
 */

/** The service counts an endpoint's requests of one operation in any window this long. */
export const RUN_WINDOW_MS = 10_000;
/**
 * How late a request may go out after its page's reserved time: the time an activity task takes to
 * reach a worker, with room to spare. A request later than that is not sent.
 */
export const SEND_SLACK_MS = 500;

/** The reservations of the last window and slack, oldest first: [send time, requests]. */
export type SendLog = Array<[at: number, count: number]>;

/**
 * The earliest time from `now` on at which `count` more requests fit, recorded in `log`. Times
 * never go back: each reservation comes at or after the previous one, so only the window ending
 * at it needs checking. `count` at most `limit` (a page is never larger than the limit).
 */
export function reserveSend(log: SendLog, count: number, now: number, limit: number): number {
  if (count > limit) throw new RangeError(`a page of ${count} cannot fit a limit of ${limit}`);
  const span = RUN_WINDOW_MS + SEND_SLACK_MS;
  // No window from now on holds these.
  while (log.length > 0 && (log[0]?.[0] ?? 0) <= now - span) log.shift();
  let at = Math.max(now, log.at(-1)?.[0] ?? now);
  let held = heldAt(log, at);
  // The oldest reservations leave the window, one by one, until this one fits.
  for (const [from, sent] of log) {
    if (held + count <= limit) break;
    if (from <= at - span) continue;
    at = from + span;
    held -= sent;
  }
  const last = log.at(-1);
  if (last?.[0] === at) last[1] += count;
  else log.push([at, count]);
  return at;
}

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
