/**
 * What steers a batch and what it tells: the signals, update and queries (pause, resume,
 * maxConcurrency, webhooks; progress, summary), the failure tolerance and the budget that stop its
 * submissions, and the running cost.
 */
import { log, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  type BatchEndpointSplit,
  type BatchLeaseCounts,
  type BatchProgress,
  type BatchSummary,
  concurrencySchema,
} from '../contracts/batch-input';
import {
  batchProgressQuery,
  batchSummaryQuery,
  batchWantsHintQuery,
  batchWebhooksSignal,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from './batch-definitions';
import { failureCount, resultsRefs, toleranceExceeded } from './batch-outcomes';
import { type BatchRun, bump, endpointIdAt, inFlight, submitting, withJobs } from './batch-run';
import { receiveHint, wantsHint } from './batch-watch';
import { jobWebhookSignal } from './definitions';

/** A gathered signal's hints taken at most (the gateway sends far fewer). */
const MAX_HINTS_PER_SIGNAL = 1_000;

export function listen(run: BatchRun): void {
  const { state } = run;
  setHandler(batchProgressQuery, () => progress(run));
  setHandler(batchSummaryQuery, () => summary(run));
  setHandler(batchWantsHintQuery, ({ item, jobId }) => wantsHint(run, item, jobId));
  setHandler(pauseBatchSignal, () => {
    state.paused = true;
    bump(run);
  });
  setHandler(resumeBatchSignal, () => {
    state.paused = false;
    bump(run);
  });
  setHandler(
    setBatchConcurrencyUpdate,
    (value) => {
      const previous = state.maxConcurrency;
      state.maxConcurrency = value;
      bump(run);
      return previous;
    },
    {
      validator: (value) => {
        const checked = concurrencySchema.safeParse(value);
        if (!checked.success) throw new Error(`maxConcurrency: ${checked.error.issues[0]?.message}`);
      },
    },
  );
  setHandler(jobWebhookSignal, (hint) => receiveHint(run, hint));
  setHandler(batchWebhooksSignal, (payload) => {
    const hints: unknown = (payload as { hints?: unknown } | undefined)?.hints;
    if (!Array.isArray(hints)) return;
    for (const hint of hints.slice(0, MAX_HINTS_PER_SIGNAL)) receiveHint(run, hint);
  });
}

/** Stops the submissions once the failures pass the tolerance or the budget is reached. */
export function checkStops(run: BatchRun): void {
  const { state } = run;
  if (state.stopping) return;
  if (exceeded(run)) {
    state.stopping = true;
    log.warn('failure tolerance exceeded: no more submissions; jobs in flight finish', {
      failures: failureCount(state.counts),
    });
    return;
  }
  if (overBudget(run) && waiting(run)) {
    state.stopping = true;
    state.budgetExceeded = true;
    log.warn('budget reached: no more submissions; jobs in flight finish', {
      estimate: state.cost.amount,
      budget: run.input.budget,
    });
  }
}

function exceeded(run: BatchRun): boolean {
  return toleranceExceeded(run.state.counts, run.state.total, run.input.failureTolerance);
}

/** Items still to submit (a budget reached after the last submit stops nothing). */
function waiting(run: BatchRun): boolean {
  const { state } = run;
  if (state.cursor < state.total) return true;
  for (const item of run.items.values())
    if (item.phase === 'queued' || item.phase === 'uncertain') return true;
  return false;
}

/** Jobs that may still cost: in flight (retries waiting included), uncertain, being submitted. */
function underWay(run: BatchRun): number {
  return inFlight(run) + submitting(run);
}

/** The budget stops the batch: reached, or the next item would pass it with nothing under way. */
function overBudget(run: BatchRun): boolean {
  const { budget } = run.input;
  if (budget === undefined) return false;
  return run.state.cost.amount >= budget || (budgetRoom(run) === 0 && underWay(run) === 0);
}

/**
 * How many more items the budget lets start: as many as fit when every job under way, and each
 * new one, is expected to cost what the finished runs cost on average ("would pass", not "has
 * passed": a window of jobs in flight can no longer overshoot it). Before any run has an estimate
 * there is nothing to go by.
 */
export function budgetRoom(run: BatchRun): number {
  const { budget } = run.input;
  if (budget === undefined) return Number.POSITIVE_INFINITY;
  const { cost } = run.state;
  if (cost.amount >= budget) return 0;
  if (cost.items === 0) return Number.POSITIVE_INFINITY;
  const mean = cost.amount / cost.items;
  return Math.max(0, Math.floor((budget - cost.amount) / mean) - underWay(run));
}

function leaseCounts(run: BatchRun): BatchLeaseCounts {
  const { uncertainAdopted, resubmittedAfterLease, leaseLapses } = run.state.tally;
  return { uncertainAdopted, resubmittedAfterLease, leaseLapses };
}

function budgetFields(run: BatchRun): { budget?: number; budgetExceeded?: boolean } {
  const { budget } = run.input;
  return budget === undefined ? {} : { budget, budgetExceeded: run.state.budgetExceeded === true };
}

/** The per-endpoint split, by endpoint id in route order. */
function endpointSplit(run: BatchRun): Record<string, BatchEndpointSplit> {
  const now = Date.now();
  const split: Record<string, BatchEndpointSplit> = {};
  run.state.endpoints.forEach((tally, at) => {
    const { completed, failed, moved, cost, drainedUntil } = tally;
    split[endpointIdAt(run, at)] = {
      completed,
      failed,
      moved,
      ...(cost === undefined ? {} : { cost }),
      ...(drainedUntil !== undefined && drainedUntil > now ? { drainedUntil } : {}),
    };
  });
  return split;
}

function stoppedBecause(run: BatchRun): BatchSummary['stoppedBecause'] {
  if (run.cancelled) return 'cancelled';
  if (!run.state.stopping) return undefined;
  return run.state.budgetExceeded ? 'budget' : 'failure-tolerance';
}

export function summary(run: BatchRun): BatchSummary {
  const { state } = run;
  const failures = failureCount(state.counts);
  const stopped = stoppedBecause(run);
  return {
    batchId: workflowInfo().workflowId,
    endpointId: run.input.endpointId,
    total: state.total,
    counts: { ...state.counts },
    failures,
    notStarted: Math.max(0, state.total - state.counts.completed - failures - withJobs(run)),
    submissions: state.tally.submissions,
    uncertainSubmits: state.tally.uncertainSubmits,
    lease: leaseCounts(run),
    retries: state.tally.retries,
    webhooks: state.tally.webhooks,
    hops: state.tally.hops,
    endpoints: endpointSplit(run),
    toleranceExceeded: exceeded(run),
    ...budgetFields(run),
    ...(stopped ? { stoppedBecause: stopped } : {}),
    cost: { ...state.cost },
    cancelled: run.cancelled,
    ...resultsRefs(state.batchKey, state.store),
    manifestKey: state.manifestKey,
    startedAt: state.startedAt,
    elapsedMs: Date.now() - state.startedAt,
    runs: state.runs,
    historyEvents: state.events + workflowInfo().historyLength,
  };
}

export function progress(run: BatchRun): BatchProgress {
  const { state } = run;
  const done = state.counts.completed + failureCount(state.counts);
  const elapsed = Math.max(Date.now() - state.startedAt, 1);
  const ratePerSecond = (done * 1000) / elapsed;
  const left = state.total - done;
  return {
    batchId: workflowInfo().workflowId,
    total: state.total,
    cursor: state.cursor,
    counts: { ...state.counts },
    done,
    inFlight: underWay(run),
    paused: state.paused,
    maxConcurrency: state.maxConcurrency,
    ratePerSecond,
    ...(ratePerSecond > 0 ? { etaMs: Math.round((left / ratePerSecond) * 1000) } : {}),
    submissions: state.tally.submissions,
    uncertainSubmits: state.tally.uncertainSubmits,
    lease: leaseCounts(run),
    retries: state.tally.retries,
    hops: state.tally.hops,
    endpoints: endpointSplit(run),
    runs: state.runs,
    historyEvents: state.events + workflowInfo().historyLength,
    startedAt: state.startedAt,
    toleranceExceeded: exceeded(run),
    ...budgetFields(run),
    cost: { ...state.cost },
  };
}
