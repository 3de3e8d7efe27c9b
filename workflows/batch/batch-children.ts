/**
 * The batch's child mode (`mode: 'children'`): one serverlessJob child workflow per item, for
 * callers who want each item in the UI, in the same sliding window, tolerance, budget and summary
 * as the activities mode (workflows/batch/batch.ts), and the same results file.
 *
 * - No item's request or output enters the batch's history: a child gets `requestRef` (the item's
 *   line of the manifest; the job's activities read it from the batch store) and runs with
 *   outputInlineMaxBytes 0, so its result carries a reference to the result store. The batch writes
 *   each item's line (that reference, status, attempts, submissions, cost) through
 *   recordBatchResults. Every per-item rule (retry, expiry, uncertain submits, the submit lease) is
 *   the job workflow's own.
 * - A child's id is `${batchId}/item-${index}`: the start is a command of this workflow's history,
 *   so a replayed or retried task never starts a second one. ParentClosePolicy REQUEST_CANCEL: a
 *   batch that ends (terminated, timed out) cancels its children, which cancel their jobs.
 *   Cancelling the batch cancels the children in flight, waits for them (each cancels its remote
 *   job), records their lines and ends the batch as cancelled.
 * - Each child costs the batch a few events (its start, its end, a workflow task), against a
 *   fraction of one per item in the activities mode: prefer that one for large batches.
 * - Continue-as-new, the simplest correct rule: once the run is full (Temporal suggests it, or
 *   maxEventsPerRun), no new child starts; the ones in flight finish and are recorded, then the run
 *   continues as new carrying the cursor and the counters only (no child spans two runs). The
 *   window empties at each such turn.
 */

import {
  CancellationScope,
  condition,
  isCancellation,
  log,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities } from '../../activities/batch';
import type { BatchInput, ParsedBatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import {
  type ChildBatch,
  type ChildBatchState,
  failures,
  newChildBatchState,
  setChildBatchHandlers,
  viewOf,
} from './batch-children-state';
import { idle, RECORD_CHUNK, recordActivities, startChildren, startRecord } from './batch-children-window';
import { continueBatch, runIsFull } from './batch-continue';
import { endWith } from './batch-outcomes';
import { batchSummary, exceeded, overBudget } from './batch-report';

export type { ChildBatchState } from './batch-children-state';

const stageActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['BadRequest'] },
});

/** Runs (or carries on) a batch in child mode; returns its summary or throws the typed failure. */
export async function runChildBatch(
  input: ParsedBatchInput,
  caller: BatchInput,
  carried: ChildBatchState | undefined,
): Promise<BatchSummary> {
  const batch: ChildBatch = {
    input,
    caller,
    state: carried ?? newChildBatchState(input),
    batchId: workflowInfo().workflowId,
    inflight: new Set<number>(),
    recording: false,
    dirty: 0,
    cancelled: false,
  };
  setChildBatchHandlers(batch);
  try {
    if (!carried) {
      const staged = await stageActivities.stageBatchItems({ items: input.items });
      batch.state.batchKey = staged.batchKey;
      if (staged.store !== undefined) batch.state.store = staged.store;
      batch.state.manifestKey = staged.manifestKey;
      batch.state.total = staged.total;
    }
    return await runWindow(batch);
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      batch.cancelled = true;
      await CancellationScope.nonCancellable(() => drainCancelled(batch));
    }
    throw error;
  }
}

/**
 * The main loop: stops starting children once the tolerance or the budget is passed, keeps the
 * window full and the lines written, and ends the batch, or the run, once there is nothing left.
 */
async function runWindow(batch: ChildBatch): Promise<BatchSummary> {
  const { state } = batch;
  for (;;) {
    stopIfDue(batch);
    const full = runIsFull(batch.input.maxEventsPerRun);
    if (!full) startChildren(batch);
    startRecord(batch);
    if ((state.stopping || state.cursor >= state.total) && idle(batch))
      return endWith(batchSummary(viewOf(batch)));
    if (full && idle(batch)) return continueWithNextRun(batch);
    const seen = batch.dirty;
    await condition(() => batch.dirty !== seen);
  }
}

/**
 * No new child once the failure tolerance is exceeded or the budget is spent (batch-report.ts: the
 * rule of both modes); those in flight finish.
 */
function stopIfDue(batch: ChildBatch): void {
  const { state, input } = batch;
  if (!state.stopping && exceeded(viewOf(batch))) {
    state.stopping = true;
    log.warn('failure tolerance exceeded: no more children; those in flight finish', {
      failures: failures(batch),
    });
  }
  if (!state.stopping && overBudget(viewOf(batch)) && state.cursor < state.total) {
    state.stopping = true;
    state.budgetExceeded = true;
    log.warn('budget reached: no more children; those in flight finish', {
      estimate: state.cost.amount,
      budget: input.budget,
    });
  }
}

/** With no child open and every line written: the next run carries the cursor and the counters. */
function continueWithNextRun(batch: ChildBatch): Promise<never> {
  const { state } = batch;
  return continueBatch(batch.caller, state.manifestKey, () => {
    state.events += workflowInfo().historyLength;
    state.runs += 1;
    return { children: state };
  });
}

/**
 * The batch is cancelled: the children were asked to cancel with its scope, so each cancels its
 * job and ends; their lines are written before the batch ends as cancelled.
 */
async function drainCancelled(batch: ChildBatch): Promise<void> {
  const { state } = batch;
  state.stopping = true;
  await condition(() => batch.inflight.size === 0 && !batch.recording);
  while (state.lines.length > 0) {
    const lines = state.lines.splice(0, RECORD_CHUNK);
    await recordActivities.recordBatchResults({ batchKey: state.batchKey, lines });
  }
}
