/**
 * The extension of the batch's leases (contracts/submit-lease.ts): one activity extends the new
 * jobs' ttl from the lease to the caller's, a page's worth as they come, and does not wait for an
 * earlier one, which may be trying a job until its lease ends while new leases run.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { leaseEndsBy, lookExtensionDueAt, looksExtendLease } from '../../contracts/submit-lease';
import type { ItemState, RunningItem } from '../../engine/item-state';
import { leaseAttemptMs } from '../job/job-activities';
import { activityOutcome } from '../shared/job-failures';
import { leaseActivities } from './batch-activities';
import { advance, type BatchRun, bump, endpointIdAt } from './batch-run';
import { byEndpoint, watcherRoom } from './batch-run-counts';

type LeasedItem = RunningItem & { lease: NonNullable<RunningItem['lease']> };

export function startExtensions(run: BatchRun): void {
  const due: LeasedItem[] = [];
  for (const item of run.items.values()) {
    if (!leaseToExtend(item) || run.extending.has(item.index)) continue;
    // A lease the looks extend goes with an activity only while no watcher can take its job.
    if (extendedByLooks(item) && (run.watched.has(item.index) || watcherRoom(run))) continue;
    due.push(item);
  }
  // Each call extends the jobs of one endpoint.
  for (const [at, items] of byEndpoint(due)) extend(run, items, at);
}

/** A running job whose lease is still to be extended. */
export function leaseToExtend(item: ItemState): item is LeasedItem {
  return item.phase === 'running' && item.lease !== undefined && !item.lease.unsettled;
}

/**
 * Whether the item's lease is its watcher's to extend, with its looks (batch-watch.ts): an adopted
 * orphan's, which reported its end by webhook, so the watcher looks at it at once (an activity of
 * its own would cost history events for the same request); and a long lease, which the submit
 * left to the watcher (contracts/submit-lease.ts).
 */
export function extendedByLooks(item: ItemState): item is LeasedItem {
  return leaseToExtend(item) && (item.adopted || looksExtendLease(item.lease.ttlMs));
}

/** When the watcher looks at the item to extend its lease, if no look did before. */
export function lookExtensionDue(item: LeasedItem): number {
  return item.adopted ? 0 : lookExtensionDueAt(item.lease.answeredAt, item.lease.ttlMs);
}

function extend(run: BatchRun, due: LeasedItem[], at: number): void {
  run.extendsRunning += 1;
  const entries = due.map((item): [number, string, number, number] => [
    item.index,
    item.jobId,
    item.ttlMs,
    leaseEndsBy(item.lease.answeredAt, item.lease.ttlMs),
  ]);
  for (const item of due) run.extending.add(item.index);
  const longest = Math.max(...entries.map((entry) => entry[3])) - Date.now();
  const shortest = Math.min(...due.map((item) => item.lease.ttlMs));
  /** The item as it is now, if it still has the job this activity was asked about. */
  const current = (asked: RunningItem): RunningItem | undefined => {
    run.extending.delete(asked.index);
    const item = run.items.get(asked.index);
    return item?.phase === 'running' && item.jobId === asked.jobId ? item : undefined;
  };
  leaseActivities(longest, leaseAttemptMs(shortest))
    .extendBatchLeases({ endpointId: endpointIdAt(run, at), items: entries })
    .then(
      ({ results }) => {
        const asked = new Map(due.map((item) => [item.index, item]));
        for (const result of results) {
          const request = asked.get(result.i);
          const item = request && current(request);
          if (!item) continue;
          if (result.extended) advance(run, item, { kind: 'lease-extended' });
          else if (result.gone)
            advance(run, item, { kind: 'gone', now: Date.now(), stopping: run.state.stopping });
          // Neither: an answer may have been lost after it was made; the watcher's 404 tells.
          else advance(run, item, { kind: 'lease-unsettled' });
        }
      },
      (error: unknown) => {
        // A worker that died mid-extension: whatever lease still runs is tried again at once.
        const retry = activityOutcome(error)?.source === 'timeout';
        const now = Date.now();
        for (const request of due) {
          const item = current(request);
          if (!item?.lease) continue;
          if (!retry || leaseEndsBy(item.lease.answeredAt, item.lease.ttlMs) <= now) {
            advance(run, item, { kind: 'lease-unsettled' });
          }
        }
        if (!isCancellation(error))
          log.warn('extending leases failed', { error: activityOutcome(error)?.message, retry });
      },
    )
    .finally(() => {
      for (const item of due) run.extending.delete(item.index);
      run.extendsRunning -= 1;
      bump(run);
    });
}
