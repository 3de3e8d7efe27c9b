/**
 * The job workflow: owns one remote job from submission to result.
 *
 * 1. Parses its input (contracts/job-input.ts); a bad input fails at once with BadRequest. A
 *    `requestRef` instead of a `request` (the batch's child mode) is read by the activities from the
 *    batch store: its ttl first, then the whole request by the submit, so none of it enters history.
 * 2. Submits once (/run, or /runsync in mode runsync). A submit that may have reached the service
 *    without an answer is "uncertain": the workflow then waits `uncertainSubmitWait` for the
 *    orphan's webhook (the URL is per workflow, so a job it does not know reports itself) and
 *    adopts that job if /status confirms it; otherwise it fails with SubmitUncertain or, if the
 *    caller chose so, submits again. Under a submit lease (contracts/submit-lease.ts) the job goes
 *    out with a short ttl that is extended once its id is known; an uncertain submit then waits out
 *    the lease and the webhook's retry window for the orphan, and submits again if none reported.
 * 3. Waits by webhook and by polling at once. Polling is one activity whose looks the server
 *    retries, holding no slot, that returns when the job has finished (at each status change with
 *    `recordStart`, or on a route while the job may still move); a webhook is a hint, confirmed
 *    with /status (a local activity: one marker), after which the poller is cancelled. A job's
 *    history is about 20 events, whatever its running time.
 * 4. The ttl is a hard deadline from submission (queue time counts; /retry does not reset it): the
 *    workflow stops waiting just before it, looks once more, and calls the job expired if it is not
 *    finished. A JobExpired (ttl passed or results expired before a retry) leads to a fresh submit
 *    or a failure, as the caller chose.
 * 5. FAILED / TIMED_OUT -> /retry after the caller's backoff while results are kept (30 min after
 *    finishing; 1 min for /runsync jobs), up to retry.maxRetries; then JobFailed / JobTimedOut.
 * 6. Cancelling the workflow cancels the remote job in a non-cancellable scope, then the workflow
 *    ends as cancelled.
 * 7. On a route (contracts/route.ts) the job goes to the route's first endpoint. One that waits
 *    IN_QUEUE past queueDelayLimit on an endpoint with no idle worker is withdrawn there (moved only
 *    once the service confirms it never started) and submitted to the next endpoint; a failure the
 *    caller calls a capacity failure moves there too instead of a retry. Each move is a hop in the
 *    result and the snapshot; a job seen running is never moved.
 *
 * This module is the job's life from start to end; the parts live beside it: job-run.ts (the
 * state and what each observation changes), job-signals.ts, job-submit.ts (submission and
 * uncertain submits), job-lease.ts, job-orphan.ts, job-watch.ts (waiting), job-route.ts (the look
 * at a queued job's endpoint and its withdrawal), job-stream.ts, and the pure decisions in
 * engine/job-rules.ts and engine/job-submit-rules.ts.
 */
import { CancellationScope, isCancellation, log, setHandler, sleep } from '@temporalio/workflow';
import { retryBackoffSummary, retryJobSummary } from '../../contracts/activity-summaries';
import { type JobWorkflowInput, parseJobWorkflowInput } from '../../contracts/job-input';
import type { JobResult } from '../../contracts/job-snapshot';
import type { JobObservation } from '../../contracts/job-types';
import { leaseRequest } from '../../contracts/submit-lease';
import type { EndedItem, ItemEvent, ItemState, RetryDueItem } from '../../engine/item-state';
import { emitOnEnd, failureData } from '../shared/emit-on-end';
import { activityOutcome, JOB_FAILURE, jobFailure } from '../shared/job-failures';
import { retryActivities, shortActivities } from './job-activities';
import { asJobFailure, cancelQuietly, cancelRemoteJob } from './job-cancel';
import { extendJobTtlSignal, jobSnapshotQuery, jobWebhookSignal } from './job-definitions';
import { advanceJob, jobDeadline } from './job-item';
import {
  applyObservation,
  details,
  emptyDetails,
  finalFailure,
  newRun,
  type Run,
  resultOf,
  showCurrentDetails,
  syncSearchAttributes,
  type WatchEnd,
} from './job-run';
import { receiveHint, receiveTtlRequest } from './job-signals';
import { finishStream, resolveSink, startStream } from './job-stream';
import { submitFresh } from './job-submit';
import { watchUntilTerminal } from './job-watch';

