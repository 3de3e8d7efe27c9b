/**
 * The worker's workflow-task slots by default: handed out while the workflow thread has few
 * activations in hand (engine/workflow-task-slots.ts says why), as the SDK's custom slot supplier.
 *
 * The SDK asks for a slot before each poll and releases it once the task is done. A slot asked for
 * while the rule says no waits until it says yes: an activation ends (read from the worker's status
 * every CHECK_EVERY_MS while anyone waits) or a slot is released.
 */
import type { CustomSlotSupplier, SlotPermit, TunerHolder, WorkflowSlotInfo } from '@temporalio/worker';
import {
  DEFAULT_WORKFLOW_TASK_SLOT_LIMITS,
  mayTakeWorkflowTask,
  type WorkflowTaskSlotLimits,
} from '../engine/workflow-task-slots';
import type { WorkerSlots } from './config';

/** How often a waiting ask reads the worker's activations in flight. */
const CHECK_EVERY_MS = 5;

export interface WorkflowTaskSlots {
  supplier: CustomSlotSupplier<WorkflowSlotInfo>;
  /** Where the activations in flight are read from, once the worker exists. */
  readActivationsFrom(read: () => number): void;
}

export function workflowTaskSlots(
  limits: WorkflowTaskSlotLimits = DEFAULT_WORKFLOW_TASK_SLOT_LIMITS,
): WorkflowTaskSlots {
  let activationsInFlight: () => number = () => 0;
  let slotsHeld = 0;
  const waiting = new Set<() => void>();
  let checking: NodeJS.Timeout | undefined;

  const mayTake = () =>
    mayTakeWorkflowTask({ slotsHeld, activationsInFlight: activationsInFlight() }, limits);
  const take = (): SlotPermit => {
    slotsHeld += 1;
    return {};
  };
  const wakeWaiting = () => {
    for (const wake of [...waiting]) wake();
    if (waiting.size === 0 && checking) {
      clearInterval(checking);
      checking = undefined;
    }
  };
  const nextChance = (abortSignal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const woken = () => {
        waiting.delete(woken);
        abortSignal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        waiting.delete(woken);
        // The SDK stops asking (the worker shuts down): it expects the signal's own reason.
        reject(abortSignal.reason);
      };
      if (abortSignal.aborted) return aborted();
      abortSignal.addEventListener('abort', aborted, { once: true });
      waiting.add(woken);
      checking ??= setInterval(wakeWaiting, CHECK_EVERY_MS).unref();
    });

  return {
    supplier: {
      type: 'custom',
      async reserveSlot(_context, abortSignal) {
        while (!mayTake()) await nextChance(abortSignal);
        return take();
      },
      // Eager tasks (handed back with a completion): taken only when the rule says yes now.
      tryReserveSlot: () => (mayTake() ? take() : null),
      markSlotUsed: () => {},
      releaseSlot: () => {
        slotsHeld -= 1;
        wakeWaiting();
      },
    },
    readActivationsFrom(read) {
      activationsInFlight = read;
    },
  };
}

/** The SDK's own defaults for the slots this library does not set otherwise. */
const SDK_DEFAULT_SLOTS = 100;

/**
 * The worker's slot options from its configuration: workflow tasks by the rule above unless
 * WORKER_MAX_CONCURRENT_WORKFLOW_TASKS fixes their number; the other kinds fixed, as the SDK's
 * defaults or the configuration set them.
 */
export function workerSlotOptions(slots: WorkerSlots): {
  options: Omit<
    WorkerSlots,
    'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions'
  > & {
    tuner: TunerHolder;
  };
  /** Given the worker once it exists (the rule reads its activations in flight); absent when fixed. */
  readActivations?: WorkflowTaskSlots['readActivationsFrom'];
} {
  const { maxConcurrentActivityTaskExecutions, maxConcurrentWorkflowTaskExecutions, ...rest } = slots;
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  const byRule = maxConcurrentWorkflowTaskExecutions === undefined ? workflowTaskSlots() : undefined;
  return {
    options: {
      ...rest,
      tuner: {
        workflowTaskSlotSupplier: byRule?.supplier ?? fixed(maxConcurrentWorkflowTaskExecutions ?? 0),
        activityTaskSlotSupplier: fixed(maxConcurrentActivityTaskExecutions ?? SDK_DEFAULT_SLOTS),
        localActivityTaskSlotSupplier: fixed(SDK_DEFAULT_SLOTS),
        nexusTaskSlotSupplier: fixed(SDK_DEFAULT_SLOTS),
      },
    },
    ...(byRule ? { readActivations: byRule.readActivationsFrom } : {}),
  };
}
