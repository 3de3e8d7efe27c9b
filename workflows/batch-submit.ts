/**
 * The batch's intake and submits: pages of items (queued again first, then the next ones from the
 * manifest) go to the submit activity, at most PARALLEL_SUBMITS at once, as the window frees room;
 * each item's answer is an event of the per-item engine.
 */
import { CancellationScope, TimeoutFailure } from '@temporalio/workflow';
import { JOB_LIMITS } from '../api/schemas/job';
import { submitItemsSummary } from '../contracts/activity-summaries';
import type { SubmitItemResult } from '../contracts/batch-input';
import { leaseRequest, unreportedLeaseTtl } from '../contracts/submit-lease';
import { stageActivities, submitActivities } from './batch-activities';
import { budgetRoom } from './batch-controls';
import { advance, type BatchRun, bump, inFlight, submitting } from './batch-run';
import { type ItemEvent, type ItemState, queuedItem } from './item-state';
import { activityOutcome } from './job-failures';

/** Submits that may run at once: one sending while the next is scheduled keeps the limiter busy. */
const PARALLEL_SUBMITS = 2;

/** Writes the caller's items to the batch store (a manifest): only its key enters history. */
export async function stage(run: BatchRun): Promise<void> {
  const staged = await stageActivities.stageBatchItems({ items: run.input.items });
  run.state.batchKey = staged.batchKey;
  run.state.manifestKey = staged.manifestKey;
  run.state.total = staged.total;
}

/** Items queued again whose time has come, not in a page already. */
function readyQueued(run: BatchRun, now: number): number[] {
  const ready: number[] = [];
  for (const item of run.items.values()) {
    if (item.phase !== 'queued' || run.sending.has(item.index)) continue;
    if (item.notBefore === undefined || item.notBefore <= now) ready.push(item.index);
  }
  return ready;
}

export function startSubmits(run: BatchRun, now: number): void {
  const { state, input } = run;
  if (state.paused || state.stopping) return;
  while (run.submitsRunning < PARALLEL_SUBMITS) {
    const free = state.maxConcurrency - inFlight(run) - submitting(run);
    const ready = readyQueued(run, now);
    const waiting = ready.length + (state.total - state.cursor);
    if (waiting === 0 || free <= 0) return;
    // Not a page per freed place: wait for a useful page (a sixteenth of the window: every place
    // left empty meanwhile is a service worker idle) unless nothing else is under way.
    const useful = Math.min(input.pageSize, Math.max(1, Math.floor(state.maxConcurrency / 16)), waiting);
    if (free < useful && (run.submitsRunning > 0 || inFlight(run) > 0)) return;
    const size = Math.min(input.pageSize, free, waiting, budgetRoom(run));
    if (size <= 0) return;
    const page = ready.slice(0, size);
    while (page.length < size && state.cursor < state.total) page.push(state.cursor++);
    submitPage(run, page);
  }
}

function submitPage(run: BatchRun, page: number[]): void {
  const { input, state, lease } = run;
  const sentAt = Date.now();
  run.submitsRunning += 1;
  for (const index of page) run.sending.add(index);
  CancellationScope.nonCancellable(() =>
    submitActivities(input.job.submitTimeout, page.length).submitBatchPage.executeWithOptions(
      { summary: submitItemsSummary(page, input.endpointId) },
      [
        {
          endpointId: input.endpointId,
          manifestKey: state.manifestKey,
          indexes: page,
          // Only an orphan that may be adopted needs a webhook; every other job is watched.
          webhook: input.job.uncertainSubmitWait > 0 || lease !== undefined,
          ...(lease === undefined ? {} : { submitLease: lease }),
        },
      ],
    ),
  )
    .then(
      ({ results }) => {
        const answeredAt = Date.now();
        const asked = new Set(page);
        for (const result of results) {
          if (asked.has(result.i)) submitted(run, result, sentAt, answeredAt);
        }
      },
      (error: unknown) => {
        const answeredAt = Date.now();
        for (const result of unansweredPage(run, page, error)) submitted(run, result, sentAt, answeredAt);
      },
    )
    .finally(() => {
      for (const index of page) run.sending.delete(index);
      run.submitsRunning -= 1;
      bump(run);
    });
}

/**
 * A page whose activity never answered (a timeout, a dead worker): the jobs its last heartbeat
 * named exist; any other request of the page may have gone out. The lease of a request that never
 * reported is known only when it applies regardless of webhooks; asked for the longest ttl, it
 * bounds every item's.
 */
function unansweredPage(run: BatchRun, page: number[], error: unknown): SubmitItemResult[] {
  const reason = activityOutcome(error)?.message ?? String(error);
  const created = createdBeforeTimeout(error);
  const lease =
    run.lease === undefined
      ? undefined
      : unreportedLeaseTtl(leaseRequest(run.lease, 'async', Number.MAX_SAFE_INTEGER));
  return page.map(
    (index) =>
      created.get(index) ?? {
        i: index,
        uncertain: reason,
        armed: true,
        ...(lease === undefined ? {} : { lease }),
      },
  );
}

/** The jobs a submit that never answered had created, from its last heartbeat. */
function createdBeforeTimeout(error: unknown): Map<number, SubmitItemResult> {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  const details =
    cause instanceof TimeoutFailure ? (cause.lastHeartbeatDetails as { created?: unknown }) : undefined;
  const created = Array.isArray(details?.created) ? details.created : [];
  const out = new Map<number, SubmitItemResult>();
  for (const entry of created as Array<{ i?: unknown; id?: unknown; ttl?: unknown; lease?: unknown }>) {
    if (typeof entry?.i === 'number' && typeof entry.id === 'string') {
      out.set(entry.i, {
        i: entry.i,
        id: entry.id,
        ...(typeof entry.ttl === 'number' ? { ttl: entry.ttl } : {}),
        ...(typeof entry.lease === 'number' ? { lease: entry.lease } : {}),
      });
    }
  }
  return out;
}

/** One item's answer, as the engine's event. */
function submitted(run: BatchRun, result: SubmitItemResult, sentAt: number, answeredAt: number): void {
  const item: ItemState = run.items.get(result.i) ?? queuedItem(result.i);
  advance(run, item, submitEvent(result, sentAt, answeredAt));
}

export function submitEvent(result: SubmitItemResult, sentAt: number, answeredAt: number): ItemEvent {
  if ('id' in result) {
    return {
      kind: 'submitted',
      jobId: result.id,
      ttlMs: result.ttl ?? JOB_LIMITS.ttlDefaultMs,
      sentAt,
      answeredAt,
      ...(result.lease === undefined ? {} : { leaseTtlMs: result.lease }),
    };
  }
  if ('rejected' in result) return { kind: 'rejected', rejection: result.rejected, now: answeredAt };
  return {
    kind: 'uncertain',
    sentAt,
    answeredAt,
    webhookArmed: result.armed,
    ...(result.ttl === undefined ? {} : { ttlMs: result.ttl }),
    ...(result.lease === undefined ? {} : { leaseTtlMs: result.lease }),
  };
}
