/**
 * Progress as an async iterator: `for await (const progress of watchBatch(client, id))` yields a
 * snapshot each time the workflow's answer changes, looking once a second, and ends after the
 * workflow has closed with the snapshot it ended on. Snapshots come from the workflows' own
 * queries (which add nothing to history); a look that fails (the workflow not started yet, a
 * server restart) is skipped.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { BatchProgress } from '../contracts/batch-input';
import { type BatchHandle, getBatchProgress } from './batches';
import { getJobSnapshot, type JobHandle, type LiveJobSnapshot } from './jobs';

export interface WatchOptions {
  /** Time between two looks (default 1 s). */
  intervalMs?: number;
  /** Ends the watch (the iterator returns) without waiting for the workflow. */
  signal?: AbortSignal;
}

/** Where a watch reads from: a snapshot, and whether the watched thing has ended. */
export interface SnapshotSource<T> {
  read(): Promise<T>;
  ended(): Promise<boolean>;
  /** Settles when the source knows it has ended, to cut a pause short. */
  endedSignal?: Promise<unknown>;
}

/** The one watch loop: yields changed snapshots until the source has ended, then its last one. */
export async function* watchSnapshots<T>(
  source: SnapshotSource<T>,
  options: WatchOptions = {},
): AsyncGenerator<T> {
  const intervalMs = options.intervalMs ?? 1_000;
  let last: string | undefined;
  while (!options.signal?.aborted) {
    // Asked before the read, so the read after the end shows where it ended.
    const ended = await source.ended().catch(() => false);
    const snapshot = await source.read().then(
      (value) => ({ value }),
      () => undefined,
    );
    if (snapshot) {
      const text = JSON.stringify(snapshot.value);
      if (text !== last) {
        last = text;
        yield snapshot.value;
      }
    }
    if (ended) return;
    const pause = sleep(intervalMs, undefined, options.signal ? { signal: options.signal } : undefined).catch(
      () => undefined,
    );
    await (source.endedSignal ? Promise.race([pause, source.endedSignal]) : pause);
  }
}

/** Closed for good: a run that continued as new hands over to the next, which the next look finds. */
async function workflowEnded(handle: WorkflowHandle): Promise<boolean> {
  const { status } = await handle.describe();
  return status.name !== 'RUNNING' && status.name !== 'CONTINUED_AS_NEW';
}

/** A batch's progress (counts, in flight, rate, time left, cost) each time it changes. */
export function watchBatch(
  client: Client,
  batch: string | BatchHandle,
  options: WatchOptions = {},
): AsyncGenerator<BatchProgress> {
  const handle = typeof batch === 'string' ? client.workflow.getHandle(batch) : batch;
  return watchSnapshots(
    { read: () => getBatchProgress(client, handle.workflowId), ended: () => workflowEnded(handle) },
    options,
  );
}

/** A job's snapshot (phase, remote status, attempts, cost, the wait's latest progress) each time it changes. */
export function watchJob(
  client: Client,
  job: string | JobHandle,
  options: WatchOptions = {},
): AsyncGenerator<LiveJobSnapshot> {
  const handle = typeof job === 'string' ? client.workflow.getHandle(job) : job;
  return watchSnapshots(
    {
      read: () => getJobSnapshot(client, handle.workflowId, { live: true }),
      ended: () => workflowEnded(handle),
    },
    options,
  );
}
