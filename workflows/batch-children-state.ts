/**
 * The child mode's state (workflows/batch-children.ts): what a run carries to the next one, what
 * it keeps only while it runs (the children in flight, the recording under way), and the summary
 * and progress reported from it, through the batch's queries, signals and update.
 */
import { setHandler, workflowInfo } from '@temporalio/workflow';
import {
  type BatchCost,
  type BatchCounts,
  type BatchInput,
  type BatchProgress,
  type BatchResultLine,
  type BatchSummary,
  concurrencyIssue,
  concurrencySchema,
  type ParsedBatchInput,
} from '../contracts/batch-input';
import {
  batchProgressQuery,
  batchSummaryQuery,
  batchWantsHintQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from './batch-definitions';
import { emptyCounts, failureCount, resultsRefs, toleranceExceeded } from './batch-outcomes';

/** Everything a run of the child mode hands to the next one (no child is in flight then). */
export interface ChildBatchState {
  mode: 'children';
  batchKey: string;
  /** The batch store's name (`local`, `s3://bucket/prefix`), as the results reference gives it. */
  store?: string;
  manifestKey: string;
  total: number;
  /** The next item to start. */
  cursor: number;
  /** Lines of items that ended, not written yet. */
  lines: BatchResultLine[];
  counts: BatchCounts;
  submissions: number;
  uncertainSubmits: number;
  uncertainAdopted: number;
  resubmittedAfterLease: number;
  leaseLapses: number;
  retries: number;
  cost: BatchCost;
  maxConcurrency: number;
  paused: boolean;
  stopping: boolean;
  budgetExceeded?: boolean;
  startedAt: number;
  runs: number;
  /** History events of the earlier runs. */
  events: number;
}

/** One run of the child mode: the carried state and what lives only as long as the run. */
export interface ChildBatch {
  o: ParsedBatchInput;
  /** The caller's input as given: the next run's starts from it. */
  caller: BatchInput;
  s: ChildBatchState;
  batchId: string;
  /** Children started (or starting) and not ended, by item index. */
  inflight: Set<number>;
  /** A recordBatchResults is under way. */
  recording: boolean;
  /** Bumped by everything the main loop waits for. */
  dirty: number;
  cancelled: boolean;
}

export function newChildBatchState(o: ParsedBatchInput): ChildBatchState {
  return {
    mode: 'children',
    batchKey: '',
    manifestKey: '',
    total: 0,
    cursor: 0,
    lines: [],
    counts: emptyCounts(),
    submissions: 0,
    uncertainSubmits: 0,
    uncertainAdopted: 0,
    resubmittedAfterLease: 0,
    leaseLapses: 0,
    retries: 0,
    cost: { amount: 0, items: 0 },
    maxConcurrency: o.maxConcurrency,
    paused: false,
    stopping: false,
    startedAt: Date.now(),
    runs: 1,
    events: 0,
  };
}

/** Something the main loop waits for happened. */
export function bump(b: ChildBatch): void {
  b.dirty += 1;
}

export const failures = (b: ChildBatch): number => failureCount(b.s.counts);
export const exceeded = (b: ChildBatch): boolean =>
  toleranceExceeded(b.s.counts, b.s.total, b.o.failureTolerance);
export const overBudget = (b: ChildBatch): boolean =>
  b.o.budget !== undefined && b.s.cost.amount >= b.o.budget;

export function childSummary(b: ChildBatch, cancelled = false): BatchSummary {
  const { s, o } = b;
  const stoppedBecause = cancelled
    ? 'cancelled'
    : s.stopping
      ? s.budgetExceeded
        ? 'budget'
        : 'failure-tolerance'
      : undefined;
  return {
    batchId: b.batchId,
    endpointId: o.endpointId,
    total: s.total,
    counts: { ...s.counts },
    failures: failures(b),
    notStarted: Math.max(0, s.total - s.counts.completed - failures(b) - b.inflight.size),
    submissions: s.submissions,
    uncertainSubmits: s.uncertainSubmits,
    lease: leaseCounts(s),
    retries: s.retries,
    // Webhooks go to each child's own workflow.
    webhooks: 0,
    toleranceExceeded: exceeded(b),
    ...budgetFields(b),
    ...(stoppedBecause ? { stoppedBecause } : {}),
    cost: { ...s.cost },
    cancelled,
    ...resultsRefs(s.batchKey, s.store),
    manifestKey: s.manifestKey,
    startedAt: s.startedAt,
    elapsedMs: Date.now() - s.startedAt,
    runs: s.runs,
    historyEvents: s.events + workflowInfo().historyLength,
  };
}

function leaseCounts(s: ChildBatchState): BatchSummary['lease'] {
  return {
    uncertainAdopted: s.uncertainAdopted,
    resubmittedAfterLease: s.resubmittedAfterLease,
    leaseLapses: s.leaseLapses,
  };
}

function budgetFields(b: ChildBatch): { budget?: number; budgetExceeded?: boolean } {
  return b.o.budget === undefined ? {} : { budget: b.o.budget, budgetExceeded: b.s.budgetExceeded === true };
}

export function childProgress(b: ChildBatch): BatchProgress {
  const { s } = b;
  const done = s.counts.completed + failures(b);
  const ratePerSecond = (done * 1000) / Math.max(Date.now() - s.startedAt, 1);
  return {
    batchId: b.batchId,
    total: s.total,
    cursor: s.cursor,
    counts: { ...s.counts },
    done,
    inFlight: b.inflight.size,
    paused: s.paused,
    maxConcurrency: s.maxConcurrency,
    ratePerSecond,
    ...(ratePerSecond > 0 ? { etaMs: Math.round(((s.total - done) / ratePerSecond) * 1000) } : {}),
    submissions: s.submissions,
    uncertainSubmits: s.uncertainSubmits,
    lease: leaseCounts(s),
    retries: s.retries,
    runs: s.runs,
    historyEvents: s.events + workflowInfo().historyLength,
    startedAt: s.startedAt,
    toleranceExceeded: exceeded(b),
    ...budgetFields(b),
    cost: { ...s.cost },
  };
}

/** The batch's queries, signals and update, answered from this run. */
export function setChildBatchHandlers(b: ChildBatch): void {
  setHandler(batchProgressQuery, () => childProgress(b));
  setHandler(batchSummaryQuery, () => childSummary(b, b.cancelled));
  // Orphans report to their own child workflow, never to the batch.
  setHandler(batchWantsHintQuery, () => false);
  setHandler(pauseBatchSignal, () => {
    b.s.paused = true;
    bump(b);
  });
  setHandler(resumeBatchSignal, () => {
    b.s.paused = false;
    bump(b);
  });
  setHandler(
    setBatchConcurrencyUpdate,
    (value) => {
      const previous = b.s.maxConcurrency;
      b.s.maxConcurrency = value;
      bump(b);
      return previous;
    },
    {
      validator: (value) => {
        const checked = concurrencySchema.safeParse(value);
        if (!checked.success) throw new Error(`maxConcurrency: ${checked.error.issues[0]?.message}`);
        const issue = concurrencyIssue('children', value);
        if (issue) throw new Error(`maxConcurrency: ${issue}`);
      },
    },
  );
}
