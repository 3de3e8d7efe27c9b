/**
 * The worker's workflow-task slots (worker/workflow-task-slots.ts): an ask waits while the workflow
 * thread has its activations in hand and is answered once one ends or a slot is released; a
 * shutdown's abort ends the wait with the signal's reason; a fixed number stays fixed.
 */
import type { SlotReserveContext } from '@temporalio/worker';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { workerSlotOptions, workflowTaskSlots } from '../../worker/workflow-task-slots';

const context: SlotReserveContext = {
  slotType: 'workflow',
  taskQueue: 'q',
  workerIdentity: 'w',
  workerBuildId: '',
  workerDeploymentVersion: undefined,
  isSticky: false,
} as unknown as SlotReserveContext;

function settledFlag(promise: Promise<unknown>) {
  const state = { settled: false };
  promise.then(
    () => {
      state.settled = true;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}

describe('workflowTaskSlots', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('waits while its activation is in hand, and answers once it ends', async () => {
    let inFlight = 1;
    const slots = workflowTaskSlots();
    slots.readActivationsFrom(() => inFlight);
    const asked = slots.supplier.reserveSlot(context, new AbortController().signal);
    const state = settledFlag(asked);
    await vi.advanceTimersByTimeAsync(50);
    expect(state.settled).toBe(false);
    inFlight = 0;
    await vi.advanceTimersByTimeAsync(5);
    expect(state.settled).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands out up to the most slots, and one more once a slot is released', async () => {
    const slots = workflowTaskSlots({ maxSlots: 2, activationsInHand: 2 });
    const signal = new AbortController().signal;
    await slots.supplier.reserveSlot(context, signal);
    expect(slots.supplier.tryReserveSlot(context)).not.toBeNull();
    expect(slots.supplier.tryReserveSlot(context)).toBeNull();
    const third = slots.supplier.reserveSlot(context, signal);
    const state = settledFlag(third);
    await vi.advanceTimersByTimeAsync(50);
    expect(state.settled).toBe(false);
    slots.supplier.releaseSlot({ permit: {} } as never);
    await vi.advanceTimersByTimeAsync(0);
    expect(state.settled).toBe(true);
  });

  it("ends a wait with the abort signal's reason", async () => {
    const slots = workflowTaskSlots();
    slots.readActivationsFrom(() => 5);
    const controller = new AbortController();
    const asked = slots.supplier.reserveSlot(context, controller.signal);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(asked).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(5);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('workerSlotOptions', () => {
  it('hands out workflow tasks by the rule unless their number is fixed', () => {
    const byRule = workerSlotOptions({ maxCachedWorkflows: 10 });
    expect(byRule.options.tuner.workflowTaskSlotSupplier.type).toBe('custom');
    expect(byRule.options.tuner.activityTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 100 });
    expect(byRule.options.maxCachedWorkflows).toBe(10);
    expect(byRule.readActivations).toBeTypeOf('function');

    const fixed = workerSlotOptions({
      maxConcurrentWorkflowTaskExecutions: 4,
      maxConcurrentActivityTaskExecutions: 30,
    });
    expect(fixed.options.tuner.workflowTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 4 });
    expect(fixed.options.tuner.activityTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 30 });
    expect(fixed.options).not.toHaveProperty('maxConcurrentWorkflowTaskExecutions');
    expect(fixed.options).not.toHaveProperty('maxConcurrentActivityTaskExecutions');
    expect(fixed.readActivations).toBeUndefined();
  });
});
