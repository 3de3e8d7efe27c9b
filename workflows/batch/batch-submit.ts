/**
 * The batch's intake and submits: pages of items (queued again first, then the next ones from the
 * manifest) go to the submit activity, each page to one endpoint of the route, as the windows
 * free room; each item's answer is an event of the per-item engine.
 */
import { CancellationScope, isCancellation, log, TimeoutFailure } from '@temporalio/workflow';
import { JOB_LIMITS } from '../../api/schemas/job';
import { endpointWorkersSummary, submitItemsSummary } from '../../contracts/activity-summaries';
import type { PageSend, SubmitItemResult } from '../../contracts/batch-types';
import { ASK_WAIT_MS } from '../../contracts/endpoint-gate';
import { endpointWindows } from '../../contracts/route';
import { leaseRequest, unreportedLeaseTtl } from '../../contracts/submit-lease';
import { afterPageAnswer, endpointRooms, planPage } from '../../engine/batch-route';
import { type ItemEvent, type ItemState, type QueuedItem, queuedItem } from '../../engine/item-state';
import { sentNothing } from '../../engine/job-submit-rules';
import { activityOutcome } from '../shared/job-failures';
import { routeActivities, stageActivities, submitActivities } from './batch-activities';
import { budgetRoom } from './batch-controls';
import { endpointGone } from './batch-route-run';
import { advance, type BatchRun, bump, endpointIdAt, tallyAt } from './batch-run';
import { endpointLoads, inFlight, submitting } from './batch-run-counts';

/**
 * Submits that may run at once on one endpoint: one sending while the next is scheduled keeps the
 * limiter busy.
 */
const PARALLEL_SUBMITS = 2;

/** Writes the caller's items to the batch store (a manifest): only its key enters history. */
export async function stage(run: BatchRun): Promise<void> {
  const staged = await stageActivities.stageBatchItems({ items: run.input.items });
  run.state.batchKey = staged.batchKey;
  if (staged.store !== undefined) run.state.store = staged.store;
  run.state.manifestKey = staged.manifestKey;
  run.state.total = staged.total;
  if (staged.runLimit !== undefined) run.state.runLimit = staged.runLimit;
  if (staged.statusLimit !== undefined) run.state.statusLimit = staged.statusLimit;
  if (run.route.endpoints.length > 1) await readWorkers(run);
}

/**
 * Each endpoint's maximum worker count, which sizes its window on a route. Unknown (the read
 * failed, an endpoint of another account) means unsized: its share of maxConcurrency alone.
 */
export async function readWorkers(run: BatchRun): Promise<void> {
  const endpointIds = run.route.endpoints.map((endpoint) => endpoint.endpointId);
  try {
    const { workersMax } = await routeActivities.endpointWorkers.executeWithOptions(
      { summary: endpointWorkersSummary(endpointIds) },
      [{ endpointIds }],
    );
    endpointIds.forEach((endpointId, at) => {
      const workers = workersMax[endpointId];
      const tally = run.state.endpoints[at];
      if (tally && typeof workers === 'number') tally.workersMax = workers;
    });
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn('the route endpoints worker counts could not be read: windows by share only', {
      error: activityOutcome(error)?.message,
    });
  }
}

/** Items queued again whose time has come, not in a page already, in the order they were taken. */
function readyQueued(run: BatchRun, now: number): QueuedItem[] {
  const ready: QueuedItem[] = [];
  for (const item of run.items.values()) {
    if (item.phase !== 'queued' || run.sending.has(item.index)) continue;
    if (item.notBefore === undefined || item.notBefore <= now) ready.push(item);
  }
  return ready;
}

/**
 * Pages go out while the window has room: each to one endpoint of the route (engine/batch-route.ts
 * planPage), at most PARALLEL_SUBMITS at once per endpoint.
 */
export function startSubmits(run: BatchRun, now: number): void {
  const { state, input } = run;
  if (state.paused || state.stopping) return;
  for (;;) {
    const ready = readyQueued(run, now);
    const waiting = ready.length + (state.total - state.cursor);
    if (waiting === 0) return;
    const windows = endpointWindows(
      run.route,
      state.maxConcurrency,
      state.endpoints.map((tally) => tally.workersMax),
    );
    const plan = planPage({
      windows,
      rooms: endpointRooms(windows, state.endpoints, endpointLoads(run), input.pageSize, now),
      free: state.maxConcurrency - inFlight(run) - submitting(run),
      sends: run.sends,
      maxSends: PARALLEL_SUBMITS,
      queued: ready,
      fresh: state.total - state.cursor,
      // A page fits in one window of the /run limit.
      pageSize: Math.min(input.pageSize, state.runLimit?.perTenSeconds ?? input.pageSize),
      busy: run.submitsRunning > 0 || inFlight(run) > 0,
      budget: budgetRoom(run),
    });
    if (!plan) return;
    const page = plan.queued.slice();
    while (page.length < plan.queued.length + plan.fresh) page.push(state.cursor++);
    submitPage(run, page, plan.endpoint, now);
  }
}

/**
 * How the page's requests go out: its part of the endpoint's concurrent requests, and the batch's
 * priority and fairness key at the endpoint's gate, which grants the room in the /run window to
 * every workload on the endpoint (workflows/endpoint/endpoint-gate.ts).
 */