export type { JobWorkflowInput } from '../../contracts/job-input';
export type { JobResult, JobSnapshot } from '../../contracts/job-snapshot';

export async function serverlessJob(input: JobWorkflowInput): Promise<JobResult> {
  const startedAt = Date.now();
  const parsed = parseJobWorkflowInput(input);
  if (!parsed.ok) {
    const endpointId = String((input as { endpointId?: unknown } | undefined)?.endpointId ?? '');
    throw jobFailure(JOB_FAILURE.badRequest, `invalid job workflow input: ${parsed.field}: ${parsed.rule}`, {
      ...emptyDetails(endpointId),
      field: parsed.field,
      rule: parsed.rule,
    });
  }
  const run = newRun(parsed.value, startedAt);
  setHandler(jobSnapshotQuery, () => run.s);
  setHandler(jobWebhookSignal, (hint) => receiveHint(run, hint));
  setHandler(extendJobTtlSignal, (request) => receiveTtlRequest(run, request));
  // The endpoint's search attribute is written with the job's id and status, once the submit has
  // answered: one upsert event instead of two.
  showCurrentDetails(run);

  try {
    run.sink = resolveSink(run);
    const result = await runJob(run);
    run.s.phase = 'completed';
    run.s.timings.endedAt = Date.now();
    const { output: _output, ...summary } = result;
    await emitOnEnd(parsed.value.options.emitOnEnd, 'job.completed', summary);
    return result;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      run.s.phase = 'cancelling';
      await CancellationScope.nonCancellable(() => cancelRemoteJob(run));
      run.s.phase = 'cancelled';
      run.s.timings.endedAt = Date.now();
      // A workflow cancelled before its submit answered is still found by its endpoint.
      syncSearchAttributes(run);
      throw error;
    }
    const failure = asJobFailure(run, error);
    run.s.phase = 'failed';
    run.s.failure = { type: failure.type ?? 'Error', message: failure.message };
    run.s.timings.endedAt = Date.now();
    syncSearchAttributes(run);
    await emitOnEnd(parsed.value.options.emitOnEnd, 'job.failed', failureData(failure));
    throw failure;
  }
}

// ---------------------------------------------------------------------------------------------
// The job's life

async function runJob(run: Run): Promise<JobResult> {
  const { options } = run.job;
  // A request by reference (the batch's child mode): its ttl is read first, since the deadline and
  // the lease need it.
  if (options.requestRef) {
    const { ttl } = await shortActivities.requestTtl({ requestRef: options.requestRef });
    if (ttl !== undefined) run.job = { ...run.job, ttlMs: ttl };
  }
  run.lease = leaseRequest(options.submitLease, options.mode, run.job.ttlMs);
  for (;;) {
    await submitFresh(run);
    const hops = run.s.hops?.length ?? 0;
    const result = await followJob(run);
    if (result) return result;
    const hop = run.s.hops?.[hops];
    if (hop) log.info('moving the job to the next endpoint of its route', hop);
    else log.warn('the job expired; submitting it afresh', { jobId: run.s.jobId });
  }
}

/** The item as it is now (each await may have moved it). */
const current = (run: Run): ItemState => run.item;

/**
 * Carries out the engine's steps for the job it owns, through its retries: its result, or
 * undefined when the engine queued the item for a fresh submit; a failure ends the workflow.
 */
async function followJob(run: Run): Promise<JobResult | undefined> {
  for (;;) {
    const item = current(run);
    switch (item.phase) {
      case 'running':
        await watchOnce(run);
        break;
      case 'retry-due':
        await retryWhenDue(run, item);
        break;
      case 'queued':
        return undefined;
      case 'ended':
        return endOf(run, item);
      default:
        throw new Error(`following a job from phase ${item.phase}`);
    }
  }
}

