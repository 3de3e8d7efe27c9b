/**
 * What a batch tells and what steers it, one copy for both modes: the summary and the progress
 * built from the state the modes share, the budget and tolerance that stop new items, and one
 * registration of the queries, signals and update (pause, resume, maxConcurrency).
 */
import { setHandler, workflowInfo } from '@temporalio/workflow';
import { type BatchMode, concurrencyChangeIssue, type ParsedBatchInput } from '../../contracts/batch-input';
import type {
  BatchCost,
  BatchCounts,
  BatchEndpointSplit,
  BatchLeaseCounts,
  BatchProgress,
  BatchSummary,
} from '../../contracts/batch-summary';
import { budgetRoom, budgetSpent } from '../../engine/batch-budget';
import {
  type BatchHintAnswer,
  batchProgressQuery,
  batchSummaryQuery,
  batchWantsHintQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from './batch-definitions';
import { type BatchTally, failureCount, resultsRefs, toleranceExceeded } from './batch-outcomes';

/** The state both modes carry that the summary, the progress and the controls read. */
export interface BatchControlState {
  batchKey: string;
  /** The batch store's name (`local`, `s3://bucket/prefix`), as the results reference gives it. */
  store?: string;
  manifestKey: string;
  total: number;
  /** Items below the cursor have been taken from the manifest. */
  cursor: number;
  counts: BatchCounts;
  tally: BatchTally;
  /** The running cost estimate of the finished runs. */
  cost: BatchCost;
  maxConcurrency: number;
  paused: boolean;
  /** Tolerance or budget reached: no new item starts. */
  stopping: boolean;
  budgetExceeded?: boolean;
  startedAt: number;
  runs: number;
  /** History events of the earlier runs. */
  events: number;
}

/** A run of either mode, as the summary, the progress and the stop rules see it. */
export interface BatchView {
  input: ParsedBatchInput;
  state: BatchControlState;
  cancelled: boolean;
  /** Jobs that may still cost: in flight (retries waiting included), uncertain, being started. */
  underWay: number;
  /** Items with a job or a child open (not "not started"). */
  withJobs: number;
  /** The per-endpoint split by endpoint id, in mode 'activities' (a route's hops come with it). */
  endpoints?: Record<string, BatchEndpointSplit>;
}

/** How many more items the budget lets start (engine/batch-budget.ts). */
export function roomInBudget(view: BatchView): number {
  return budgetRoom({ budget: view.input.budget, cost: view.state.cost, underWay: view.underWay });
}

/** The budget stops new items: reached, or the next one would pass it with nothing under way. */
export function overBudget(view: BatchView): boolean {
  return budgetSpent({ budget: view.input.budget, cost: view.state.cost, underWay: view.underWay });
}

export function exceeded(view: BatchView): boolean {
  return toleranceExceeded(view.state.counts, view.state.total, view.input.failureTolerance);
}

function leaseCounts({ tally }: BatchControlState): BatchLeaseCounts {
  const { uncertainAdopted, resubmittedAfterLease, leaseLapses } = tally;
  return { uncertainAdopted, resubmittedAfterLease, leaseLapses };
}

function budgetFields({ input, state }: BatchView): { budget?: number; budgetExceeded?: boolean } {
  const { budget } = input;
  return budget === undefined ? {} : { budget, budgetExceeded: state.budgetExceeded === true };
}

function routeFields(view: BatchView): { hops?: number; endpoints?: Record<string, BatchEndpointSplit> } {
  return view.endpoints === undefined ? {} : { hops: view.state.tally.hops, endpoints: view.endpoints };
}

function stoppedBecause({ cancelled, state }: BatchView): BatchSummary['stoppedBecause'] {
  if (cancelled) return 'cancelled';
  if (!state.stopping) return undefined;
  return state.budgetExceeded ? 'budget' : 'failure-tolerance';
}

export function batchSummary(view: BatchView): BatchSummary {
  const { state } = view;
  const failures = failureCount(state.counts);
  const stopped = stoppedBecause(view);
  return {
    batchId: workflowInfo().workflowId,
    endpointId: view.input.endpointId,
    total: state.total,
    counts: { ...state.counts },
    failures,
    notStarted: Math.max(0, state.total - state.counts.completed - failures - view.withJobs),
    submissions: state.tally.submissions,
    uncertainSubmits: state.tally.uncertainSubmits,
    lease: leaseCounts(state),
    retries: state.tally.retries,
    webhooks: state.tally.webhooks,
    ...routeFields(view),
    toleranceExceeded: exceeded(view),
    ...budgetFields(view),
    ...(stopped ? { stoppedBecause: stopped } : {}),
    cost: { ...state.cost },
    cancelled: view.cancelled,
    ...resultsRefs(state.batchKey, state.store),
    manifestKey: state.manifestKey,
    startedAt: state.startedAt,
    elapsedMs: Date.now() - state.startedAt,
    runs: state.runs,
    historyEvents: state.events + workflowInfo().historyLength,
  };
}

export function batchProgress(view: BatchView): BatchProgress {
  const { state } = view;
  const done = state.counts.completed + failureCount(state.counts);
  const ratePerSecond = (done * 1000) / Math.max(Date.now() - state.startedAt, 1);
  return {
    batchId: workflowInfo().workflowId,
    total: state.total,
    cursor: state.cursor,
    counts: { ...state.counts },
    done,
    inFlight: view.underWay,
    paused: state.paused,
    maxConcurrency: state.maxConcurrency,
    ratePerSecond,
    ...(ratePerSecond > 0 ? { etaMs: Math.round(((state.total - done) / ratePerSecond) * 1000) } : {}),
    submissions: state.tally.submissions,
    uncertainSubmits: state.tally.uncertainSubmits,
    lease: leaseCounts(state),
    retries: state.tally.retries,
    ...routeFields(view),
    runs: state.runs,
    historyEvents: state.events + workflowInfo().historyLength,
    startedAt: state.startedAt,
    toleranceExceeded: exceeded(view),
    ...budgetFields(view),
    cost: { ...state.cost },
  };
}

/** A batch run of either mode, as its controls reach it. */
export interface Controlled {
  mode: BatchMode;
  state: Pick<BatchControlState, 'paused' | 'maxConcurrency'>;
  /** The run's view now (for the queries). */
  view(): BatchView;
  /** Whether an orphan's webhook for this item and job is still wanted. */
  wantsHint(hint: { item: number; jobId: string }): BatchHintAnswer;
  /** Wakes the run's loop: something it waits for changed. */
  wake(): void;
}

/** The batch's queries, its pause and resume signals and its maxConcurrency update. */
export function listenToControls(run: Controlled): void {
  const { state } = run;
  setHandler(batchProgressQuery, () => batchProgress(run.view()));
  setHandler(batchSummaryQuery, () => batchSummary(run.view()));
  setHandler(batchWantsHintQuery, (hint) => run.wantsHint(hint));
  setHandler(pauseBatchSignal, () => {
    state.paused = true;
    run.wake();
  });
  setHandler(resumeBatchSignal, () => {
    state.paused = false;
    run.wake();
  });
  setHandler(
    setBatchConcurrencyUpdate,
    (value) => {
      const previous = state.maxConcurrency;
      state.maxConcurrency = value;
      run.wake();
      return previous;
    },
    {
      validator: (value) => {
        const issue = concurrencyChangeIssue(value, run.mode);
        if (issue) throw new Error(`maxConcurrency: ${issue}`);
      },
    },
  );
}
