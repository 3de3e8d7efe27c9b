/**
 * Following the batch's jobs: watcher activities (a few at once, each on jobs of one endpoint
 * that no other one covers) answer with the jobs that finished or are gone; orphans of uncertain submits report
 * themselves by webhook and are adopted; an uncertain submit whose wait is over is settled. Every
 * answer is an event of the per-item engine.
 */
import { CancellationScope, isCancellation, log } from '@temporalio/workflow';
import { JOB_LIMITS, terminalStatuses } from '../../api/schemas/job';
import { watchJobsSummary } from '../../contracts/activity-summaries';
import type { ItemChange, WatchedItem } from '../../contracts/batch-types';
import { lookTaskPriority } from '../../contracts/task-priority';
import type { ItemEvent, RunningItem } from '../../engine/item-state';
import { lookShare, looksHandedBack, looksOfCancelled, looksTakenOver } from '../../engine/look-shares';
import { activityOutcome } from '../shared/job-failures';
import { watchActivities } from './batch-activities';
import type { BatchHintAnswer } from './batch-definitions';
import { extendedByLooks, leaseToExtend, lookExtensionDue } from './batch-lease';
import { capacityFailed, completedOn, withdrawing } from './batch-route-run';
import { addCost, advance, type BatchRun, bump, endpointIdAt } from './batch-run';
import { byEndpoint, watcherRoom } from './batch-run-counts';

/**
 * A watcher holds its answer this long after its first finished job, while more finish (fewer,
 * fuller answers), or until a tenth of its jobs did: each place it frees waits for the answer.
 */
const WATCH_HOLD_MS = 500;
const WATCH_RETURN_SHARE = 10;
/**
 * While a watcher runs and a page is being submitted, jobs not yet covered wait for that page until
 * they make this many pages: a watcher per page costs an activity and a workflow task per page
 * (about 0.05 history events per item at pages of 100), and the wait is one submit's.
 */
const PAGES_PER_WATCHER = 2;
const MAX_PENDING_HINTS = 1_000;
const TERMINAL: ReadonlySet<string> = new Set<string>(terminalStatuses);

export function startWatch(run: BatchRun): void {
  while (watcherRoom(run)) {
    const uncovered: RunningItem[] = [];
    for (const item of run.items.values()) {
      // A job being withdrawn is watched again once the withdrawal has answered (if it stays).
      if (item.phase === 'running' && !run.watched.has(item.index) && !withdrawing(run, item.index))
        uncovered.push(item);
    }
    if (uncovered.length === 0 || waitsForPage(run, uncovered.length)) return;
    // A watcher follows the jobs of one endpoint.
    for (const [at, items] of byEndpoint(uncovered)) {
      if (!watcherRoom(run)) return;
      startWatcher(run, items, at);
    }
  }
}

/**
 * The page under way ends the wait: its answer wakes the loop (a full window sends none). Only a
 * page whose send time has come answers soon: one waiting for room in the /run limit may take
 * seconds.
 */
function waitsForPage(run: BatchRun, uncovered: number): boolean {
  const now = Date.now();
  return (
    run.watchers.size > 0 &&
    run.sendTimes.some((at) => at <= now) &&
    uncovered < PAGES_PER_WATCHER * run.input.pageSize
  );
}

/**
 * A cancelled watcher hands nothing back and may look on until the cancel reaches it: its share
 * counts as spent now, so the watchers after it (in this run or the next) wait that window out.
 */
export function cancelWatchers(run: BatchRun): void {
  const now = Date.now();
  for (const [scope, watcher] of run.watchers) {
    // A draining run asks at every turn until the cancel has ended the watcher: counted once.
    if (scope.consideredCancelled) continue;
    const tally = run.state.endpoints[watcher.at];
    if (tally) looksOfCancelled(tally, watcher.share, now);
    scope.cancel();
  }
}

function startWatcher(run: BatchRun, covered: RunningItem[], at: number): void {
  const { input, state } = run;
  const items: WatchedItem[] = covered.map((item) => {
    const watched: WatchedItem = [item.index, item.jobId, item.status, item.attempts, item.submittedAt];
    if (item.cost !== undefined || item.hops) watched.push(item.cost ?? null);
    if (item.hops) watched.push(item.hops);
    return watched;
  });
  const capacityFailures = run.route.endpoints.length > 1 ? run.route.capacityFailures : [];
  const share = lookShare(
    { status: state.statusLimit, run: state.runLimit, leased: run.lease !== undefined },
    items.length,
    state.maxConcurrency,
  );
  const tally = state.endpoints[at];
  // The looks of the watchers before it that still count are its to account for, up to its share.
  const { seed, sources } = tally ? looksTakenOver(tally, share, Date.now()) : { seed: [], sources: 0 };
  // Leases extended by the looks (batch-lease.ts says which).
  const extend = covered.flatMap(
    (item): Array<[number, number, number]> =>
      extendedByLooks(item) && !run.extending.has(item.index)
        ? [[item.index, item.ttlMs, lookExtensionDue(item)]]
        : [],
  );
  const asked = new Map(covered.map((item) => [item.index, item.jobId]));
  for (const index of asked.keys()) run.watched.add(index);
  const scope = new CancellationScope();
  run.watchers.set(scope, { asked, at, share });
  scope
    .run(() =>
      watchActivities.watchBatchJobs.executeWithOptions(
        // Under the endpoint's look key (contracts/task-priority.ts).
        { summary: watchJobsSummary(items.length), priority: lookTaskPriority(endpointIdAt(run, at)) },
        [
          {
            endpointId: endpointIdAt(run, at),
            batchKey: state.batchKey,
            items,
            polling: run.polling,
            returnAfter: Math.max(1, Math.floor(items.length / WATCH_RETURN_SHARE)),
            holdMs: WATCH_HOLD_MS,
            ...(input.job.outputInlineMaxBytes === undefined
              ? {}
              : { inlineMaxBytes: input.job.outputInlineMaxBytes }),
            ...(capacityFailures.length === 0 ? {} : { capacityFailures }),
            ...(share === undefined ? {} : { share }),
            ...(seed.length === 0 ? {} : { seed, seedSources: sources }),
            ...(extend.length === 0 ? {} : { extend }),
            ...(run.stage === undefined ? {} : { linePerItem: true }),
          },
        ],
      ),
    )
    .then(
      ({ changes, currency, looks, extended }) => {
        if (currency !== undefined) state.cost.currency = currency;
        if (tally) looksHandedBack(tally, looks, Date.now());
        for (const index of extended ?? []) {
          const item = run.items.get(index);
          if (item?.phase === 'running' && item.jobId === asked.get(index) && leaseToExtend(item))
            advance(run, item, { kind: 'lease-extended' });
        }
        for (const change of changes) changed(run, change, asked.get(change.i), at);
      },
      (error: unknown) => {
        if (!isCancellation(error))
          log.warn('the watcher failed', { error: activityOutcome(error)?.message });
      },
    )
    .finally(() => {
      run.watchers.delete(scope);
      for (const index of asked.keys()) run.watched.delete(index);
      bump(run);
    });
}

