/**
 * The child mode's sliding window: a serverlessJob child per item, never more than maxConcurrency
 * open, and the ended items' lines written through recordBatchResults a chunk at a time. Each
 * child or recording that ends bumps the batch, which wakes its main loop.
 */
import {
  CancellationScope,
  isCancellation,
  log,
  ParentClosePolicy,
  proxyActivities,
  startChild,
} from '@temporalio/workflow';
import type { BatchActivities } from '../../activities/batch';
import { type JobWorkflowInput, pollingInputOf } from '../../contracts/job-input';
import { workloadTaskPriority } from '../../contracts/task-priority';
import type { serverlessJob } from '../job/job';
import { addCost, completedLine, failedLine, itemEnded, notStartedLine } from './batch-children-lines';
import { bump, type ChildBatch, viewOf } from './batch-children-state';
import { roomInBudget } from './batch-report';

/** How many lines one recordBatchResults writes at most. */
export const RECORD_CHUNK = 2_000;

export const recordActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * Starts children until the window is full or the budget has no room for one more (each child
 * open counted at the mean cost so far), unless the batch is paused or stopping.
 */
export function startChildren(batch: ChildBatch): void {
  const { state } = batch;
  if (state.paused || state.stopping) return;
  while (
    batch.inflight.size < state.maxConcurrency &&
    state.cursor < state.total &&
    roomInBudget(viewOf(batch)) > 0
  )
    launch(batch, state.cursor++);
}

/** The job workflow's input for an item: the batch's per-item options, the request by reference. */
function childInput(batch: ChildBatch, index: number): JobWorkflowInput {
  const { polling, outputInlineMaxBytes: _inline, ...job } = batch.input.job;
  return {
    // On a route, each child falls back between its endpoints on its own (a job's route).
    ...(batch.input.route === undefined
      ? { endpointId: batch.input.endpointId }
      : { route: batch.input.route }),
    requestRef: { manifestKey: batch.state.manifestKey, index },
    ...job,
    ...(polling === undefined ? {} : { polling: pollingInputOf(polling) }),
    // Outputs always go to the result store: the child's result, in this history, is a reference.
    outputInlineMaxBytes: 0,
  };
}

function launch(batch: ChildBatch, index: number): void {
  const { state } = batch;
  batch.inflight.add(index);
  const startedAt = Date.now();
  startChild<typeof serverlessJob>('serverlessJob', {
    workflowId: `${batch.batchId}/item-${index}`,
    args: [childInput(batch, index)],
    // The batch's priority, and its endpoint (a route's first) as the child's task fairness key, as
    // each child's own start would have it (contracts/task-priority.ts).
    ...workloadTaskPriority(batch.input),
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
  })
    .then(
      (handle) =>
        handle.result().then(
          (result) => {
            addCost(state, result);
            itemEnded(state, completedLine(index, result, startedAt), result);
          },
          (error: unknown) => {
            const { line, details } = failedLine(index, error, startedAt);
            itemEnded(state, line, details);
          },
        ),
      (error: unknown) => {
        // Cancelled before it started: the item was never started (counted as such).
        if (isCancellation(error)) return;
        itemEnded(state, notStartedLine(index, error), {});
      },
    )
    .finally(() => {
      batch.inflight.delete(index);
      bump(batch);
    });
}

/** Writes the next chunk of ended items' lines, unless a recording is under way. */
export function startRecord(batch: ChildBatch): void {
  const { state } = batch;
  if (batch.recording || state.lines.length === 0) return;
  const lines = state.lines.slice(0, RECORD_CHUNK);
  batch.recording = true;
  CancellationScope.nonCancellable(() =>
    recordActivities.recordBatchResults({ batchKey: state.batchKey, lines }),
  )
    .then(
      () => {
        state.lines.splice(0, lines.length);
      },
      (error: unknown) => log.error('recording results failed', { error: String(error) }),
    )
    .finally(() => {
      batch.recording = false;
      bump(batch);
    });
}

/** No child open, nothing being written, nothing left to write. */
export const idle = (batch: ChildBatch): boolean =>
  batch.inflight.size === 0 && !batch.recording && batch.state.lines.length === 0;
