/**
 * How a batch counts its items and ends, whichever way it runs them (activities or child
 * workflows): the outcome each result line counts as, the failure tolerance, and the typed
 * failures a batch ends with, which carry the summary.
 *
 * Bundled into workflow code: pure functions, the batch's input shapes and the SDK's failure type.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ParsedBatchInput } from '../../contracts/batch-input';
import type { BatchCounts, BatchSummary } from '../../contracts/batch-summary';
import { BATCH_FAILURE } from '../../contracts/failures';

/** The batch's counters of what its items did (the summary's and the progress's), in both modes. */
export interface BatchTally {
  /** POST /run calls that may have made a job, uncertain ones included. */
  submissions: number;
  uncertainSubmits: number;
  uncertainAdopted: number;
  resubmittedAfterLease: number;
  leaseLapses: number;
  retries: number;
  webhooks: number;
  /** Moves of items to another endpoint of the route. */
  hops: number;
}

export const emptyTally = (): BatchTally => ({
  submissions: 0,
  uncertainSubmits: 0,
  uncertainAdopted: 0,
  resubmittedAfterLease: 0,
  leaseLapses: 0,
  retries: 0,
  webhooks: 0,
  hops: 0,
});

export const emptyCounts = (): BatchCounts => ({
  completed: 0,
  failed: 0,
  timedOut: 0,
  expired: 0,
  cancelled: 0,
  uncertain: 0,
  rejected: 0,
});

/** A result line's status, as the count it adds to. */
const OUTCOME_OF_STATUS: Record<string, keyof BatchCounts> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  TIMED_OUT: 'timedOut',
  EXPIRED: 'expired',
  CANCELLED: 'cancelled',
  UNCERTAIN: 'uncertain',
  REJECTED: 'rejected',
};

/** The count a line of this status adds to (an unknown status is a failure, never lost). */
export function outcomeOf(status: string): keyof BatchCounts {
  return OUTCOME_OF_STATUS[status] ?? 'failed';
}

/** Items that ended any other way than COMPLETED. */
export function failureCount(c: BatchCounts): number {
  return c.failed + c.timedOut + c.expired + c.cancelled + c.uncertain + c.rejected;
}

/** Whether the failures so far are more than the tolerance allows (none set: any failure is). */
export function toleranceExceeded(
  counts: BatchCounts,
  total: number,
  tolerance: ParsedBatchInput['failureTolerance'],
): boolean {
  const failures = failureCount(counts);
  const { count, percentage } = tolerance;
  if (count === undefined && percentage === undefined) return failures > 0;
  return (
    (count !== undefined && failures > count) ||
    (percentage !== undefined && (failures * 100) / Math.max(total, 1) > percentage)
  );
}

/** The summary a finished batch returns, or the typed failure carrying it (tolerance, budget). */
export function endWith(summary: BatchSummary): BatchSummary {
  if (summary.toleranceExceeded) {
    throw ApplicationFailure.create({
      type: BATCH_FAILURE.toleranceExceeded,
      message:
        `${summary.failures} of ${summary.total} items failed, more than the failure tolerance allows; ` +
        `${summary.notStarted} were not started. Results: ${summary.results.key}`,
      nonRetryable: true,
      details: [summary],
    });
  }
  if (summary.budgetExceeded) {
    const cost = summary.cost;
    throw ApplicationFailure.create({
      type: BATCH_FAILURE.budgetExceeded,
      message:
        `the estimated cost ${cost.amount}${cost.currency ? ` ${cost.currency}` : ''} ` +
        `${cost.amount >= (summary.budget ?? 0) ? 'reached' : 'would have passed with one more item'} the budget ` +
        `${summary.budget}: no more items were submitted; ${summary.notStarted} of ${summary.total} ` +
        `were not started. Results: ${summary.results.key}`,
      nonRetryable: true,
      details: [summary],
    });
  }
  return summary;
}

/**
 * Where a batch's results are (the summary's two references to the same store key), in the store
 * the stage named (`local` for a run staged before stores had names).
 */
export function resultsRefs(
  batchKey: string,
  store = 'local',
): Pick<BatchSummary, 'results' | 'failuresRef'> {
  const ref = { kind: 'serverless-batch-results' as const, store, key: batchKey };
  return { results: ref, failuresRef: { ...ref, only: 'failures' } };
}