/** A watcher's word on one job: only about the job it was asked about (the item may have a new one). */
function changed(run: BatchRun, change: ItemChange, askedJobId: string | undefined, at: number): void {
  const item = run.items.get(change.i);
  if (item?.phase !== 'running' || item.jobId !== askedJobId) return;
  // A job being withdrawn is the withdrawal's to settle: its own cancel ends it CANCELLED, and a
  // cancelled job may be gone (its results expired) before the withdrawal answers. Only a run
  // that completed (its line is written) is taken from the watcher.
  if (withdrawing(run, change.i) && change.status !== 'COMPLETED') return;
  const { stopping } = run.state;
  if (change.gone) {
    advance(run, item, { kind: 'gone', now: Date.now(), stopping });
    return;
  }
  if (!TERMINAL.has(change.status)) {
    advance(run, item, { kind: 'observed', status: change.status as RunningItem['status'] });
    return;
  }
  const now = Date.now();
  addCost(run, change.cost, at);
  if (change.status === 'COMPLETED') completedOn(run, at);
  if (change.capacityFailure !== undefined) capacityFailed(run, at, now);
  // The engine judges a capacity failure by the pattern the watcher matched (the error text
  // itself stays in the store).
  const error = change.error ?? change.capacityFailure;
  const event: ItemEvent = {
    kind: 'finished',
    status: change.status as Extract<ItemEvent, { kind: 'finished' }>['status'],
    now,
    ...(change.cost === undefined ? {} : { cost: change.cost }),
    ...(error === undefined ? {} : { error }),
  };
  advance(run, item, event, {
    ...(change.errorRef === undefined ? {} : { errorRef: change.errorRef }),
    ...(change.delayTime === undefined ? {} : { delayTime: change.delayTime }),
    ...(change.executionTime === undefined ? {} : { executionTime: change.executionTime }),
  });
}

// --- orphans of uncertain submits

/** Whether a webhook naming `jobId` for item `index` is wanted: only an orphan's. */
export function wantsHint(run: BatchRun, index: number, jobId: string): BatchHintAnswer {
  for (const item of run.items.values()) {
    if ((item.phase === 'running' || item.phase === 'retry-due') && item.jobId === jobId) return false;
  }
  if (run.items.get(index)?.phase === 'uncertain') return true;
  // Its page has not answered: most such jobs will be known when it does (no signal needed).
  return run.sending.has(index) ? 'wait' : false;
}

export function receiveHint(run: BatchRun, hint: unknown): void {
  const { jobId, item } = (hint ?? {}) as { jobId?: unknown; item?: unknown };
  if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 1024) return;
  run.state.tally.webhooks += 1;
  // Only an orphan (a job id no item has, naming an item waiting on an uncertain submit) matters:
  // every known job is looked at by the watcher anyway.
  if (typeof item !== 'number' || !wantsHint(run, item, jobId)) return;
  run.state.hints.push({ jobId, item });
  if (run.state.hints.length > MAX_PENDING_HINTS) run.state.hints.shift();
  bump(run);
}

/** An orphan's webhook names its item: that job becomes the item's (the watcher confirms it). */
export function adoptOrphans(run: BatchRun): void {
  const { state } = run;
  const keep: BatchRun['state']['hints'] = [];
  for (const hint of state.hints.splice(0)) {
    const item = hint.item === undefined ? undefined : run.items.get(hint.item);
    if (item?.phase !== 'uncertain' || wantsHint(run, item.index, hint.jobId) === false) {
      // Its submit has not answered yet: kept until it does.
      if (hint.item !== undefined && run.sending.has(hint.item)) keep.push(hint);
      continue;
    }
    log.info('adopted the job of an uncertain submit from its webhook', {
      item: item.index,
      jobId: hint.jobId,
    });
    advance(run, item, {
      kind: 'orphan-reported',
      jobId: hint.jobId,
      now: Date.now(),
      defaultTtlMs: JOB_LIMITS.ttlDefaultMs,
    });
  }
  state.hints.push(...keep);
}

/** Uncertain submits whose wait is over: sent again or given up, as the caller chose. */
export function settleUncertain(run: BatchRun, now: number): void {
  for (const item of [...run.items.values()]) {
    if (item.phase === 'uncertain' && item.waitUntil <= now) {
      advance(run, item, { kind: 'wait-over', stopping: run.state.stopping });
    }
  }
}