function pageSend(run: BatchRun, count: number): PageSend | undefined {
  const limit = run.state.runLimit;
  if (limit === undefined) return undefined;
  const { priority, fairnessKey, fairnessWeight } = run.input;
  return {
    concurrent: Math.max(1, Math.floor((limit.concurrent ?? count * PARALLEL_SUBMITS) / PARALLEL_SUBMITS)),
    scheduling: {
      ...(priority === undefined ? {} : { priority }),
      ...(fairnessKey === undefined ? {} : { fairnessKey }),
      ...(fairnessWeight === undefined ? {} : { fairnessWeight }),
    },
  };
}

function submitPage(run: BatchRun, page: number[], endpoint: number, now: number): void {
  const { input, state, lease } = run;
  const send = pageSend(run, page.length);
  // The earliest its requests can have gone out: the gate grants room from now on.
  const sentAt = now;
  const endpointId = endpointIdAt(run, endpoint);
  const overrides = run.route.endpoints[endpoint]?.inputOverrides;
  run.submitsRunning += 1;
  run.sends[endpoint] = (run.sends[endpoint] ?? 0) + 1;
  run.sendTimes.push(sentAt);
  for (const index of page) run.sending.set(index, endpoint);
  CancellationScope.nonCancellable(() =>
    submitActivities(input.job.submitTimeout + ASK_WAIT_MS, page.length).submitBatchPage.executeWithOptions(
      { summary: submitItemsSummary(page, endpointId) },
      [
        {
          endpointId,
          manifestKey: state.manifestKey,
          indexes: page,
          ...(run.stage === undefined ? {} : { pipeline: run.stage.pageSource(page) }),
          // Only an orphan that may be adopted needs a webhook; every other job is watched.
          webhook: input.job.uncertainSubmitWait > 0 || lease !== undefined,
          ...(lease === undefined ? {} : { submitLease: lease }),
          ...(overrides === undefined ? {} : { inputOverrides: overrides }),
          ...(send === undefined ? {} : { send }),
        },
      ],
    ),
  )
    .then(
      ({ results, unsent, paused }) => {
        const answeredAt = Date.now();
        const asked = new Set(page);
        const answer = { paused: paused === true, granted: results.length > 0 };
        state.endpoints[endpoint] = afterPageAnswer(tallyAt(run, endpoint), answer, sentAt, answeredAt);
        for (const result of results) {
          if (asked.has(result.i)) submitted(run, result, sentAt, answeredAt, endpoint);
        }
        // Past its time to be sent: queued again as it was, for a page with a send time of its own.
        for (const index of unsent ?? []) {
          if (asked.has(index) && !run.items.has(index)) run.items.set(index, queuedItem(index));
        }
      },
      (error: unknown) => {
        const answeredAt = Date.now();
        for (const result of unansweredPage(run, page, error))
          submitted(run, result, sentAt, answeredAt, endpoint);
      },
    )
    .finally(() => {
      for (const index of page) run.sending.delete(index);
      run.sendTimes.splice(run.sendTimes.indexOf(sentAt), 1);
      run.submitsRunning -= 1;
      run.sends[endpoint] = (run.sends[endpoint] ?? 1) - 1;
      bump(run);
    });
}

/**
 * A page whose activity never answered (a timeout, a dead worker): the jobs its last heartbeat
 * named exist; any other request of the page may have gone out, unless the page failed before its
 * first one (every item then goes back to the queue). The lease of a request that never reported
 * is known only when it applies regardless of webhooks; asked for the longest ttl, it bounds every
 * item's.
 */
function unansweredPage(run: BatchRun, page: number[], error: unknown): SubmitItemResult[] {
  const outcome = activityOutcome(error);
  const reason = outcome?.message ?? String(error);
  if (outcome && sentNothing(outcome)) {
    return page.map((index) => ({
      i: index,
      rejected: { type: outcome.type, message: reason, retryable: true },
    }));
  }
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
function submitted(
  run: BatchRun,
  result: SubmitItemResult,
  sentAt: number,
  answeredAt: number,
  endpoint: number,
): void {
  const item: ItemState = run.items.get(result.i) ?? queuedItem(result.i);
  const gone = 'rejected' in result && result.rejected.type === 'NotFound' && run.route.endpoints.length > 1;
  // An endpoint of the route that is gone: drained, and its items go to another one.
  if (gone) endpointGone(run, endpoint, answeredAt);
  advance(run, item, submitEvent(result, sentAt, answeredAt, endpoint, gone));
}

/**
 * A submit's answer as the engine's event; `placed`: the route position it went to; `elsewhere`:
 * a rejection another endpoint may not give (its own is gone), so the item is sent again.
 */
export function submitEvent(
  result: SubmitItemResult,
  sentAt: number,
  answeredAt: number,
  placed = 0,
  elsewhere = false,
): ItemEvent {
  const endpoint = placed === 0 ? {} : { endpoint: placed };
  if ('id' in result) {
    return {
      kind: 'submitted',
      jobId: result.id,
      ttlMs: result.ttl ?? JOB_LIMITS.ttlDefaultMs,
      sentAt,
      answeredAt,
      ...(result.lease === undefined ? {} : { leaseTtlMs: result.lease }),
      ...endpoint,
    };
  }
  if ('rejected' in result) {
    const rejection = elsewhere ? { ...result.rejected, retryable: true } : result.rejected;
    return { kind: 'rejected', rejection, now: answeredAt };
  }
  return {
    kind: 'uncertain',
    sentAt,
    answeredAt,
    webhookArmed: result.armed,
    ...(result.ttl === undefined ? {} : { ttlMs: result.ttl }),
    ...(result.lease === undefined ? {} : { leaseTtlMs: result.lease }),
    ...endpoint,
  };
}
