/**
 * The job workflow's state (one `Run`): what it knows of its job and how each fact the service
 * reports updates it, the failure details and the result made from it, and the search attributes
 * and UI details kept in step with it.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  type ApplicationFailure,
  type CancellationScope,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { type JobStatusValue, terminalStatuses } from '../../api/schemas/job';
import { addRunCosts, type CostEstimate } from '../../contracts/cost';
import { jobCurrentDetails } from '../../contracts/current-details';
import type { ParsedJobInput } from '../../contracts/job-input';
import type { JobResult, JobSnapshot } from '../../contracts/job-snapshot';
import type { JobObservation, StreamSink } from '../../contracts/job-types';
import type { RouteHop } from '../../contracts/route';
import type { LeaseRequest } from '../../contracts/submit-lease';
import { type ItemState, queuedItem } from '../../engine/item-state';
import { resultsExpireAt, type SubmitKind } from '../../engine/job-rules';
import { JOB_FAILURE, type JobFailureDetails, jobFailure } from '../shared/job-failures';
import { endpointIdKey, jobIdKey, jobStatusKey } from '../shared/search-attributes';

/** A webhook's claim about a job: looked at with /status before it is believed. */
export type Hint = { jobId: string; status: string };
/**
 * Why watching stopped before a terminal status: the service no longer has the job (a 404), the
 * ttl deadline came and the last look found it unfinished (`status`) or found nothing, or the job
 * was withdrawn from an endpoint of its route that starved it in the queue (job-route.ts).
 */
export type WatchEnd =
  | { kind: 'gone'; lastAliveAt?: number }
  | { kind: 'deadline'; status?: JobStatusValue }
  | { kind: 'withdrawn'; outcome: 'withdrawn' | 'stopped' };

export interface Run {
  /**
   * The parsed input. Its `ttlMs` is the ttl the caller asks for each job submitted (a referenced
   * request's once read, a ttl the caller extended to once accepted); the live job's ttl, deadline
   * and counts are the engine's item's (job-item.ts), never copied here.
   */
  job: ParsedJobInput;
  s: JobSnapshot;
  /** The job in the per-item engine (job-item.ts): what happens next is decided there. */
  item: ItemState;
  /** Why the last uncertain submit was uncertain (for its failure's message). */
  uncertainReason?: string;
  /** The estimate of the runs before the last /retry, added to each later run's (s.cost). */
  earlierCost?: CostEstimate;
  /** Webhook hints not looked at yet, oldest first. */
  hints: Hint[];
  /** ttl values asked for by extendJobTtlSignal, not applied yet. */
  ttlRequests: number[];
  /** The lease submits ask for (contracts/submit-lease.ts); none when the caller wants no lease. */
  lease?: LeaseRequest;
  /**
   * On a route, while the job waits IN_QUEUE with an endpoint after its own: when to look whether
   * its endpoint has room (job-route.ts). Cleared once the job is seen anything but IN_QUEUE.
   */
  queueCheckAt?: number;
  /** Why the job last moved to another endpoint, until a submit there is accepted (its metric). */
  hop?: RouteHop['reason'];
  resultsExpireAt: number;
  /** The COMPLETED observation, whose output the result carries. */
  completed?: JobObservation;
  stream?: { scope: CancellationScope; done: boolean };
  sink?: StreamSink;
}

export const isTerminal = (status: string | undefined): boolean =>
  status !== undefined && (terminalStatuses as readonly string[]).includes(status);

export const submitKind = (run: Run): SubmitKind => (run.job.options.mode === 'runsync' ? 'runsync' : 'run');

/** The caller's bound on an output carried inline, as the activities take it (none: their default). */
export function inlineLimit(run: Run): { inlineMaxBytes?: number } {
  const limit = run.job.options.outputInlineMaxBytes;
  return limit === undefined ? {} : { inlineMaxBytes: limit };
}

export function newRun(job: ParsedJobInput, startedAt: number): Run {
  return {
    job,
    s: {
      endpointId: job.options.endpointId,
      mode: job.options.mode,
      phase: 'submitting',
      jobIds: [],
      submissions: 0,
      uncertainSubmits: 0,
      uncertainAdopted: 0,
      resubmittedAfterLease: 0,
      leaseLapses: 0,
      adopted: false,
      attempts: 0,
      retries: 0,
      webhooks: 0,
      strayJobIds: [],
      ...(job.options.route ? { hops: [] } : {}),
      timings: { startedAt },
      ...(job.options.stream ? { stream: { chunks: 0 } } : {}),
    },
    item: queuedItem(0),
    hints: [],
    ttlRequests: [],
    resultsExpireAt: Number.POSITIVE_INFINITY,
  };
}

// --- failure details and the result

/** The details of a failure before any run state exists (a bad input). */
export function emptyDetails(endpointId: string): JobFailureDetails {
  return { endpointId, jobIds: [], attempts: 0, retries: 0, submissions: 0, uncertainSubmits: 0 };
}

export function details(run: Run, extra: Partial<JobFailureDetails> = {}): JobFailureDetails {
  const { s } = run;
  return {
    endpointId: s.endpointId,
    ...(s.jobId ? { jobId: s.jobId } : {}),
    jobIds: [...s.jobIds],
    ...(s.status ? { status: s.status } : {}),
    attempts: s.attempts,
    retries: s.retries,
    submissions: s.submissions,
    uncertainSubmits: s.uncertainSubmits,
    ...leaseCounts(run),
    ...(s.hops ? { hops: s.hops.map((hop) => ({ ...hop })) } : {}),
    ...(s.cost !== undefined ? { cost: { ...s.cost } } : {}),
    ...extra,
  };
}

