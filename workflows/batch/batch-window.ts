/**
 * A window's turn: the work of the jobs of one endpoint or route, as the batch's loop does it and
 * as each stage of a pipeline does it (workflows/pipeline/), so both run their jobs alike: orphans
 * adopted and uncertain submits settled, then the route's looks, the submits, the retries, the
 * lease extensions, the watchers, the result lines and the cancels started; and the next time
 * something of the window falls due.
 */
import { holdEndsAt } from '../../engine/batch-route';
import { dueOf, type ItemDue } from '../../engine/item-state';
import { startCancels } from './batch-cancel';
import { startExtensions } from './batch-lease';
import { startRecord } from './batch-record';
import { startRetries } from './batch-retry';
import { routeDue, startRouteWork } from './batch-route-run';
import type { BatchRun } from './batch-run';
import { startSubmits } from './batch-submit';
import { adoptOrphans, settleUncertain, startWatch } from './batch-watch';

/** What the webhooks and the waits settled: before the stops are judged. */
export function settleWindow(run: BatchRun, now: number): void {
  adoptOrphans(run);
  settleUncertain(run, now);
}

/** Starts whatever of the window's work can start now. */
export function startWindowWork(run: BatchRun, now: number): void {
  startRouteWork(run, now);
  startSubmits(run, now);
  startRetries(run, now);
  startExtensions(run);
  startWatch(run);
  startRecord(run);
  startCancels(run);
}

/** The next time something falls due; what is due already waits for a bump (an activity ending). */
export function windowDue(run: BatchRun, now: number): ItemDue | undefined {
  let next = routeDue(run, now);
  // An endpoint held as paused (engine/batch-route.ts afterPageAnswer) takes pages again then.
  for (const until of run.state.endpoints.map((tally) => holdEndsAt(tally, now))) {
    if (until !== undefined && (next === undefined || until < next.at)) next = { at: until, work: 'submit' };
  }
  for (const item of run.items.values()) {
    if (run.retrying.has(item.index)) continue;
    const due = dueOf(item);
    if (due !== undefined && due.at > now && (next === undefined || due.at < next.at)) next = due;
  }
  return next;
}
