/**
 * When a worker takes one more workflow task (engine/workflow-task-slots.ts): only while its
 * workflow thread has few activations in hand, and never past the most slots.
 */
import { describe, expect, it } from 'vitest';
import {
  ACTIVATIONS_IN_HAND,
  MAX_WORKFLOW_TASK_SLOTS,
  mayTakeWorkflowTask,
} from '../../engine/workflow-task-slots';

describe('mayTakeWorkflowTask', () => {
  it.each([
    { slotsHeld: 0, activationsInFlight: 0, takes: true, why: 'an idle worker' },
    { slotsHeld: 1, activationsInFlight: 1, takes: false, why: 'the thread has its one in hand' },
    { slotsHeld: 2, activationsInFlight: 0, takes: true, why: 'tasks on their way are not in hand' },
    { slotsHeld: 12, activationsInFlight: 9, takes: false, why: 'a burst waits at the server' },
    {
      slotsHeld: 30,
      activationsInFlight: 0,
      takes: true,
      why: 'tasks waiting for their history do not hold new ones back',
    },
    { slotsHeld: 39, activationsInFlight: 0, takes: true, why: 'one slot below the most' },
    { slotsHeld: 40, activationsInFlight: 0, takes: false, why: 'the most slots are held' },
  ])(
    '$why: slots $slotsHeld, activations $activationsInFlight -> $takes',
    ({ slotsHeld, activationsInFlight, takes }) => {
      expect(mayTakeWorkflowTask({ slotsHeld, activationsInFlight })).toBe(takes);
    },
  );

  it('holds the defaults: one activation in hand, the SDK’s 40 slots at most', () => {
    expect(ACTIVATIONS_IN_HAND).toBe(1);
    expect(MAX_WORKFLOW_TASK_SLOTS).toBe(40);
  });

  it('takes given limits', () => {
    const limits = { maxSlots: 4, activationsInHand: 1 };
    expect(mayTakeWorkflowTask({ slotsHeld: 3, activationsInFlight: 0 }, limits)).toBe(true);
    expect(mayTakeWorkflowTask({ slotsHeld: 3, activationsInFlight: 1 }, limits)).toBe(false);
    expect(mayTakeWorkflowTask({ slotsHeld: 4, activationsInFlight: 0 }, limits)).toBe(false);
  });
});
