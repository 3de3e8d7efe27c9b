/**
 * The automation's runs: each group is planned by the definition (an activity: the user's `run` is
 * code the workflow must not run itself) and started as a child job, batch or pipeline workflow, up to the
 * concurrency; each run's end is counted, with its estimated cost.
 *
 * Runs are children with ids `<workflow id>:<first run id prefix>:<seq>`: a replay issues the same
 * start, and a later automation workflow of the same key (after an idle end) never collides with
 * an earlier one's runs. They are ABANDONed on close: a continue-as-new closes this run, and a run
 * in flight must not be killed by it. The next run learns how they end from awaitAutomationRun
 * (one look per attempt, no slot held), since a child's end is reported only to the run that
 * started it.
 */
import {
  ApplicationFailure,
  log,
  ParentClosePolicy,
  proxyActivities,
  startChild,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../../activities/automation';
import { awaitRunSummary, planRunSummary } from '../../contracts/activity-summaries';
import { type AutomationEvent, runCost } from '../../contracts/automation-input';
import { failedRunCost } from '../../contracts/automation-run-cost';
import { workloadTaskPriority } from '../../contracts/task-priority';
import { overBudget } from './automation-budget';
import { showDetails } from './automation-details';
import { type Automation, hasFreeSlot } from './automation-state';

const { planAutomationRun } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['AutomationNotRegistered', 'BadRequest'] },
});
// Unlimited attempts: each attempt looks once and asks for the next look (nextRetryDelay).
const { awaitAutomationRun } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 1 },
});

/** A group can start now: one is waiting, a slot is free and the budget is not reached. */
export function canStartGroup(automation: Automation): boolean {
  return automation.ready.length > 0 && hasFreeSlot(automation) && !overBudget(automation);
}

/**
 * Groups are planned and started side by side, up to the free slots; sequence numbers are taken
 * in order here, so a replay gives every group the same run id.
 */
export function startReadyGroups(automation: Automation): void {
  while (canStartGroup(automation)) {
    const group = automation.ready.shift() as AutomationEvent[];
    automation.starting++;
    void startRun(automation, group)
      .catch((error: unknown) => {
        automation.fatal = error;
      })
      .finally(() => {
        automation.starting--;
        automation.version++;
        showDetails(automation);
      });
  }
}

/** Plans a group's run and starts it; rejects only when the automation is not registered. */
async function startRun(automation: Automation, events: AutomationEvent[]): Promise<void> {
  const { name, key, counters } = automation;
  const seq = ++automation.seq;
  const runId = `${automation.runPrefix}:${seq}`;
  let plan: Awaited<ReturnType<typeof planAutomationRun>>;
  try {
    plan = await planAutomationRun.executeWithOptions({ summary: planRunSummary(seq, events.length) }, [
      { name, key, runId, events },
    ]);
  } catch (error) {
    // No definition: no later group can run either, so the workflow fails.
    if (error instanceof Error && error.cause instanceof ApplicationFailure) {
      if (error.cause.type === 'AutomationNotRegistered') throw error.cause;
    }
    counters.runsFailed++;
    log.warn('automation run not planned', { runId, error: String(error) });
    return;
  }
  if (plan === null) {
    counters.groupsSkipped++;
    return;
  }
  const options = {
    workflowId: runId,
    parentClosePolicy: ParentClosePolicy.ABANDON,
    ...(automation.controls.taskQueue ? { taskQueue: automation.controls.taskQueue } : {}),
  };
  let result: Promise<unknown>;
  try {
    const child =
      plan.kind === 'job'
        ? await startChild('serverlessJob', {
            ...options,
            args: [plan.input],
            ...workloadTaskPriority(plan.input),
          })
        : plan.kind === 'batch'
          ? await startChild('serverlessBatch', {
              ...options,
              args: [plan.input],
              ...workloadTaskPriority(plan.input),
            })
          : await startChild('serverlessPipeline', {
              ...options,
              args: [plan.input],
              ...workloadTaskPriority(plan.input),
            });
    result = child.result();
  } catch (error) {
    counters.runsFailed++;
    log.warn('automation run not started', { runId, error: String(error) });
    return;
  }
  counters.runsStarted++;
  automation.inFlight.set(runId, plan.kind);
  showDetails(automation);
  void result.then(
    (value) => runEnded(automation, runId, 'completed', runCost(value)),
    (error: unknown) => runEnded(automation, runId, 'failed', failedRunCost(error)),
  );
}

/** Runs carried from an earlier workflow run: their ends are reported to it, so they are looked at. */
export function followCarriedRuns(automation: Automation): void {
  for (const workflowId of automation.inFlight.keys()) {
    void awaitAutomationRun
      .executeWithOptions({ summary: awaitRunSummary(workflowId) }, [{ workflowId }])
      .then(
        (answer) => runEnded(automation, workflowId, answer.outcome, answer.cost),
        () => runEnded(automation, workflowId, 'failed'),
      );
  }
}

/** Counts a run's end once (a run no longer in flight was counted already). */
function runEnded(
  automation: Automation,
  workflowId: string,
  outcome: 'completed' | 'failed',
  cost = 0,
): void {
  const { counters } = automation;
  if (!automation.inFlight.delete(workflowId)) return;
  if (outcome === 'completed') counters.runsCompleted++;
  else counters.runsFailed++;
  if (cost > 0) counters.cost = (counters.cost ?? 0) + cost;
  automation.version++;
  showDetails(automation);
}
