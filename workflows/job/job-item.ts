/**
 * The job workflow's one item in the per-item engine (engine/item-engine.ts): every decision about the
 * job (a submit's answer and its backoff, an uncertain submit, the lease, a terminal status, a
 * retry, expiry, a move to another endpoint of its route) is a step of the engine, the same one the
 * batch drives for each of its items. `advanceJob` steps it and keeps the workflow's snapshot
 * (counts, job id, endpoint, moves, deadline) in step; the deadline the workflow waits by is read
 * from the item each time (`jobDeadline`), never kept beside it.
 */
import { type Route, type RouteEndpoint, singleRoute } from '../../contracts/route';
import { stepItem } from '../../engine/item-engine';
import {
  deadlineOf,
  endpointOf,
  type ItemCount,
  type ItemEvent,
  type ItemRules,
  type ItemState,
  type ItemStep,
  lastLookAt,
} from '../../engine/item-state';
import { hasNextEndpoint } from '../../engine/item-steps';
import { queueLookDue } from '../../engine/queue-look';
import { type Run, submitKind, syncSearchAttributes } from './job-run';

/** The job's route: a single endpoint is a route of one. */
export function jobRoute(run: Run): Route {
  return run.job.options.route ?? singleRoute(run.job.options.endpointId);
}

/** The engine's rules for this job: the caller's options, one item, no grouping of retries. */
export function jobRules(run: Run): ItemRules {
  const route = jobRoute(run);
  return {
    ...run.job.options,
    submitKind: submitKind(run),
    retryGridMs: 1,
    waitGridMs: 1,
    routeLength: route.endpoints.length,
    capacityFailures: route.capacityFailures,
  };
}

/** The endpoint the item is on (or goes to next, when queued). */
export function routeEndpoint(run: Run, item: ItemState = run.item): RouteEndpoint {
  return jobRoute(run).endpoints[endpointOf(item)] ?? { endpointId: run.job.options.endpointId };
}

const SNAPSHOT_COUNT: Partial<
  Record<ItemCount, 'uncertainSubmits' | 'uncertainAdopted' | 'resubmittedAfterLease' | 'leaseLapses'>
> = {
  uncertainSubmit: 'uncertainSubmits',
  uncertainAdopted: 'uncertainAdopted',
  resubmittedAfterLease: 'resubmittedAfterLease',
  leaseLapse: 'leaseLapses',
};

export function advanceJob(run: Run, event: ItemEvent): ItemStep {
  const before = run.item;
  const rules = jobRules(run);
  const result = stepItem(before, event, rules);
  run.item = result.item;
  const { s } = run;
  for (const count of result.counts) {
    const field = SNAPSHOT_COUNT[count];
    if (field) s[field] += 1;
  }
  const item = result.item;
  s.attempts = item.attempts;
  s.submissions = item.submissions;
  s.retries = item.retries;
  s.endpointId = routeEndpoint(run, item).endpointId;
  if (result.counts.includes('hop')) noteHop(run, before, event);
  // A move is counted once, by the submit the service accepts (an adopted orphan counts none).
  if (event.kind === 'submitted' || event.kind === 'orphan-reported') delete run.hop;
  if (item.phase === 'running' || item.phase === 'retry-due') {
    if (s.jobId !== item.jobId) {
      ownNewJob(run, item.jobId, item.submittedAt, item.adopted);
      // On a route with an endpoint after this one, a job that waits too long here may move.
      if (hasNextEndpoint(item, rules))
        run.queueCheckAt = queueLookDue(item.submittedAt, jobRoute(run).queueDelayLimit);
      else delete run.queueCheckAt;
    }
    if (item.phase === 'running' && item.lease) s.leaseTtlMs = item.lease.ttlMs;
    else delete s.leaseTtlMs;
    s.timings.ttlDeadline = deadlineOf(item);
  }
  return result;
}

/**
 * When the service deletes the job (its ttl, or its lease's until extended, from its submit), and
 * when it is looked at for the last time before that: the engine's item says (item-state.ts).
 * None while no job is known.
 */
export function jobDeadline(run: Run): { deadline: number; lastLookAt: number } {
  const { item } = run;
  if (item.phase !== 'running' && item.phase !== 'retry-due')
    return { deadline: Number.POSITIVE_INFINITY, lastLookAt: Number.POSITIVE_INFINITY };
  return { deadline: deadlineOf(item), lastLookAt: lastLookAt(item) };
}

/** The workflow now follows this job (submitted by it, or adopted from an uncertain submit). */
function ownNewJob(run: Run, jobId: string, submittedAt: number, adopted: boolean): void {
  const { s } = run;
  s.jobId = jobId;
  if (!s.jobIds.includes(jobId)) s.jobIds.push(jobId);
  s.adopted = adopted;
  s.timings.submittedAt = submittedAt;
  delete s.timings.runningAt;
  delete s.progress;
}

/**
 * The engine moved the job to the next endpoint of its route: the move is recorded (result,
 * snapshot, the next submit's metric), and the job left behind is known to be over there.
 */
function noteHop(run: Run, before: ItemState, event: ItemEvent): void {
  const { s } = run;
  const reason = event.kind === 'withdrawn' ? 'starved' : 'capacity-failure';
  const jobId = (before.phase === 'running' ? before.jobId : s.jobId) ?? '';
  const at = 'now' in event ? event.now : Date.now();
  s.hops = [
    ...(s.hops ?? []),
    { from: routeEndpoint(run, before).endpointId, to: s.endpointId, jobId, reason, at },
  ];
  run.hop = reason;
  delete run.queueCheckAt;
  // A withdrawn job ended CANCELLED without running (or stopped as it started).
  if (reason === 'starved') s.status = 'CANCELLED';
  // The runs so far keep their estimate; the next endpoint's runs are added to it.
  if (s.cost) run.earlierCost = s.cost;
  syncSearchAttributes(run);
}
