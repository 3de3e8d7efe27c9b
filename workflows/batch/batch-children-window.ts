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
import type { serverlessJob } from '../job/job';
import { addCost, completedLine, failedLine, itemEnded, notStartedLine } from './batch-children-lines';
import { bump, type ChildBatch } from './batch-children-state';

/** How many lines one recordBatchResults writes at most. */
export const RECORD_CHUNK = 2_000;

export const recordActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** Starts children until the window is full, unless the batch is paused or stopping. */
export function startChildren(b: ChildBatch): void {
  const { s } = b;
  if (s.paused || s.stopping) return;
  while (b.inflight.size < s.maxConcurrency && s.cursor < s.total) launch(b, s.cursor++);
}

/** The job workflow's input for an item: the batch's per-item options, the request by reference. */
function childInput(b: ChildBatch, index: number): JobWorkflowInput {
  const { polling, outputInlineMaxBytes: _inline, ...job } = b.o.job;
  return {
    // On a route, each child falls back between its endpoints on its own (a job's route).
    ...(b.o.route === undefined ? { endpointId: b.o.endpointId } : { route: b.o.route }),
    requestRef: { manifestKey: b.s.manifestKey, index },
    ...job,
    ...(polling === undefined ? {} : { polling: pollingInputOf(polling) }),
    // Outputs always go to the result store: the child's result, in this history, is a reference.
    outputInlineMaxBytes: 0,
  };
}

function launch(b: ChildBatch, index: number): void {
  const { s } = b;
  b.inflight.add(index);
  const startedAt = Date.now();
  startChild<typeof serverlessJob>('serverlessJob', {
    workflowId: `${b.batchId}/item-${index}`,
    args: [childInput(b, index)],
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
  })
    .then(
      (handle) =>
        handle.result().then(
          (result) => {
            addCost(s, result);
            itemEnded(s, completedLine(index, result, startedAt), result);
          },
          (error: unknown) => {
            const { line, details } = failedLine(index, error, startedAt);
            itemEnded(s, line, details);
          },
        ),
      (error: unknown) => {
        // Cancelled before it started: the item was never started (counted as such).
        if (isCancellation(error)) return;
        itemEnded(s, notStartedLine(index, error), {});
      },
    )
    .finally(() => {
      b.inflight.delete(index);
      bump(b);
    });
}

/** Writes the next chunk of ended items' lines, unless a recording is under way. */
export function startRecord(b: ChildBatch): void {
  const { s } = b;
  if (b.recording || s.lines.length === 0) return;
  const lines = s.lines.slice(0, RECORD_CHUNK);
  b.recording = true;
  CancellationScope.nonCancellable(() => recordActivities.recordBatchResults({ batchKey: s.batchKey, lines }))
    .then(
      () => {
        s.lines.splice(0, lines.length);
      },
      (error: unknown) => log.error('recording results failed', { error: String(error) }),
    )
    .finally(() => {
      b.recording = false;
      bump(b);
    });
}

/** No child open, nothing being written, nothing left to write. */
export const idle = (b: ChildBatch): boolean =>
  b.inflight.size === 0 && !b.recording && b.s.lines.length === 0;
