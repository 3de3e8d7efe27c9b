/**
 * A batch's continue-as-new, for both modes: when a run is full, and the input the next run starts
 * with: the caller's own input (never the parsed one, whose shapes the input schema does not
 * take), its items replaced by the manifest they were staged to (the inline list never enters
 * history again), and the state the mode carries.
 */
import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { BatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import type { ChildBatchState } from './batch-children-state';
import type { BatchState } from './batch-run';

/**
 * The batch workflow's one argument: the caller's input and, from the second run on, the state the
 * run before carried through continue-as-new (as Temporal's batch-sliding-window sample carries it).
 * Callers never set `carried`: the client starts a batch with a BatchInput.
 */
export type BatchRunInput = BatchInput & {
  carried?: { activities: BatchState } | { children: ChildBatchState };
};

/** Full when Temporal suggests continuing as new or the run reached maxEventsPerRun. */
export function runIsFull(maxEventsPerRun: number): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength >= maxEventsPerRun;
}

/** Once the handlers are done: `carry` gives the state to carry, read after them. */
export async function continueBatch(
  caller: BatchInput,
  manifestKey: string,
  carry: () => NonNullable<BatchRunInput['carried']>,
): Promise<never> {
  await condition(allHandlersFinished);
  const { items: _items, ...rest } = caller;
  const next: BatchRunInput = { ...rest, items: { manifest: { key: manifestKey } }, carried: carry() };
  return continueAsNew<(input: BatchRunInput) => Promise<BatchSummary>>(next);
}