/** Waits for the job's terminal status (or its end by 404 or deadline) and steps the engine with it. */
async function watchOnce(run: Run): Promise<void> {
  startStream(run);
  const end = await watchUntilTerminal(run);
  await finishStream(run, end !== undefined);
  const step = advanceJob(run, watchEvent(run, end, Date.now()));
  // A job replaced at its deadline must not run on beside its replacement.
  if (step.commands.some((command) => command.kind === 'cancel')) await cancelQuietly(run);
}

/** How the watch ended, as the engine's event. */
function watchEvent(run: Run, end: WatchEnd | undefined, now: number): ItemEvent {
  const { s } = run;
  if (end === undefined)
    return {
      kind: 'finished',
      status: s.status as 'COMPLETED' | 'FAILED' | 'TIMED_OUT' | 'CANCELLED',
      now,
      ...(s.error === undefined ? {} : { error: s.error }),
    };
  switch (end.kind) {
    case 'withdrawn':
      return { kind: 'withdrawn', outcome: end.outcome, now };
    case 'gone':
      return {
        kind: 'gone',
        now,
        stopping: false,
        ...(end.lastAliveAt === undefined ? {} : { lastAliveAt: end.lastAliveAt }),
      };
    case 'deadline':
      return {
        kind: 'deadline',
        now,
        stopping: false,
        ...(end.status === undefined ? {} : { status: end.status }),
      };
  }
}

/** After the backoff, /retry while the job is still kept (the engine says whether it is). */
async function retryWhenDue(run: Run, item: RetryDueItem): Promise<void> {
  const { s } = run;
  s.phase = 'retry-backoff';
  // The retry this wait leads to, counted over the job's life.
  const retry = item.retries + 1;
  const wait = item.retryAt - Date.now();
  if (wait > 0) await sleep(wait, { summary: retryBackoffSummary(wait, retry) });
  let observation: JobObservation | undefined;
  while (observation === undefined) {
    const due = advanceJob(run, { kind: 'retry-time', now: Date.now(), stopping: false });
    if (!due.commands.some((command) => command.kind === 'retry')) return;
    s.phase = 'retrying';
    try {
      const jobId = s.jobId as string;
      observation = await retryActivities(jobDeadline(run).deadline - Date.now()).retryJob.executeWithOptions(
        { summary: retryJobSummary(jobId, retry) },
        [{ endpointId: s.endpointId, jobId }],
      );
    } catch (error) {
      const outcome = activityOutcome(error);
      if (outcome?.type === JOB_FAILURE.expired) {
        advanceJob(run, { kind: 'retry-gone', now: Date.now(), stopping: false });
        return;
      }
      // Tried until the ttl deadline: the next turn finds the job deleted with its ttl.
      if (outcome?.source !== 'timeout' && !outcome?.retryable) throw error;
    }
  }
  // The run just retried had its estimate; the next run's is added to it (the same final
  // status seen twice replaces, never adds).
  if (s.cost) run.earlierCost = s.cost;
  delete s.timings.runningAt;
  delete s.progress;
  advanceJob(run, { kind: 'retried', status: observation.status, now: Date.now() });
  applyObservation(run, observation);
}

/** The job's end: its result, or the typed failure that says how it ended. */
function endOf(run: Run, item: EndedItem): JobResult {
  const { s } = run;
  switch (item.outcome) {
    case 'completed':
      return resultOf(run);
    case 'cancelled':
      throw jobFailure(
        JOB_FAILURE.cancelled,
        `job ${s.jobId} on endpoint ${s.endpointId} was cancelled outside this workflow`,
        details(run),
      );
    case 'failed':
    case 'timedOut':
      throw finalFailure(run, item.outcome === 'failed' ? 'FAILED' : 'TIMED_OUT');
    default:
      throw jobFailure(
        JOB_FAILURE.expired,
        `job ${s.jobId} on endpoint ${s.endpointId} expired: ${item.reason}`,
        details(run, item.expired ? { expired: item.expired } : {}),
      );
  }
}
