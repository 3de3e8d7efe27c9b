/**
 * A batch's continue-as-new, for both modes: when a run is full, and the input the next run starts
 * with: the caller's own input (never the parsed one, whose shapes the input schema does not
 * take), its items replaced by the manifest they were staged to (the inline list never enters
 * history again), and the state the mode carries.
 */
import { allHandlersFinished, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { BatchInput } from '../contracts/batch-input';
import type { BatchRunInput, serverlessBatch } from './batch';

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
  return continueAsNew<typeof serverlessBatch>(next);
}
