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
 * - Runs are children with ids `<workflow id>:<first run id prefix>:<seq>`: a replay issues the
 *   same start, and a later automation workflow of the same key (after an idle end) never collides
 *   with an earlier one's runs. They are ABANDONed on close: a continue-as-new closes this run, and
 *   a run in flight must not be killed by it. The next run learns how they end from
 *   awaitAutomationRun (one look per attempt, no slot held), since a child's end is reported only
 *   to the run that started it.
 * - Continue-as-new after `continueAfterEvents` events or when Temporal suggests it, carrying the
 *   pending events, the remembered ids, the counters and the runs in flight.
 * - Idle (nothing pending, in flight or remembered) for `idleTimeout`: the workflow ends; the next
 *   event starts it again.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { AutomationActivities } from '../activities/automation';
import {
  awaitRunSummary,
  groupDueSummary,
  idleEndSummary,
  planRunSummary,
  readAutomationSummary,
} from '../contracts/activity-summaries';
import {
  AUTOMATION_BUDGET_EXCEEDED,
  type AutomationCarry,
  type AutomationCounters,
  type AutomationEvent,
  type AutomationState,
  type AutomationWorkflowInput,
  parseAutomationEvent,
  runCost,
} from '../contracts/automation-input';
import { failedRunCost } from '../contracts/automation-run-cost';
import { automationCurrentDetails } from '../contracts/current-details';
import { automationEventSignal, automationStateQuery } from './automation-definitions';

/** Ids remembered for de-duplication, at most (the carry must fit in one payload). */
export const MAX_REMEMBERED = 10_000;
/** A debounce with no batch flushes at this many events even if the key never goes quiet. */
export const MAX_GROUP_EVENTS = 1_000;
export const DEFAULT_CONTINUE_AFTER_EVENTS = 1_000;
/** A carry bigger than this waits for the pending events to drain before continuing as new. */
const MAX_CARRY_BYTES = 1_500_000;

const { describeAutomation } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['AutomationNotRegistered'] },
});
const { planAutomationRun } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['AutomationNotRegistered', 'BadRequest'] },
});
// Unlimited attempts: each attempt looks once and asks for the next look (nextRetryDelay).
const { awaitAutomationRun } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 1 },
});

function freshCarry(): AutomationCarry {
  return {
    pending: [],
    ready: [],
    seen: [],
    counters: {
      received: 0,
      duplicates: 0,
      runsStarted: 0,
      runsCompleted: 0,
      runsFailed: 0,
      groupsSkipped: 0,
      invalid: 0,
      cost: 0,
    },
    inFlight: [],
    seq: 0,
  };
}

