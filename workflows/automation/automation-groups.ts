/**
 * The flow controls that turn pending events into groups, one run each: debounce (a group once the
 * key has been quiet for `debounce`), batching (a group at `maxEvents`, or `maxWait` after its
 * first event), and, with neither, one group per event.
 */
import type { Automation } from './automation-state';

/** A debounce with no batch flushes at this many events even if the key never goes quiet. */
export const MAX_GROUP_EVENTS = 1_000;

/** Moves the groups that are due from `pending` to `ready`. */
export function formGroups(automation: Automation, now: number): void {
  const { pending, ready } = automation;
  const { batch, debounce } = automation.controls;
  if (!batch && debounce === 0) {
    for (const event of pending.splice(0)) ready.push([event]);
    return;
  }
  const max = batch?.maxEvents ?? MAX_GROUP_EVENTS;
  while (pending.length >= max) {
    ready.push(pending.splice(0, max));
    // The arrival of the rest is not kept: their window starts now.
    automation.firstPendingAt = now;
  }
  if (pending.length === 0) return;
  const { firstPendingAt, lastEventAt } = automation;
  const quiet = debounce > 0 && lastEventAt !== undefined && now - lastEventAt >= debounce;
  const waited = batch !== undefined && firstPendingAt !== undefined && now - firstPendingAt >= batch.maxWait;
  if (quiet || waited) ready.push(pending.splice(0));
}

/** Workflow time (ms) the pending events form a group by time (quiet or waited), if they will. */
export function nextGroupDeadline(automation: Automation): number | undefined {
  if (automation.pending.length === 0) return undefined;
  const { batch, debounce } = automation.controls;
  const { firstPendingAt, lastEventAt } = automation;
  const times: number[] = [];
  if (debounce > 0 && lastEventAt !== undefined) times.push(lastEventAt + debounce);
  if (batch && firstPendingAt !== undefined) times.push(firstPendingAt + batch.maxWait);
  return times.length ? Math.min(...times) : undefined;
}

/**
 * Pending events worth waking the workflow for before any deadline: formGroups groups them at once
 * (one per event with no controls, a full batch or group), or the wait under way has no timer
 * (`hadDeadline` false) and a deadline must now be set for them.
 */
export function groupDueWithoutTimer(automation: Automation, hadDeadline: boolean): boolean {
  const { batch, debounce } = automation.controls;
  const waiting = automation.pending.length;
  return (
    (!batch && debounce === 0 && waiting > 0) ||
    (batch !== undefined && waiting >= batch.maxEvents) ||
    (!batch && waiting >= MAX_GROUP_EVENTS) ||
    (!hadDeadline && waiting > 0)
  );
}
