/**
 * The automation's event intake (its signal handler): an event is counted, checked against the
 * event rules, dropped if its id was seen within `dedupeWindow`, and otherwise left pending for
 * the flow controls (automation-groups.ts) to group.
 */
import { log } from '@temporalio/workflow';
import { type AutomationEvent, parseAutomationEvent } from '../../contracts/automation-input';
import { showDetails } from './automation-details';
import type { Automation } from './automation-state';

/** Ids remembered for de-duplication, at most (the carry must fit in one payload). */
export const MAX_REMEMBERED = 10_000;

export function receiveEvent(automation: Automation, raw: AutomationEvent): void {
  const { counters } = automation;
  counters.received++;
  automation.eventsThisRun++;
  automation.version++;
  // Sent around sendEvent's validation (a raw signal): refused here, counted, never grouped.
  const parsed = parseAutomationEvent(raw);
  if (!parsed.ok) {
    counters.invalid++;
    log.warn('automation event refused', { field: parsed.field, rule: parsed.rule });
    return;
  }
  const now = Date.now();
  forgetExpiredIds(automation, now);
  if (automation.seen.has(parsed.event.id)) {
    counters.duplicates++;
    return;
  }
  automation.seen.set(parsed.event.id, now);
  automation.pending.push(parsed.event);
  if (automation.pending.length === 1) automation.firstPendingAt = now;
  automation.lastEventAt = now;
  showDetails(automation);
}

/**
 * Forgets the ids older than `dedupeWindow`, and the oldest beyond MAX_REMEMBERED: `seen` is in
 * arrival order, so the first id still in the window and under the bound ends the sweep.
 */
export function forgetExpiredIds(automation: Automation, now: number): void {
  const { seen } = automation;
  for (const [id, at] of seen) {
    if (now - at < automation.controls.dedupeWindow && seen.size <= MAX_REMEMBERED) break;
    seen.delete(id);
  }
}
