/**
 * The automation's budget: once the ended runs' estimated cost reaches it, no run starts, and the
 * workflow fails (with what it did not run) when the last run in flight ends.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { AUTOMATION_FAILURE } from '../../contracts/failures';
import type { Automation } from './automation-state';

export function overBudget(automation: Automation): boolean {
  const { budget } = automation.controls;
  return budget !== undefined && (automation.counters.cost ?? 0) >= budget;
}

/** Budget reached and no run in flight or starting: nothing left that could end, so the workflow fails. */
export function budgetSpentAndSettled(automation: Automation): boolean {
  return overBudget(automation) && automation.inFlight.size === 0 && automation.starting === 0;
}

/** Budget reached and nothing in flight: the summary, with what was not started. */
export function budgetFailure(automation: Automation): ApplicationFailure {
  const { name, key, counters } = automation;
  const { budget } = automation.controls;
  const waiting = [...automation.ready.flat(), ...automation.pending];
  return ApplicationFailure.create({
    type: AUTOMATION_FAILURE.budgetExceeded,
    nonRetryable: true,
    message:
      `automation ${name} (key ${key}) reached its budget ${budget} ` +
      `(estimated ${counters.cost ?? 0}); ${waiting.length} event(s) were not run`,
    details: [
      {
        name,
        key,
        budget,
        counters: { ...counters },
        notStarted: waiting.length,
        // Their ids, so a caller can send them again (bounded: the failure is in history).
        notStartedIds: waiting.slice(0, 1_000).map((event) => event.id),
      },
    ],
  });
}
