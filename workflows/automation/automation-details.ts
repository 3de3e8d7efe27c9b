/**
 * What the automation shows of itself: its state for the query, and the UI's current details.
 */
import { setCurrentDetails } from '@temporalio/workflow';
import type { AutomationState } from '../../contracts/automation-input';
import { automationCurrentDetails } from '../../contracts/current-details';
import type { Automation } from './automation-state';

export function automationState(automation: Automation): AutomationState {
  return {
    name: automation.name,
    key: automation.key,
    pending: automation.pending.length,
    ready: automation.ready.length,
    starting: automation.starting,
    inFlight: automation.inFlight.size,
    remembered: automation.seen.size,
    counters: { ...automation.counters },
  };
}

/**
 * The UI's current details, set wherever the state changes (an event, a run started or ended, a
 * group formed): setting them costs no history event, and rendering them is a small table.
 */
export function showDetails(automation: Automation): void {
  setCurrentDetails(automationCurrentDetails(automationState(automation), automation.controls));
}
