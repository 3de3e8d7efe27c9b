/**
 * The child mode's state (workflows/batch/batch-children.ts): what a run carries to the next one
 * (the counters both modes keep, batch-report.ts) and what it keeps only while it runs (the
 * children in flight, the recording under way), and its view for the batch's queries and controls.
 */
import type { BatchInput, ParsedBatchInput } from '../../contracts/batch-input';
import type { BatchResultLine } from '../../contracts/batch-summary';
import { emptyCounts, emptyTally, failureCount } from './batch-outcomes';
import { type BatchControlState, type BatchView, listenToControls } from './batch-report';

/** Everything a run of the child mode hands to the next one (no child is in flight then). */
export interface ChildBatchState extends BatchControlState {
  mode: 'children';
  /** Lines of items that ended, not written yet. */
  lines: BatchResultLine[];
}

/** One run of the child mode: the carried state and what lives only as long as the run. */
export interface ChildBatch {
  input: ParsedBatchInput;
  /** The caller's input as given: the next run's starts from it. */
  caller: BatchInput;
  state: ChildBatchState;
  batchId: string;
  /** Children started (or starting) and not ended, by item index. */
  inflight: Set<number>;
  /** A recordBatchResults is under way. */
  recording: boolean;
  /** Bumped by everything the main loop waits for. */
  dirty: number;
  cancelled: boolean;
}

export function newChildBatchState(input: ParsedBatchInput): ChildBatchState {
  return {
    mode: 'children',
    batchKey: '',
    manifestKey: '',
    total: 0,
    cursor: 0,
    lines: [],
    counts: emptyCounts(),
    tally: emptyTally(),
    cost: { amount: 0, items: 0 },
    maxConcurrency: input.maxConcurrency,
    paused: false,
    stopping: false,
    startedAt: Date.now(),
    runs: 1,
    events: 0,
  };
}

/** Something the main loop waits for happened. */
export function bump(batch: ChildBatch): void {
  batch.dirty += 1;
}

export const failures = (batch: ChildBatch): number => failureCount(batch.state.counts);

/** The run as the summary, the progress and the stop rules see it: each open child may still cost. */
export function viewOf(batch: ChildBatch): BatchView {
  return {
    input: batch.input,
    state: batch.state,
    cancelled: batch.cancelled,
    underWay: batch.inflight.size,
    withJobs: batch.inflight.size,
  };
}

/** The batch's queries, signals and update, answered from this run. */
export function setChildBatchHandlers(batch: ChildBatch): void {
  listenToControls({
    mode: 'children',
    state: batch.state,
    view: () => viewOf(batch),
    // Orphans report to their own child workflow, never to the batch.
    wantsHint: () => false,
    wake: () => bump(batch),
  });
}
