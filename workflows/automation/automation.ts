/**
 * One long-lived workflow per automation and key (workflow id `automation:<name>:<key>`): events
 * arrive by signal, flow controls group them, and each group becomes one run, a child job or batch
 * workflow, planned by the definition registered on the worker.
 *
 * - De-duplication: event ids are remembered with the time they arrived, for `dedupeWindow` (at
 *   most MAX_REMEMBERED, oldest dropped first); a repeat within the window is counted and dropped.
 * - Debounce: a group forms once the key has been quiet for `debounce`, with the events since the
 *   last group. Batching: a group forms at `maxEvents`, or `maxWait` after its first event. With
 *   neither, every event is its own group.
 * - Concurrency: at most `concurrency` runs in flight; further groups wait in arrival order.
 * - Runs are children with ids `<workflow id>:<first run id prefix>:<seq>`, ABANDONed on close; the
 *   next workflow run learns how those in flight end from awaitAutomationRun.
 * - Continue-as-new after `continueAfterEvents` events or when Temporal suggests it, carrying the
 *   pending events, the remembered ids, the counters and the runs in flight.
 * - Idle (nothing pending, in flight or remembered) for `idleTimeout`: the workflow ends; the next
 *   event starts it again.
 *
 * This module is the automation's life, its loop and its waits; the parts live beside it:
 * automation-state.ts (the state and its creation), automation-intake.ts (the signal handler and
 * de-duplication), automation-groups.ts (debounce and batching), automation-runs.ts (starting runs
 * and counting their ends), automation-budget.ts, automation-continue.ts and automation-details.ts
 * (the query's state and the UI's current details).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../../activities/automation';
import { groupDueSummary, idleEndSummary, readAutomationSummary } from '../../contracts/activity-summaries';
import type {
  AutomationCounters,
  AutomationEvent,
  AutomationWorkflowInput,
} from '../../contracts/automation-input';
import { budgetFailure, budgetSpentAndSettled } from './automation-budget';
import { carryFits, carryNow, continueDue, wantsContinue } from './automation-continue';
import { automationEventSignal, automationStateQuery } from './automation-definitions';
import { automationState, showDetails } from './automation-details';
import { formGroups, groupDueWithoutTimer, nextGroupDeadline } from './automation-groups';
import { forgetExpiredIds, receiveEvent } from './automation-intake';
import { canStartGroup, followCarriedRuns, startReadyGroups } from './automation-runs';
import { type Automation, isIdle, newAutomation } from './automation-state';

export { MAX_GROUP_EVENTS } from './automation-groups';
export { MAX_REMEMBERED } from './automation-intake';
export { DEFAULT_CONTINUE_AFTER_EVENTS } from './automation-state';

const { describeAutomation } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['AutomationNotRegistered'] },
});

// Every await of the automation is in this loop or in startRun (automation-runs.ts), and the helpers
// they call never await: the order in which the workflow issues its commands reads from those two.
export async function automationWorkflow(input: AutomationWorkflowInput): Promise<AutomationCounters> {
  const { name } = input;
  const controls = await describeAutomation.executeWithOptions({ summary: readAutomationSummary(name) }, [
    name,
  ]);
  const automation = newAutomation(input, controls);
  setHandler(automationEventSignal, (raw: AutomationEvent) => receiveEvent(automation, raw));
  setHandler(automationStateQuery, () => automationState(automation));
  followCarriedRuns(automation);

  for (;;) {
    const now = Date.now();
    forgetExpiredIds(automation, now);
    formGroups(automation, now);
    if (automation.fatal) throw automation.fatal;
    if (budgetSpentAndSettled(automation)) throw budgetFailure(automation);
    startReadyGroups(automation);
    showDetails(automation);
    if (automation.starting === 0 && wantsContinue(automation) && carryFits(automation)) {
      await condition(allHandlersFinished);
      // Signals handled while waiting are in `pending` and travel in the carry.
      return continueAsNew<typeof automationWorkflow>({ ...input, carry: carryNow(automation) });
    }
    const at = automation.version;
    if (isIdle(automation)) {
      const idleMs = idleWaitMs(automation, now);
      const woke = await condition(() => automation.version !== at, idleMs, {
        summary: idleEndSummary(now + idleMs),
      });
      if (!woke) {
        forgetExpiredIds(automation, Date.now());
        if (automation.seen.size === 0) return automation.counters;
      }
      continue;
    }
    const deadline = nextGroupDeadline(automation);
    const hadDeadline = deadline !== undefined;
    const actionable = () => automation.version !== at && hasWorkToDo(automation, hadDeadline);
    if (deadline === undefined) await condition(actionable);
    else {
      const dueMs = Math.max(deadline - now, 1);
      await condition(actionable, dueMs, {
        summary: groupDueSummary(now + dueMs, automation.pending.length),
      });
    }
  }
}

/**
 * How long an idle automation waits before it ends: its idleTimeout, and at least until its oldest
 * remembered id leaves the window (an end forgets them, so a repeat would then run again).
 */
function idleWaitMs(automation: Automation, now: number): number {
  const oldest = automation.seen.values().next();
  const forgetIn = oldest.done ? 0 : oldest.value + automation.controls.dedupeWindow - now;
  return Math.max(automation.controls.idleTimeout, forgetIn, 1);
}

/** After a signal or a run's end: whether the loop has something to do, so the wait ends. */
function hasWorkToDo(automation: Automation, hadDeadline: boolean): boolean {
  return (
    automation.fatal !== undefined ||
    canStartGroup(automation) ||
    budgetSpentAndSettled(automation) ||
    groupDueWithoutTimer(automation, hadDeadline) ||
    isIdle(automation) ||
    continueDue(automation)
  );
}
