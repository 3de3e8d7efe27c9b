/**
 * What a call acts on, as its options name it: a workflow id, or the handle a start returned. A
 * missing or empty one is refused naming its field, before anything reaches Temporal.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
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