/** The lease's counts, only when something happened (results and details without a lease have none). */
function leaseCounts(
  run: Run,
): Partial<Pick<JobResult, 'uncertainAdopted' | 'resubmittedAfterLease' | 'leaseLapses'>> {
  const { uncertainAdopted, resubmittedAfterLease, leaseLapses } = run.s;
  return {
    ...(uncertainAdopted > 0 ? { uncertainAdopted } : {}),
    ...(resubmittedAfterLease > 0 ? { resubmittedAfterLease } : {}),
    ...(leaseLapses > 0 ? { leaseLapses } : {}),
  };
}

/** The field and rule an activity's BadRequest named, for the workflow's own failure. */
export function pickFieldRule(facts: Record<string, unknown>): Partial<JobFailureDetails> {
  return typeof facts.field === 'string' && typeof facts.rule === 'string'
    ? { field: facts.field, rule: facts.rule }
    : {};
}

export function finalFailure(run: Run, status: 'FAILED' | 'TIMED_OUT'): ApplicationFailure {
  const { s } = run;
  const tries = `after ${s.attempts} attempt(s) (${s.retries} retr${s.retries === 1 ? 'y' : 'ies'})`;
  if (status === 'TIMED_OUT') {
    return jobFailure(
      JOB_FAILURE.timedOut,
      `job ${s.jobId} on endpoint ${s.endpointId} ran past its executionTimeout ${tries}`,
      details(run),
    );
  }
  return jobFailure(
    JOB_FAILURE.failed,
    `job ${s.jobId} on endpoint ${s.endpointId} failed ${tries}: ${s.error ?? 'the service gave no error text'}`,
    details(run, s.error === undefined ? {} : { error: s.error }),
  );
}

export function resultOf(run: Run): JobResult {
  const { s } = run;
  const done = run.completed;
  return {
    endpointId: s.endpointId,
    jobId: s.jobId as string,
    status: 'COMPLETED',
    ...(done?.outputRef
      ? { outputRef: done.outputRef }
      : done && 'output' in done
        ? { output: done.output }
        : {}),
    ...(s.delayTime !== undefined ? { delayTime: s.delayTime } : {}),
    ...(s.executionTime !== undefined ? { executionTime: s.executionTime } : {}),
    ...(s.cost !== undefined ? { cost: s.cost } : {}),
    attempts: s.attempts,
    retries: s.retries,
    submissions: s.submissions,
    uncertainSubmits: s.uncertainSubmits,
    ...leaseCounts(run),
    jobIds: [...s.jobIds],
    ...(s.hops ? { hops: s.hops.map((hop) => ({ ...hop })) } : {}),
    ...(s.stream ? { stream: { ...s.stream } } : {}),
  };
}

// --- what the service reports

/** The UI's current details: they cost no history event. */
export function showCurrentDetails(run: Run): void {
  setCurrentDetails(jobCurrentDetails(run.s));
}

export function syncSearchAttributes(run: Run): void {
  // The UI's current details change at the same moments.
  showCurrentDetails(run);
  if (!run.job.options.searchAttributes) return;
  const current = workflowInfo().typedSearchAttributes;
  const updates: SearchAttributeUpdatePair[] = [];
  if (current.get(endpointIdKey) !== run.s.endpointId)
    updates.push({ key: endpointIdKey, value: run.s.endpointId });
  const ids = current.get(jobIdKey) ?? [];
  if (run.s.jobIds.length > 0 && ids.join('\n') !== run.s.jobIds.join('\n')) {
    updates.push({ key: jobIdKey, value: [...run.s.jobIds] });
  }
  if (run.s.status && current.get(jobStatusKey) !== run.s.status)
    updates.push({ key: jobStatusKey, value: run.s.status });
  if (updates.length > 0) upsertSearchAttributes(updates);
}

export function applyObservation(run: Run, observation: JobObservation): void {
  const { s } = run;
  const now = Date.now();
  s.status = observation.status;
  if (observation.delayTime !== undefined) s.delayTime = observation.delayTime;
  if (observation.executionTime !== undefined) s.executionTime = observation.executionTime;
  if (observation.cost !== undefined) s.cost = addRunCosts(run.earlierCost, observation.cost);
  if (observation.progress !== undefined) s.progress = observation.progress;
  if (observation.error !== undefined) s.error = observation.error;
  if (observation.status === 'IN_PROGRESS' && s.timings.runningAt === undefined) s.timings.runningAt = now;
  // A job seen anything but queued is never moved to another endpoint.
  if (observation.status !== 'IN_QUEUE') delete run.queueCheckAt;
  if (isTerminal(observation.status)) {
    s.timings.finishedAt = now;
    // An estimate: the job finished at most one polling interval before this; a /retry that comes
    // too late anyway is answered 404, which means the same.
    run.resultsExpireAt = resultsExpireAt(now, submitKind(run));
    s.timings.resultsExpireAt = run.resultsExpireAt;
  } else {
    delete s.timings.finishedAt;
    delete s.timings.resultsExpireAt;
    run.resultsExpireAt = Number.POSITIVE_INFINITY;
  }
  if (observation.status === 'COMPLETED') run.completed = observation;
  syncSearchAttributes(run);
}
