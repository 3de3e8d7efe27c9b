/**
 * When a worker may take one more workflow task: the rule that keeps the server's order (priority,
 * fairness key) in force under a burst.
 *
 * A task the worker has taken waits in the worker's own queue for the workflow thread, first in,
 * first out, whatever its priority or endpoint. A task left at the server waits in the server's
 * order. So the worker takes a new task only while its workflow thread has few activations in
 * hand (ACTIVATIONS_IN_HAND): a burst of one endpoint's tasks then waits at the server, and a task
 * of another endpoint or of a higher priority is handed out next.
 *
 * Tasks the worker holds while their history is fetched (a new worker replaying the workflows of a
 * killed one) are not activations yet, so they do not hold new tasks back: a worker taking over
 * hundreds of workflows still fetches their histories in parallel, up to MAX_WORKFLOW_TASK_SLOTS.
 * A fixed small number of slots would serialise those fetches.
 *
 * Pure: the worker reads its own counts and asks.
 */

/** Activations in the workflow thread's hands below which the worker takes another task. */
export const ACTIVATIONS_IN_HAND = 1;
/** Workflow tasks a worker holds at most, whatever it holds them for: the SDK's own default. */
export const MAX_WORKFLOW_TASK_SLOTS = 40;

export interface WorkflowTaskSlotCounts {
  /** Slots handed out and not yet released: tasks polled for, fetched, or being worked on. */
  slotsHeld: number;
  /** Activations sent to the workflow thread and not yet completed. */
  activationsInFlight: number;
}

export interface WorkflowTaskSlotLimits {
  maxSlots: number;
  activationsInHand: number;
}

export const DEFAULT_WORKFLOW_TASK_SLOT_LIMITS: WorkflowTaskSlotLimits = {
  maxSlots: MAX_WORKFLOW_TASK_SLOTS,
  activationsInHand: ACTIVATIONS_IN_HAND,
};

/** Whether one more workflow-task slot may be handed out now. */
export function mayTakeWorkflowTask(
  counts: WorkflowTaskSlotCounts,
  limits: WorkflowTaskSlotLimits = DEFAULT_WORKFLOW_TASK_SLOT_LIMITS,
): boolean {
  return counts.slotsHeld < limits.maxSlots && counts.activationsInFlight < limits.activationsInHand;
}
