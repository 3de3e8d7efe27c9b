/**
 * What a batch run has under way, read from its state: its jobs in flight, per endpoint and in all,
 * the items being sent, whether a watcher may start and whether the run is idle.
 */
import type { ItemState } from '../../engine/item-state';
import { endpointOf } from '../../engine/item-state';
import type { BatchRun } from './batch-run';

/**
 * Whether another watcher may start: a few at once, each on the jobs no other one covers. A watcher
 * keeps the jobs it was started with, so later jobs get one of their own rather than wait for an
 * older job to finish (an hour, if those are hour-long). Between looks it holds no worker slot.
 */
const MAX_WATCHERS = 8;
export function watcherRoom(run: BatchRun): boolean {
  return run.watchers.size < MAX_WATCHERS;
}

/** Jobs in flight and items being submitted, per endpoint (what its window counts). */
export function endpointLoads(run: BatchRun): number[] {
  const loads = run.route.endpoints.map(() => 0);
  const add = (at: number) => {
    const slot = Math.min(at, loads.length - 1);
    loads[slot] = (loads[slot] ?? 0) + 1;
  };
  for (const item of run.items.values()) if (item.phase !== 'queued') add(endpointOf(item));
  for (const at of run.sending.values()) add(at);
  return loads;
}

/** Items grouped by their endpoint's position (each activity call names one endpoint). */
export function byEndpoint<T extends ItemState>(items: Iterable<T>): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const at = endpointOf(item);
    const group = groups.get(at);
    if (group) group.push(item);
    else groups.set(at, [item]);
  }
  return groups;
}

/** Items in flight as the window counts them: uncertain, running, or waiting for a retry. */
export function inFlight(run: BatchRun): number {
  let count = 0;
  for (const item of run.items.values()) if (item.phase !== 'queued') count += 1;
  return count;
}

/** Items with a job the service knows (running or waiting for a retry). */
export function withJobs(run: BatchRun): number {
  let count = 0;
  for (const item of run.items.values())
    if (item.phase === 'running' || item.phase === 'retry-due') count += 1;
  return count;
}

/** Items in pages being submitted now. */
export function submitting(run: BatchRun): number {
  return run.sending.size;
}

/** No activity of this run is under way. */
export function idle(run: BatchRun): boolean {
  return (
    run.submitsRunning === 0 &&
    run.retrying.size === 0 &&
    run.extendsRunning === 0 &&
    !run.recordRunning &&
    !run.cancelRunning &&
    run.routing.running === 0 &&
    run.watchers.size === 0
  );
}
