/**
 * A child's end as its item's line of the results file (the same lines as the activities mode's),
 * and what it adds to the batch's counts, cost and tallies.
 */
import { ApplicationFailure, ChildWorkflowFailure, isCancellation } from '@temporalio/workflow';
import type { BatchResultLine } from '../../contracts/batch-summary';
import { roundCost } from '../../contracts/cost';
import type { JobResult } from '../../contracts/job-snapshot';
import { JOB_FAILURE, type JobFailureDetails } from '../shared/job-failures';
import type { ChildBatchState } from './batch-children-state';
import { outcomeOf } from './batch-outcomes';

/** What a child's result or failure tells of its submissions, retries and lease. */
export type Tally = Partial<
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

/** An item ended: its line waits to be written, its counts and tallies join the batch's. */
export function itemEnded(state: ChildBatchState, line: BatchResultLine, tally: Tally): void {
  const counters = state.tally;
  counters.submissions += tally.submissions ?? 0;
  counters.uncertainSubmits += tally.uncertainSubmits ?? 0;
  counters.uncertainAdopted += tally.uncertainAdopted ?? 0;
  counters.resubmittedAfterLease += tally.resubmittedAfterLease ?? 0;
  counters.leaseLapses += tally.leaseLapses ?? 0;
  counters.retries += tally.retries ?? 0;
  state.counts[outcomeOf(line.status)] += 1;
  state.lines.push(line);
}

/** A completed child's cost estimate joins the batch's. */
export function addCost(state: ChildBatchState, result: JobResult): void {
  if (!result.cost) return;
  state.cost.amount = roundCost(state.cost.amount + result.cost.amount);
  state.cost.items += 1;
  state.cost.currency = result.cost.currency;
}

export function completedLine(index: number, result: JobResult, startedAt: number): BatchResultLine {
  return {
    index,
    jobId: result.jobId,
    endpointId: result.endpointId,
    ...(result.hops && result.hops.length > 0 ? { hops: result.hops.length } : {}),
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

/** A child whose workflow could not even start. */
export function notStartedLine(index: number, error: unknown): BatchResultLine {
  const message = error instanceof Error ? error.message : String(error);
  return {
    index,
    status: 'REJECTED',
    error: `its job workflow could not start: ${message}`,
    attempts: 0,
    submissions: 0,
  };
}

/** A failed child as its item's line: the job workflow's typed failure, or its cancellation. */
export function failedLine(
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
