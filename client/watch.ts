/**
 * Progress as an async iterator: `for await (const progress of watchBatch(client, { batch }))` yields a
 * snapshot each time the workflow's answer changes, looking once a second, and ends after the
 * workflow has closed with the snapshot it ended on. Snapshots come from the workflows' own
 * queries (which add nothing to history); a look that fails (the workflow not started yet, a
 * server restart) is skipped.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { ValidationError } from '../api/errors';
import type { BatchProgress } from '../contracts/batch-summary';
import { durationSchema } from '../contracts/input-rules';
import type { PipelineProgress } from '../contracts/pipeline-types';
import { type BatchTarget, getBatchProgress } from './batches';
import { getJobSnapshot, type JobHandle, type LiveJobSnapshot } from './jobs';
import { getPipelineProgress, type PipelineTarget } from './pipelines';
import { workflowHandleOf } from './workflow-target';

export interface WatchOptions {
  /** Time between two looks: ms, or a string such as '500ms' or '5 seconds' (default 1 s). */
  interval?: number | string;
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

/**
 * The one watch loop: yields changed snapshots until the source has ended, then its last one. A bad
 * interval throws here, before the first look.
 */
export function watchSnapshots<T>(source: SnapshotSource<T>, options: WatchOptions = {}): AsyncGenerator<T> {
  const interval = durationSchema.safeParse(options.interval ?? 1_000);
  if (!interval.success)
    throw new ValidationError('interval', interval.error.issues[0]?.message ?? 'is invalid');
  return looks(source, interval.data, options.signal);
}

async function* looks<T>(
  source: SnapshotSource<T>,
  intervalMs: number,
  signal?: AbortSignal,
): AsyncGenerator<T> {
  let last: string | undefined;
  while (!signal?.aborted) {
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
    const pause = sleep(intervalMs, undefined, signal ? { signal } : undefined).catch(() => undefined);
    await (source.endedSignal ? Promise.race([pause, source.endedSignal]) : pause);
  }
}

/** Closed for good: a run that continued as new hands over to the next, which the next look finds. */
async function workflowEnded(handle: WorkflowHandle): Promise<boolean> {
  const { status } = await handle.describe();
  return status.name !== 'RUNNING' && status.name !== 'CONTINUED_AS_NEW';
}

export interface WatchBatchOptions extends WatchOptions, BatchTarget {}

/** A batch's progress (counts, in flight, rate, time left, cost) each time it changes. */
export function watchBatch(
  client: Client,
  { batch, ...options }: WatchBatchOptions,
): AsyncGenerator<BatchProgress> {
  const handle = workflowHandleOf(client, batch, 'batch');
  return watchSnapshots(
    {
      read: () => getBatchProgress(client, { batch: handle.workflowId }),
      ended: () => workflowEnded(handle),
    },
    options,
  );
}

export interface WatchPipelineOptions extends WatchOptions, PipelineTarget {}

/** A pipeline's progress per stage (counts, window, buffer, cost) each time it changes. */
export function watchPipeline(
  client: Client,
  { pipeline, ...options }: WatchPipelineOptions,
): AsyncGenerator<PipelineProgress> {
  const handle = workflowHandleOf(client, pipeline, 'pipeline');
  return watchSnapshots(
    {
      read: () => getPipelineProgress(client, { pipeline: handle.workflowId }),
      ended: () => workflowEnded(handle),
    },
    options,
  );
}

export interface WatchJobOptions extends WatchOptions {
  /** The job: its workflow id, or the handle startJob returned. */
  job: string | JobHandle;
}

/** A job's snapshot (phase, remote status, attempts, cost, the wait's latest progress) each time it changes. */
export function watchJob(
  client: Client,
  { job, ...options }: WatchJobOptions,
): AsyncGenerator<LiveJobSnapshot> {
  const handle = workflowHandleOf(client, job, 'job');
  return watchSnapshots(
    {
      read: () => getJobSnapshot(client, { workflowId: handle.workflowId, live: true }),
      ended: () => workflowEnded(handle),
    },
    options,
  );
}
