/**
 * What a call acts on, as its options name it: a workflow id, or the handle a start returned. A
 * missing or empty one is refused naming its field, before anything reaches Temporal.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type Workflow } from '@temporalio/common';
import { ValidationError } from '../api/errors';

/** Which workflow a call acts on: its id. */
export interface WorkflowTarget {
  workflowId: string;
}

/** The id given in `field`, checked: a non-empty string. */
export function workflowIdOf(id: unknown, field = 'workflowId'): string {
  if (typeof id !== 'string' || id === '') throw new ValidationError(field, 'must be a workflow id');
  return id;
}

/** The handle of `target` (an id or a handle already), checked as the option `field`. */
export function workflowHandleOf<W extends Workflow>(
  client: Client,
  target: string | WorkflowHandle<W>,
  field: string,
): WorkflowHandle<W> {
  if (typeof target === 'object' && target !== null && typeof target.workflowId === 'string') return target;
  if (typeof target !== 'string' || target === '')
    throw new ValidationError(field, 'must be a workflow id or the handle its start returned');
  return client.workflow.getHandle<W>(target);
}

/** The input the workflow's run was started with (its history's first event): what a redrive starts again. */
export async function startInputOf<Input>(handle: WorkflowHandle): Promise<Input> {
  const history = await handle.fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) throw new Error(`the input of ${handle.workflowId} could not be read`);
  return defaultPayloadConverter.fromPayload(payload) as Input;
}
