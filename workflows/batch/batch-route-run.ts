/**
 * A batch over a route, the part that talks to the service: an endpoint whose oldest job has
 * waited IN_QUEUE past queueDelayLimit gets a look at its room (/health); with no idle worker it
 * is drained (skipped for recheckAfter) and its queued jobs are withdrawn, each answer an event of
 * the per-item engine (a withdrawn job's item goes to another endpoint; one that started stays).
 * Repeated capacity failures and a deleted endpoint drain it too. When the drain is over the
 * endpoint takes a probe's worth of work again. The decisions are engine/batch-route.ts's.
 */
import { isCancellation, log } from '@temporalio/workflow';
import { endpointCapacitySummary, withdrawJobsSummary } from '../../contracts/activity-summaries';
import { lacksCapacity } from '../../contracts/route';
import { afterCapacityFailure, drained, isOpen, queueChecksDue, recovered } from '../../engine/batch-route';
import { endpointOf, type ItemDue, type RunningItem } from '../../engine/item-state';
import { activityOutcome } from '../shared/job-failures';
import { routeActivities } from './batch-activities';
import { advance, type BatchRun, bump, endpointIdAt, tallyAt } from './batch-run';

/** Jobs per withdrawal activity (its input's limit). */
const WITHDRAW_CHUNK = 1_000;

/** A route of more than one endpoint: the only kind that moves work. */
function routed(run: BatchRun): boolean {
  return run.route.endpoints.length > 1;
}

/** Ends the drains that are over, and looks at the endpoints whose queue waited too long. */
export function startRouteWork(run: BatchRun, now: number): void {
  if (!routed(run)) return;
  const { state } = run;
  state.endpoints = state.endpoints.map((tally) => recovered(tally, now));
  checksDue(run).forEach((due, at) => {
    if (due !== undefined && due <= now) startCheck(run, at);
  });
}

/** When the route next needs the loop: a queue's look, a drain's end. */
export function routeDue(run: BatchRun, now: number): ItemDue | undefined {
  if (!routed(run)) return undefined;
  let next: number | undefined;
  const consider = (at: number | undefined) => {
    if (at !== undefined && at > now && (next === undefined || at < next)) next = at;
  };
  for (const tally of run.state.endpoints) consider(tally.drainedUntil);
  for (const due of checksDue(run)) consider(due);
  return next === undefined ? undefined : { at: next, work: 'route-check' };
}

/** Each endpoint's next look at its queue: open ones, none under way, another one open. */
function checksDue(run: BatchRun): Array<number | undefined> {
  const now = Date.now();
  const { routing, state } = run;
  const jobs = [...run.items.values()]
    .filter((item): item is RunningItem => item.phase === 'running')
    .map((item) => ({
      endpoint: endpointOf(item),
      submittedAt: item.submittedAt,
      queued: item.status === 'IN_QUEUE' && !routing.withdrawing.has(item.index),
    }));
  const dues = queueChecksDue(jobs, state.endpoints.length, run.route.queueDelayLimit, routing.checkedAt);
  return dues.map((due, at) => {
    const elsewhere = state.endpoints.some((tally, other) => other !== at && isOpen(tally, now));
    return elsewhere && !routing.checking.has(at) && isOpen(tallyAt(run, at), now) ? due : undefined;
  });
}

function startCheck(run: BatchRun, at: number): void {
  const { routing } = run;
  const endpointId = endpointIdAt(run, at);
  routing.checking.add(at);
  routing.running += 1;
  routeActivities.endpointCapacity
    .executeWithOptions({ summary: endpointCapacitySummary(endpointId) }, [{ endpointId }])
    .then(
      (capacity) => {
        const now = Date.now();
        routing.checkedAt[at] = now;
        if (lacksCapacity(capacity) && isOpen(tallyAt(run, at), now)) {
          log.warn('an endpoint of the route starves its queue: drained, its queued jobs withdrawn', {
            endpointId,
            ...capacity,
          });
          drain(run, at, now);
          withdrawQueued(run, at);
        }
      },
      (error: unknown) => {
        routing.checkedAt[at] = Date.now();
        if (!isCancellation(error))
          log.warn('reading an endpoint of the route failed', {
            endpointId,
            error: activityOutcome(error)?.message,
          });
      },
    )
    .finally(() => {
      routing.checking.delete(at);
      routing.running -= 1;
      bump(run);
    });
}

