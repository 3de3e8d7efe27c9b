/**
 * A failed automation run's cost. A batch's failure carries its summary and a job's its failure
 * details, both with `cost`, as the first detail of the ApplicationFailure that ended it. The
 * workflow meets that failure as a child's (ChildWorkflowFailure), the awaitAutomationRun activity
 * (a run started before a continue-as-new) as the client's WorkflowFailedError: both have it as
 * their cause, so both read the cost here and the budget counts it either way.
 */
import { ApplicationFailure } from '@temporalio/common';
import { runCost } from './automation-input';

export function failedRunCost(error: unknown): number {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return runCost(cause instanceof ApplicationFailure ? cause.details?.[0] : undefined);
}
