/**
 * The one way the client starts a workload's workflow (a job, a batch, a pipeline): by its
 * workflow id, once. A start retried or raced by another caller gets the run already there,
 * running or (when the id's reuse policy forbids another run) closed, and never starts a second.
 */
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';

export async function startOnce<T extends Workflow>(
  client: Client,
  workflowType: string,
  options: WorkflowStartOptions<T>,
): Promise<WorkflowHandle<T>> {
  try {
    return await client.workflow.start<T>(workflowType, {
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      ...options,
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return client.workflow.getHandle<T>(options.workflowId);
    throw error;
  }
}
