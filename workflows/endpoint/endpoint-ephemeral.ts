/**
 * The ephemeral endpoint's work as one batch workflow (the engine: its window, its failure
 * tolerance, its results file) run as a child on the endpoint just provisioned. The ephemeral
 * workflow tears the endpoint down after it whatever happened; this module only runs the batch
 * and says what it left behind. Deterministic workflow code only.
 */
import {
  ApplicationFailure,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  executeChild,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchSummary } from '../../contracts/batch-summary';
import type { EphemeralBatch } from '../../contracts/endpoint-input';
import { BATCH_FAILURE } from '../../contracts/failures';
import { workloadTaskPriority } from '../../contracts/task-priority';
import type { serverlessBatch } from '../batch/batch';
import { endpointIdKey } from '../shared/search-attributes';

/** The batch child's workflow id: one per ephemeral workflow, so a retried start finds the same one. */
export function ephemeralBatchIdFor(workflowId: string): string {
  return `${workflowId}/batch`;
}

/**
 * The batch's summary inside its failure, when it failed with one (past its failure tolerance or
 * its budget); undefined for any other failure.
 */
export function batchFailureSummary(
  error: unknown,
): { summary: BatchSummary; failure: ApplicationFailure } | undefined {
  const failure = error instanceof ChildWorkflowFailure ? error.cause : undefined;
  if (!(failure instanceof ApplicationFailure)) return undefined;
  if (failure.type !== BATCH_FAILURE.toleranceExceeded && failure.type !== BATCH_FAILURE.budgetExceeded)
    return undefined;
  const summary = failure.details?.[0] as BatchSummary | undefined;
  return summary === undefined ? undefined : { summary, failure };
}

/**
 * Runs the batch on the endpoint as a child. Cancelling the caller's scope cancels the batch, which
 * cancels its jobs in flight at the service and ends; only then does this reject, so teardown
 * never races a job.
 */
export function runEphemeralBatch(
  batch: EphemeralBatch,
  endpointId: string,
  taskQueue: string | undefined,
): Promise<BatchSummary> {
  return executeChild<typeof serverlessBatch>('serverlessBatch', {
    workflowId: ephemeralBatchIdFor(workflowInfo().workflowId),
    args: [{ ...batch, endpointId }],
    ...(taskQueue !== undefined ? { taskQueue } : {}),
    // Its priority, and the endpoint as its task fairness key (contracts/task-priority.ts).
    ...workloadTaskPriority({ ...batch, endpointId }),
    // As startBatch does: `cost endpoint` and visibility queries find the batches of an endpoint.
    typedSearchAttributes: [{ key: endpointIdKey, value: endpointId }],
    cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
    // Terminated or timed out, the ephemeral workflow still asks its batch to cancel (and so its jobs).
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
  });
}
