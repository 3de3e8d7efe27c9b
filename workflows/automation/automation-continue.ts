/**
 * Continue-as-new for the automation: after `continueAfterEvents` events or when Temporal suggests
 * it, carrying the pending events, the remembered ids, the counters and the runs in flight, as
 * long as that carry fits in one payload.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { AutomationCarry } from '../../contracts/automation-input';
import type { Automation } from './automation-state';

/** A carry bigger than this waits for the pending events to drain before continuing as new. */
const MAX_CARRY_BYTES = 1_500_000;
/** Events to wait, after a carry too big, before the next try. */
const RETRY_AFTER_EVENTS = 100;

export function carryNow(automation: Automation): AutomationCarry {
  const { firstPendingAt, lastEventAt } = automation;
  return {
    pending: automation.pending,
    ...(firstPendingAt !== undefined ? { firstPendingAt } : {}),
    ...(lastEventAt !== undefined ? { lastEventAt } : {}),
    ready: automation.ready,
    seen: [...automation.seen],
    counters: automation.counters,
    inFlight: [...automation.inFlight].map(([workflowId, kind]) => ({ workflowId, kind })),
    seq: automation.seq,
  };
}

/** Cheap, for the wait's predicate (evaluated often); the carry's size is checked once, by carryFits. */
export function wantsContinue(automation: Automation): boolean {
  return automation.eventsThisRun >= automation.continueAt || workflowInfo().continueAsNewSuggested;
}

/** The event count reached and no start under way: worth waking the workflow to continue as new. */
export function continueDue(automation: Automation): boolean {
  return automation.starting === 0 && automation.eventsThisRun >= automation.continueAt;
}

/** Whether the carry fits; if not, the next try waits for more events (the pending may drain). */
export function carryFits(automation: Automation): boolean {
  if (JSON.stringify(carryNow(automation)).length <= MAX_CARRY_BYTES) return true;
  automation.continueAt = automation.eventsThisRun + RETRY_AFTER_EVENTS;
  return false;
}
