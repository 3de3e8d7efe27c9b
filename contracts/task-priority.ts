/**
 * The order in which a backlogged task queue hands out workflow and activity tasks.
 *
 * Priority: every task of a workload goes at the workload's own priority (its `priority`, 1 first
 * to 5 last, default 3), its looks included.
 *
 * Looks: a look that finds nothing new is retried by the server on the job's polling schedule, so
 * with thousands of jobs waiting on one worker the looks can outrun what the worker takes from the
 * queue. A backlog of looks must not hold up the calls that start or end work (a submit, a cancel,
 * a lease's extension), nor another endpoint's work. So the looks of an endpoint's work have a
 * fairness key of their own (`lookTaskKey`) with a quarter of the weight (LOOK_WEIGHT, exact as
 * the server's 32-bit float): while both are backlogged, an endpoint's other tasks get four of
 * every five it is handed, and another endpoint's look or submit goes beside them, not after. (A
 * priority of their own below the workload's would order every endpoint's looks after every
 * endpoint's submits: a job on B, its submit out, would not be seen to end until A's burst of
 * submits was through.)
 *
 * Fairness: one worker's task queue serves every endpoint, and first in, first out a burst of
 * jobs on one endpoint would hold up every other endpoint's work until its tasks were through.
 * Each job and batch workflow starts with its endpoint as its task fairness key (a route's first
 * endpoint, as its search attribute), so the server hands out the tasks of the endpoints with work
 * waiting in turn: a short job on endpoint B goes beside a thousand just started on A, not after.
 *
 * The key is the endpoint alone, not the endpoint and the workload's tenant (its `fairnessKey`):
 * - the share of the worker an endpoint gets must not grow with the number of tenants on it
 *   (Temporal weighs each key alike: ten tenants on A would give A ten shares to B's one);
 * - the tenants' shares of an endpoint are the gate's to hold (workflows/endpoint/endpoint-gate.ts),
 *   with their weights, over every worker process; a second rule of the same shares in the queue
 *   would only disagree with it;
 * - a key holds at most 64 bytes, which an endpoint id (up to 1,024 characters) and a tenant (up
 *   to 64 bytes) together would not fit without losing one of them to a hash.
 * Within one endpoint the queue goes by priority, then first in, first out; what a tenant's work
 * waits for there is its turn at the gate, where the tenants' weights hold.
 *
 * Activities and child workflows inherit the workflow's priority field by field (the server merges
 * an activity's own fields over its workflow's: priorities.Merge, Temporal server 1.29), so a
 * look's own key and weight keep their workflow's priority, and a workflow's every task carries its
 * endpoint. Child workflows that run on an endpoint of their own (a batch's children, an
 * automation's runs, an ephemeral endpoint's work) name theirs when started.
 *
 * The server honours priority when its matcher does, fairness when `matching.enableFairness` is on
 * (Temporal Cloud; self-hosted with the dynamic config of scripts/server-settings.ts, off by default
 * up to v1.29); a server that does not ignores the fields, and the queue is first in, first out.
 */
import type { Priority } from '@temporalio/common';
import { type Scheduling, taskPriorityOf } from './endpoint-gate';
import { routeOrder } from './route';
import { shortTag } from './short-tag';

/**
 * An endpoint's gate (workflows/endpoint/endpoint-gate.ts): every submit to the endpoint waits on
 * its workflow tasks, each a few milliseconds, so they go first. No fairness key: the gates share
 * the default key, apart from every endpoint's work.
 */
export const GATE_PRIORITY: Priority = { priorityKey: 1 };

/** Temporal's limit on a fairness key. */
const FAIRNESS_KEY_MAX_BYTES = 64;

/** An endpoint's task fairness key: its id, or a tag of it when the id is longer than a key holds. */
export function endpointTaskKey(endpointId: string): string {
  return fits(endpointId) ? endpointId : `endpoint~${shortTag(endpointId)}`;
}

/** The weight of an endpoint's looks against its other tasks (of weight 1) while both wait. */
export const LOOK_WEIGHT = 0.25;

/** The fairness key of an endpoint's looks: apart from its other tasks and from every other endpoint's. */
export function lookTaskKey(endpointId: string): string {
  const key = `look~${endpointId}`;
  return fits(key) ? key : `look~${shortTag(endpointId)}`;
}

/** The job poller's looks and the batch watchers' rounds on an endpoint: at the workload's priority. */
export function lookTaskPriority(endpointId: string): Priority {
  return { fairnessKey: lookTaskKey(endpointId), fairnessWeight: LOOK_WEIGHT };
}

function fits(key: string): boolean {
  return new TextEncoder().encode(key).length <= FAIRNESS_KEY_MAX_BYTES;
}

/** Where a workload runs: an endpoint, or a route. */
interface RunsOn {
  endpointId?: string | undefined;
  route?:
    | { endpoints: ReadonlyArray<{ endpointId: string; pricePerSecond?: number | undefined }> }
    | undefined;
}

/** What a workload's task priority is made of: its scheduling, and where it runs (a pipeline: its stages). */
export interface TaskPriorityOf extends Scheduling, RunsOn {
  stages?: ReadonlyArray<RunsOn> | undefined;
}

/** The endpoint a workload's tasks are keyed by: its own, its route's first, or its first stage's. */
function keyEndpoint(workload: RunsOn): string | undefined {
  return workload.endpointId ?? routeOrder(workload.route?.endpoints ?? [])[0]?.endpointId;
}

/**
 * A job's, batch's or pipeline's task priority in Temporal, from its input (checked already): its
 * own priority (none: the default), and its endpoint, or its route's first in the order work goes
 * to them (a pipeline: its first stage's), as the fairness key. Its user-facing fairness key and
 * weight are the gate's alone (see above).
 */
export function workloadTaskPriority(workload: TaskPriorityOf): { priority: Priority } {
  const firstStage = workload.stages?.[0];
  const endpointId = keyEndpoint(workload) ?? (firstStage && keyEndpoint(firstStage)) ?? '';
  const own: { priority?: Priority } = taskPriorityOf(workload);
  return { priority: { ...own.priority, fairnessKey: endpointTaskKey(endpointId) } };
}