function drain(run: BatchRun, at: number, now: number): void {
  const { state } = run;
  state.endpoints[at] = drained(tallyAt(run, at), now, run.route.recheckAfter);
}

/** The endpoint's jobs not seen started, withdrawn a chunk per activity. */
function withdrawQueued(run: BatchRun, at: number): void {
  const queued = [...run.items.values()].filter(
    (item): item is RunningItem =>
      item.phase === 'running' &&
      endpointOf(item) === at &&
      item.status === 'IN_QUEUE' &&
      !run.routing.withdrawing.has(item.index),
  );
  for (let from = 0; from < queued.length; from += WITHDRAW_CHUNK)
    startWithdrawal(run, at, queued.slice(from, from + WITHDRAW_CHUNK));
}

function startWithdrawal(run: BatchRun, at: number, items: RunningItem[]): void {
  const { routing } = run;
  const endpointId = endpointIdAt(run, at);
  for (const item of items) routing.withdrawing.add(item.index);
  routing.running += 1;
  routeActivities.withdrawQueuedJobs
    .executeWithOptions({ summary: withdrawJobsSummary(items.length, endpointId) }, [
      { endpointId, jobs: items.map((item): [number, string] => [item.index, item.jobId]) },
    ])
    .then(
      ({ results }) => {
        for (const { i, jobId, outcome } of results) {
          const item = run.items.get(i);
          if (item?.phase !== 'running' || item.jobId !== jobId) continue;
          // Ended or gone: its watcher reports it.
          if (outcome === 'withdrawn' || outcome === 'stopped' || outcome === 'started')
            advance(run, item, { kind: 'withdrawn', outcome, now: Date.now() });
        }
      },
      (error: unknown) => {
        if (!isCancellation(error))
          log.warn('withdrawing queued jobs failed', { endpointId, error: activityOutcome(error)?.message });
      },
    )
    .finally(() => {
      for (const item of items) routing.withdrawing.delete(item.index);
      routing.running -= 1;
      bump(run);
    });
}

/** Whether the watcher's word on an item waits for its withdrawal's answer (its cancel's echo). */
export function withdrawing(run: BatchRun, index: number): boolean {
  return run.routing.withdrawing.has(index);
}

/** A capacity failure on an endpoint: drained after CAPACITY_FAILURES_TO_DRAIN of them. */
export function capacityFailed(run: BatchRun, at: number, now: number): void {
  if (!routed(run)) return;
  const { tally, drain: drains } = afterCapacityFailure(tallyAt(run, at), now, run.route.recheckAfter);
  run.state.endpoints[at] = tally;
  if (drains)
    log.warn('an endpoint of the route fails for capacity: drained', { endpointId: endpointIdAt(run, at) });
}

/** A submit found the endpoint gone (404): drained, its items sent elsewhere. */
export function endpointGone(run: BatchRun, at: number, now: number): void {
  if (!routed(run) || !isOpen(tallyAt(run, at), now)) return;
  log.warn('an endpoint of the route is gone: drained', { endpointId: endpointIdAt(run, at) });
  drain(run, at, now);
}

/** A job completed on an endpoint: a probe of it succeeded. */
export function completedOn(run: BatchRun, at: number): void {
  const tally = tallyAt(run, at);
  if (tally.probing) {
    const { probing: _probing, ...rest } = tally;
    run.state.endpoints[at] = rest;
  }
}
