/**
 * The batch's child mode (`mode: 'children'`): one serverlessJob child workflow per item, for
 * callers who want each item in the UI, in the same sliding window, tolerance, budget and summary
 * as the activities mode (workflows/batch.ts), and the same results file.
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
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  ChildWorkflowFailure,
  condition,
  continueAsNew,
  isCancellation,
  log,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batch';
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
import type { JobWorkflowInput } from '../contracts/job-input';
import type { JobResult } from '../contracts/job-snapshot';
import type { serverlessBatch } from './batch';
import {
  batchProgressQuery,
  batchSummaryQuery,
  batchWantsHintQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from './batch-definitions';
import {
  emptyCounts,
  endWith,
  failureCount,
  outcomeOf,
  resultsRefs,
  roundCost,
  toleranceExceeded,
} from './batch-outcomes';
import type { serverlessJob } from './job';
import { JOB_FAILURE, type JobFailureDetails } from './job-failures';

/** Everything a run of the child mode hands to the next one (no child is in flight then). */
export interface ChildBatchState {
  mode: 'children';
  batchKey: string;
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

const RECORD_CHUNK = 2_000;

/** What a child's result or failure tells of its submissions, retries and lease. */
type Tally = Partial<
  Pick<
    JobFailureDetails,
    | 'submissions'
    | 'uncertainSubmits'
    | 'uncertainAdopted'
    | 'resubmittedAfterLease'
    | 'leaseLapses'
    | 'retries'
  >
>;

const stageActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['BadRequest'] },
});
const recordActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** Runs (or carries on) a batch in child mode; returns its summary or throws the typed failure. */
export async function runChildBatch(
  o: ParsedBatchInput,
  carried: ChildBatchState | undefined,
): Promise<BatchSummary> {
  const s: ChildBatchState = carried ?? {
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
  const batchId = workflowInfo().workflowId;
  /** Children started (or starting) and not ended, by item index. */
  const inflight = new Set<number>();
  let recording = false;
  let dirty = 0;
  const bump = () => {
    dirty += 1;
  };

  const failures = () => failureCount(s.counts);
  const exceeded = () => toleranceExceeded(s.counts, s.total, o.failureTolerance);
  const overBudget = () => o.budget !== undefined && s.cost.amount >= o.budget;
  const runIsFull = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= o.maxEventsPerRun;
  };

  function summary(cancelled = false): BatchSummary {
    const stoppedBecause = cancelled
      ? 'cancelled'
      : s.stopping
        ? s.budgetExceeded
          ? 'budget'
          : 'failure-tolerance'
        : undefined;
    return {
      batchId,
      endpointId: o.endpointId,
      total: s.total,
      counts: { ...s.counts },
      failures: failures(),
      notStarted: Math.max(0, s.total - s.counts.completed - failures() - inflight.size),
      submissions: s.submissions,
      uncertainSubmits: s.uncertainSubmits,
      lease: {
        uncertainAdopted: s.uncertainAdopted,
        resubmittedAfterLease: s.resubmittedAfterLease,
        leaseLapses: s.leaseLapses,
      },
      retries: s.retries,
      // Webhooks go to each child's own workflow.
      webhooks: 0,
      toleranceExceeded: exceeded(),
      ...budgetFields(),
      ...(stoppedBecause ? { stoppedBecause } : {}),
      cost: { ...s.cost },
      cancelled,
      ...resultsRefs(s.batchKey),
      manifestKey: s.manifestKey,
      startedAt: s.startedAt,
      elapsedMs: Date.now() - s.startedAt,
      runs: s.runs,
      historyEvents: s.events + workflowInfo().historyLength,
    };
  }

  function budgetFields(): { budget?: number; budgetExceeded?: boolean } {
    return o.budget === undefined ? {} : { budget: o.budget, budgetExceeded: s.budgetExceeded === true };
  }

  function progress(): BatchProgress {
    const done = s.counts.completed + failures();
    const ratePerSecond = (done * 1000) / Math.max(Date.now() - s.startedAt, 1);
    return {
      batchId,
      total: s.total,
      cursor: s.cursor,
      counts: { ...s.counts },
      done,
      inFlight: inflight.size,
      paused: s.paused,
      maxConcurrency: s.maxConcurrency,
      ratePerSecond,
      ...(ratePerSecond > 0 ? { etaMs: Math.round(((s.total - done) / ratePerSecond) * 1000) } : {}),
      submissions: s.submissions,
      uncertainSubmits: s.uncertainSubmits,
      lease: summary().lease,
      retries: s.retries,
      runs: s.runs,
      historyEvents: s.events + workflowInfo().historyLength,
      startedAt: s.startedAt,
      toleranceExceeded: exceeded(),
      ...budgetFields(),
      cost: { ...s.cost },
    };
  }

  setHandler(batchProgressQuery, progress);
  let cancelled = false;
  setHandler(batchSummaryQuery, () => summary(cancelled));
  // Orphans report to their own child workflow, never to the batch.
  setHandler(batchWantsHintQuery, () => false);
  setHandler(pauseBatchSignal, () => {
    s.paused = true;
    bump();
  });
  setHandler(resumeBatchSignal, () => {
    s.paused = false;
    bump();
  });
  setHandler(
    setBatchConcurrencyUpdate,
    (value) => {
      const previous = s.maxConcurrency;
      s.maxConcurrency = value;
      bump();
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

  /** The job workflow's input for an item: the batch's per-item options, the request by reference. */
  function childInput(index: number): JobWorkflowInput {
    const { polling, outputInlineMaxBytes: _inline, ...job } = o.job;
    return {
      endpointId: o.endpointId,
      requestRef: { manifestKey: s.manifestKey, index },
      ...job,
      ...(polling === undefined ? {} : { polling }),
      // Outputs always go to the result store: the child's result, in this history, is a reference.
      outputInlineMaxBytes: 0,
    };
  }

  function ended(line: BatchResultLine, tally: Tally): void {
    s.submissions += tally.submissions ?? 0;
    s.uncertainSubmits += tally.uncertainSubmits ?? 0;
    s.uncertainAdopted += tally.uncertainAdopted ?? 0;
    s.resubmittedAfterLease += tally.resubmittedAfterLease ?? 0;
    s.leaseLapses += tally.leaseLapses ?? 0;
    s.retries += tally.retries ?? 0;
    s.counts[outcomeOf(line.status)] += 1;
    s.lines.push(line);
  }

  function launch(index: number): void {
    inflight.add(index);
    const startedAt = Date.now();
    startChild<typeof serverlessJob>('serverlessJob', {
      workflowId: `${batchId}/item-${index}`,
      args: [childInput(index)],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    })
      .then(
        (handle) =>
          handle.result().then(
            (result) => ended(completedLine(index, result, startedAt), result),
            (error: unknown) => {
              const { line, details } = failedLine(index, error, startedAt);
              ended(line, details);
            },
          ),
        (error: unknown) => {
          // Cancelled before it started: the item was never started (counted as such).
          if (isCancellation(error)) return;
          const message = error instanceof Error ? error.message : String(error);
          ended(
            {
              index,
              status: 'REJECTED',
              error: `its job workflow could not start: ${message}`,
              attempts: 0,
              submissions: 0,
            },
            {},
          );
        },
      )
      .finally(() => {
        inflight.delete(index);
        bump();
      });
  }

  function completedLine(index: number, result: JobResult, startedAt: number): BatchResultLine {
    if (result.cost) {
      s.cost.amount = roundCost(s.cost.amount + result.cost.amount);
      s.cost.items += 1;
      s.cost.currency = result.cost.currency;
    }
    return {
      index,
      jobId: result.jobId,
      status: 'COMPLETED',
      ...(result.outputRef
        ? { outputRef: result.outputRef }
        : 'output' in result
          ? { output: result.output }
          : {}),
      attempts: result.attempts,
      submissions: result.submissions,
      ...(result.delayTime !== undefined ? { delayTime: result.delayTime } : {}),
      ...(result.executionTime !== undefined ? { executionTime: result.executionTime } : {}),
      ...(result.cost ? { cost: result.cost.amount } : {}),
      submittedAt: startedAt,
      finishedAt: Date.now(),
    };
  }

  function startChildren(): void {
    if (s.paused || s.stopping) return;
    while (inflight.size < s.maxConcurrency && s.cursor < s.total) launch(s.cursor++);
  }

  function startRecord(): void {
    if (recording || s.lines.length === 0) return;
    const lines = s.lines.slice(0, RECORD_CHUNK);
    recording = true;
    CancellationScope.nonCancellable(() =>
      recordActivities.recordBatchResults({ batchKey: s.batchKey, lines }),
    )
      .then(
        () => {
          s.lines.splice(0, lines.length);
        },
        (error: unknown) => log.error('recording results failed', { error: String(error) }),
      )
      .finally(() => {
        recording = false;
        bump();
      });
  }

  const idle = () => inflight.size === 0 && !recording && s.lines.length === 0;
  const finished = () => (s.stopping || s.cursor >= s.total) && idle();

  try {
    if (!carried) {
      const staged = await stageActivities.stageBatchItems({ items: o.items });
      s.batchKey = staged.batchKey;
      s.manifestKey = staged.manifestKey;
      s.total = staged.total;
    }
    for (;;) {
      if (!s.stopping && exceeded()) {
        s.stopping = true;
        log.warn('failure tolerance exceeded: no more children; those in flight finish', {
          failures: failures(),
        });
      }
      if (!s.stopping && overBudget() && s.cursor < s.total) {
        s.stopping = true;
        s.budgetExceeded = true;
        log.warn('budget reached: no more children; those in flight finish', {
          estimate: s.cost.amount,
          budget: o.budget,
        });
      }
      const full = runIsFull();
      if (!full) startChildren();
      startRecord();
      if (finished()) return endWith(summary());
      if (full && idle()) {
        await condition(allHandlersFinished);
        s.events += workflowInfo().historyLength;
        s.runs += 1;
        const { items: _items, ...rest } = o;
        // The items are in the store now: the next run reads the manifest, never the inline list.
        const next = { ...rest, items: { manifest: { key: s.manifestKey } } } as BatchInput;
        return continueAsNew<typeof serverlessBatch>({ ...next, carried: { children: s } });
      }
      const seen = dirty;
      await condition(() => dirty !== seen);
    }
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      // The children were asked to cancel with this scope: each cancels its job and ends; their
      // lines are written before the batch ends as cancelled.
      cancelled = true;
      await CancellationScope.nonCancellable(async () => {
        s.stopping = true;
        await condition(() => inflight.size === 0 && !recording);
        while (s.lines.length > 0) {
          const lines = s.lines.splice(0, RECORD_CHUNK);
          await recordActivities.recordBatchResults({ batchKey: s.batchKey, lines });
        }
      });
    }
    throw error;
  }
}

/** A failed child as its item's line: the job workflow's typed failure, or its cancellation. */
function failedLine(
  index: number,
  error: unknown,
  startedAt: number,
): { line: BatchResultLine; details: Partial<JobFailureDetails> } {
  const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
  const finishedAt = Date.now();
  if (isCancellation(cause) || isCancellation(error)) {
    return {
      line: {
        index,
        status: 'CANCELLED',
        error: 'the batch was cancelled',
        attempts: 0,
        submissions: 0,
        submittedAt: startedAt,
        finishedAt,
      },
      details: {},
    };
  }
  const failure = cause instanceof ApplicationFailure ? cause : undefined;
  const details = (failure?.details?.[0] ?? {}) as Partial<JobFailureDetails>;
  // A child that ended without a failure of its own (terminated, timed out) failed as far as the batch knows.
  const status = failure ? statusOfFailure(failure.type, details) : 'FAILED';
  return {
    line: {
      index,
      ...(details.jobId ? { jobId: details.jobId } : {}),
      status,
      error: `${failure?.type ?? 'Error'}: ${(cause as Error | undefined)?.message ?? String(error)}`,
      attempts: details.attempts ?? 0,
      submissions: details.submissions ?? 0,
      submittedAt: startedAt,
      finishedAt,
    },
    details,
  };
}

/** The line status of a job workflow's failure type. */
function statusOfFailure(type: string | null | undefined, details: Partial<JobFailureDetails>): string {
  switch (type) {
    case JOB_FAILURE.failed:
      return 'FAILED';
    case JOB_FAILURE.timedOut:
      return 'TIMED_OUT';
    case JOB_FAILURE.expired:
      return 'EXPIRED';
    case JOB_FAILURE.cancelled:
      return 'CANCELLED';
    case JOB_FAILURE.submitUncertain:
      return 'UNCERTAIN';
    default:
      // Refused before any job was created (a bad request, an unknown endpoint): as in the activities mode.
      return (details.submissions ?? 0) === 0 ? 'REJECTED' : 'FAILED';
  }
}