export async function automationWorkflow(input: AutomationWorkflowInput): Promise<AutomationCounters> {
  const { name, key } = input;
  const carry = input.carry ?? freshCarry();
  const { pending, ready, counters } = carry;
  const seen = new Map(carry.seen);
  const inFlight = new Map(carry.inFlight.map((run) => [run.workflowId, run.kind]));
  let { firstPendingAt, lastEventAt, seq } = carry;
  let handledThisRun = 0;
  /** Runs being planned and started (not in flight yet: no child started). */
  let starting = 0;
  /** A failure that must end the workflow (no definition), raised by a start under way. */
  let fatal: unknown;
  // Bumped by every signal and every run's end: what the waits below wake on.
  let version = 0;
  const info = workflowInfo();
  const runPrefix = `${info.workflowId}:${info.firstExecutionRunId.slice(0, 8)}`;
  const continueAfter = input.continueAfterEvents ?? DEFAULT_CONTINUE_AFTER_EVENTS;

  const controls = await describeAutomation.executeWithOptions({ summary: readAutomationSummary(name) }, [
    name,
  ]);
  const { batch, debounce, concurrency, dedupeWindow } = controls;

  function stateNow(): AutomationState {
    return {
      name,
      key,
      pending: pending.length,
      ready: ready.length,
      starting,
      inFlight: inFlight.size,
      remembered: seen.size,
      counters: { ...counters },
    };
  }
  /**
   * The UI's current details, set wherever the state changes (an event, a run started or ended, a
   * group formed): setting them costs no history event, and rendering them is a small table.
   */
  function showDetails(): void {
    setCurrentDetails(automationCurrentDetails(stateNow(), controls));
  }

  function prune(now: number): void {
    for (const [id, at] of seen) {
      if (now - at < dedupeWindow && seen.size <= MAX_REMEMBERED) break;
      seen.delete(id);
    }
  }

  setHandler(automationEventSignal, (raw: AutomationEvent) => {
    counters.received++;
    handledThisRun++;
    version++;
    const parsed = parseAutomationEvent(raw);
    if (!parsed.ok) {
      counters.invalid++;
      log.warn('automation event refused', { field: parsed.field, rule: parsed.rule });
      return;
    }
    const now = Date.now();
    prune(now);
    if (seen.has(parsed.event.id)) {
      counters.duplicates++;
      return;
    }
    seen.set(parsed.event.id, now);
    pending.push(parsed.event);
    if (pending.length === 1) firstPendingAt = now;
    lastEventAt = now;
    showDetails();
  });

  setHandler(automationStateQuery, stateNow);

  function ended(workflowId: string, outcome: 'completed' | 'failed', cost = 0): void {
    if (!inFlight.delete(workflowId)) return;
    if (outcome === 'completed') counters.runsCompleted++;
    else counters.runsFailed++;
    if (cost > 0) counters.cost = (counters.cost ?? 0) + cost;
    version++;
    showDetails();
  }
  for (const workflowId of inFlight.keys()) {
    void awaitAutomationRun
      .executeWithOptions({ summary: awaitRunSummary(workflowId) }, [{ workflowId }])
      .then(
        (answer) => ended(workflowId, answer.outcome, answer.cost),
        () => ended(workflowId, 'failed'),
      );
  }

  const overBudget = () => controls.budget !== undefined && (counters.cost ?? 0) >= controls.budget;
  /** Budget reached and nothing in flight: the summary, with what was not started. */
  function budgetFailure(): ApplicationFailure {
    const waiting = [...ready.flat(), ...pending];
    return ApplicationFailure.create({
      type: AUTOMATION_BUDGET_EXCEEDED,
      nonRetryable: true,
      message:
        `automation ${name} (key ${key}) reached its budget ${controls.budget} ` +
        `(estimated ${counters.cost ?? 0}); ${waiting.length} event(s) were not run`,
      details: [
        {
          name,
          key,
          budget: controls.budget,
          counters: { ...counters },
          notStarted: waiting.length,
          // Their ids, so a caller can send them again (bounded: the failure is in history).
          notStartedIds: waiting.slice(0, 1_000).map((event) => event.id),
        },
      ],
    });
  }

  /** Moves the groups that are due from `pending` to `ready`. */
  function formGroups(now: number): void {
    if (!batch && debounce === 0) {
      for (const event of pending.splice(0)) ready.push([event]);
      return;
    }
    const max = batch?.maxEvents ?? MAX_GROUP_EVENTS;
    while (pending.length >= max) {
      ready.push(pending.splice(0, max));
      // The arrival of the rest is not kept: their window starts now.
      firstPendingAt = now;
    }
    if (pending.length === 0) return;
    const quiet = debounce > 0 && lastEventAt !== undefined && now - lastEventAt >= debounce;
    const waited =
      batch !== undefined && firstPendingAt !== undefined && now - firstPendingAt >= batch.maxWait;
    if (quiet || waited) ready.push(pending.splice(0));
  }

  function nextDeadline(): number | undefined {
    if (pending.length === 0) return undefined;
    const times: number[] = [];
    if (debounce > 0 && lastEventAt !== undefined) times.push(lastEventAt + debounce);
    if (batch && firstPendingAt !== undefined) times.push(firstPendingAt + batch.maxWait);
    return times.length ? Math.min(...times) : undefined;
  }

  function carryNow(): AutomationCarry {
    return {
      pending,
      ...(firstPendingAt !== undefined ? { firstPendingAt } : {}),
      ...(lastEventAt !== undefined ? { lastEventAt } : {}),
      ready,
      seen: [...seen],
      counters,
      inFlight: [...inFlight].map(([workflowId, kind]) => ({ workflowId, kind })),
      seq,
    };
  }

  /** Events after which the next continue-as-new is tried (moved on when the carry was too big). */
  let continueAt = continueAfter;
  /** Cheap, for the wait's predicate (evaluated often); the carry's size is checked once, below. */
  function wantsContinue(): boolean {
    return handledThisRun >= continueAt || workflowInfo().continueAsNewSuggested;
  }
  function carryFits(): boolean {
    if (JSON.stringify(carryNow()).length <= MAX_CARRY_BYTES) return true;
    continueAt = handledThisRun + 100;
    return false;
  }

  async function startRun(events: AutomationEvent[]): Promise<void> {
    seq++;
    const runId = `${runPrefix}:${seq}`;
    let plan: Awaited<ReturnType<typeof planAutomationRun>>;
    try {
      plan = await planAutomationRun.executeWithOptions({ summary: planRunSummary(seq, events.length) }, [
        { name, key, runId, events },
      ]);
    } catch (error) {
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
      ...(controls.taskQueue ? { taskQueue: controls.taskQueue } : {}),
    };
    let result: Promise<unknown>;
    try {
      const child =
        plan.kind === 'job'
          ? await startChild('serverlessJob', { ...options, args: [plan.input] })
          : await startChild('serverlessBatch', { ...options, args: [plan.input] });
      result = child.result();
    } catch (error) {
      counters.runsFailed++;
      log.warn('automation run not started', { runId, error: String(error) });
      return;
    }
    counters.runsStarted++;
    inFlight.set(runId, plan.kind);
    showDetails();
    void result.then(
      (value) => ended(runId, 'completed', runCost(value)),
      (error: unknown) => ended(runId, 'failed', failedRunCost(error)),
    );
  }

  for (;;) {
    const now = Date.now();
    prune(now);
    formGroups(now);
    if (fatal) throw fatal;
    if (overBudget() && inFlight.size === 0 && starting === 0) throw budgetFailure();
    // Groups are planned and started side by side, up to the free slots; sequence numbers are
    // taken in order here, so a replay gives every group the same run id.
    while (ready.length > 0 && inFlight.size + starting < concurrency && !overBudget()) {
      const group = ready.shift() as AutomationEvent[];
      starting++;
      void startRun(group)
        .catch((error: unknown) => {
          fatal = error;
        })
        .finally(() => {
          starting--;
          version++;
          showDetails();
        });
    }
    showDetails();
    if (starting === 0 && wantsContinue() && carryFits()) {
      await condition(allHandlersFinished);
      // Signals handled while waiting are in `pending` and travel in the carry.
      return continueAsNew<typeof automationWorkflow>({ ...input, carry: carryNow() });
    }
    const at = version;
    if (pending.length === 0 && ready.length === 0 && inFlight.size === 0 && starting === 0) {
      const oldest = seen.values().next();
      const forgetIn = oldest.done ? 0 : oldest.value + dedupeWindow - now;
      const idleMs = Math.max(controls.idleTimeout, forgetIn, 1);
      const woke = await condition(() => version !== at, idleMs, { summary: idleEndSummary(now + idleMs) });
      if (!woke) {
        prune(Date.now());
        if (seen.size === 0) return counters;
      }
      continue;
    }
    const deadline = nextDeadline();
    const hadDeadline = deadline !== undefined;
    const actionable = () =>
      version !== at &&
      (fatal !== undefined ||
        (ready.length > 0 && inFlight.size + starting < concurrency && !overBudget()) ||
        (overBudget() && inFlight.size === 0 && starting === 0) ||
        (!batch && debounce === 0 && pending.length > 0) ||
        (batch !== undefined && pending.length >= batch.maxEvents) ||
        (!batch && pending.length >= MAX_GROUP_EVENTS) ||
        (!hadDeadline && pending.length > 0) ||
        (pending.length === 0 && ready.length === 0 && inFlight.size === 0 && starting === 0) ||
        (starting === 0 && handledThisRun >= continueAt));
    if (deadline === undefined) await condition(actionable);
    else {
      const dueMs = Math.max(deadline - now, 1);
      await condition(actionable, dueMs, { summary: groupDueSummary(now + dueMs, pending.length) });
    }
  }
}
