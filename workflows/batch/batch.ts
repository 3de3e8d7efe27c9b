/**
 * The batch workflow: many items on one endpoint, or spread over a route of several, each a remote
 * job, in a sliding window of at most `maxConcurrency` jobs in flight, at the pace of the client's
 * rate limiter.
 *
 * - Items live in the batch store (a manifest); the workflow carries a cursor. A page of items is
 *   submitted by one activity (batch-submit.ts), and watcher activities (batch-watch.ts) follow the
 *   jobs in flight; outputs go from the watchers to the results file. History holds indexes, job
 *   ids, statuses and counters.
 * - Each item is driven by the per-item engine (engine/item-engine.ts), the same one the job workflow
 *   drives: the submit's backoff (honouring Retry-After), /retry of FAILED and TIMED_OUT while
 *   results are kept (batch-retry.ts), the ttl deadline, expiry (onExpired), uncertain submits
 *   (onUncertainSubmit, uncertainSubmitWait, maxSubmissions). An orphan of an uncertain submit
 *   reports itself by webhook (its URL names the item) and is adopted, then confirmed by /status.
 * - Under a submit lease (contracts/submit-lease.ts): each job goes out with ttl = the lease and is
 *   extended to the caller's ttl by one activity for the jobs of a page (batch-lease.ts; a 404: the
 *   lease ran out, the item is submitted again). An uncertain submit waits (a due time, no worker
 *   slot) for the lease and the webhook window: a reporting orphan is adopted (then extended), else
 *   the item is submitted again.
 * - Failures beyond the tolerance stop new submissions; jobs in flight finish and are recorded, and
 *   the batch fails with BatchToleranceExceeded carrying the summary.
 * - Cost: the watcher estimates each finished run (contracts/cost.ts) and the workflow keeps the
 *   running total (one number in its state). A `budget` lets no item start that would take the
 *   total past it (the jobs under way counted at the mean cost so far); the batch then fails with
 *   BatchBudgetExceeded carrying the summary.
 * - The run continues as new when Temporal suggests it or after maxEventsPerRun events, carrying
 *   the cursor, the items under way and the counters in its one input, once its activities and
 *   handlers are done.
 * - Over a route (contracts/route.ts), each page goes to one endpoint, the first with room in route
 *   order (engine/batch-route.ts); watchers, lease extensions, retries and cancels each name one endpoint.
 *   An endpoint whose queue starves is drained and its queued jobs withdrawn to the others; one
 *   that fails for capacity or is gone is drained too, and tried again after recheckAfter
 *   (batch-route-run.ts). Results and the summary say which endpoint ran each item.
 * - Cancelling the workflow cancels every job in flight (within the /cancel limits), records them
 *   and ends the batch as cancelled.
 * - `mode: 'children'` runs a job workflow per item instead (workflows/batch/batch-children.ts).
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import { type BatchInput, type ParsedBatchInput, parseBatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import { batchCurrentDetails } from '../../contracts/current-details';
import { BATCH_FAILURE } from '../../contracts/failures';
import { emitOnEnd, failureData, isEnd } from '../shared/emit-on-end';
import { wakeAt } from '../shared/wake-timer';
import { cancelInFlight } from './batch-cancel';
import { runChildBatch } from './batch-children';
import { type BatchRunInput, continueBatch, runIsFull } from './batch-continue';
import { checkStops, listen, progress, summary } from './batch-controls';
import { endWith } from './batch-outcomes';
import { type BatchRun, type BatchState, bump, carriedState } from './batch-run';
import { idle } from './batch-run-counts';
import { newBatchRun } from './batch-run-start';
import { stage } from './batch-submit';
import { cancelWatchers } from './batch-watch';
import { settleWindow, startWindowWork, windowDue } from './batch-window';

export type { BatchInput } from '../../contracts/batch-input';
export type { BatchProgress, BatchSummary } from '../../contracts/batch-summary';
export type { BatchRunInput } from './batch-continue';
export type { BatchState } from './batch-run';

export async function serverlessBatch(input: BatchRunInput): Promise<BatchSummary> {
  const { carried, ...callerInput } = input;
  const parsed = parseBatchInput(callerInput);
  if (!parsed.ok) {
    throw ApplicationFailure.create({
      type: BATCH_FAILURE.badRequest,
      message: `invalid batch input: ${parsed.field}: ${parsed.rule}`,
      nonRetryable: true,
      details: [{ field: parsed.field, rule: parsed.rule }],
    });
  }
  const options = parsed.value;
  try {
    const result =
      options.mode === 'children'
        ? await runChildBatch(
            options,
            callerInput,
            carried && 'children' in carried ? carried.children : undefined,
          )
        : await runActivityBatch(
            options,
            callerInput,
            carried && 'activities' in carried ? carried.activities : undefined,
          );
    await emitOnEnd(options.emitOnEnd, 'batch.completed', { ...result });
    return result;
  } catch (error) {
    if (!(isCancellation(error) && CancellationScope.current().consideredCancelled) && isEnd(error))
      await emitOnEnd(options.emitOnEnd, 'batch.failed', failureData(error));
    throw error;
  }
}

/** The activities mode: a few activities follow every job. */
async function runActivityBatch(
  options: ParsedBatchInput,
  caller: BatchInput,
  carried: BatchState | undefined,
): Promise<BatchSummary> {
  const run = newBatchRun(options, caller, carried, Date.now());
  listen(run);
  try {
    if (!carried) await stage(run);
    return await loop(run);
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      run.cancelled = true;
      await CancellationScope.nonCancellable(() => cancelInFlight(run));
    }
    throw error;
  }
}

/** The loop: start whatever can start, then sleep until something happens or falls due. */
async function loop(run: BatchRun): Promise<BatchSummary> {
  for (;;) {
    const now = Date.now();
    settleWindow(run, now);
    checkStops(run);
    if (!run.draining && runIsFull(run.input.maxEventsPerRun)) run.draining = true;
    if (run.draining) {
      cancelWatchers(run);
      if (idle(run)) await continueWithNewRun(run);
    } else startWindowWork(run, now);
    // The UI's current details: no history event, so every turn may refresh them.
    setCurrentDetails(batchCurrentDetails(progress(run), now));
    if (finished(run)) return endWith(summary(run));
    const seen = run.dirty;
    wakeAt(run, windowDue(run, now), () => bump(run));
    await condition(() => run.dirty !== seen);
  }
}

function finished(run: BatchRun): boolean {
  const { state } = run;
  const queued = [...run.items.values()].some((item) => item.phase === 'queued');
  const nothingLeft = state.stopping || (state.cursor >= state.total && !queued);
  const underWay = [...run.items.values()].some((item) => item.phase !== 'queued');
  return nothingLeft && !underWay && state.lines.length === 0 && state.toCancel.length === 0 && idle(run);
}

/** The next run carries the cursor, the items under way (compact) and the counters. */
function continueWithNewRun(run: BatchRun): Promise<never> {
  return continueBatch(run.caller, run.state.manifestKey, () => {
    const state = carriedState(run);
    state.events += workflowInfo().historyLength;
    state.runs += 1;
    return { activities: state };
  });
}
