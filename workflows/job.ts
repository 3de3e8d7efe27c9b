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
 * 3. Waits by webhook and by polling at once. Polling is one long heartbeating activity that
 *    returns only when the status changes; a webhook is a hint, confirmed with /status, after which
 *    the poller is cancelled. History grows by status changes, never by running time.
 * 4. The ttl is a hard deadline from submission (queue time counts; /retry does not reset it): the
 *    workflow stops waiting just before it, looks once more, and calls the job expired if it is not
 *    finished. A JobExpired (ttl passed or results expired before a retry) leads to a fresh submit
 *    or a failure, as the caller chose.
 * 5. FAILED / TIMED_OUT -> /retry after the caller's backoff while results are kept (30 min after
 *    finishing; 1 min for /runsync jobs), up to retry.maxRetries; then JobFailed / JobTimedOut.
 * 6. Cancelling the workflow cancels the remote job in a non-cancellable scope, then the workflow
 *    ends as cancelled.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { JobStatusValue } from '../api/schemas/job';
import { addRunCosts, type CostEstimate } from '../contracts/cost';
import { jobCurrentDetails } from '../contracts/current-details';
import { type JobWorkflowInput, type ParsedJobInput, parseJobWorkflowInput } from '../contracts/job-input';
import type { JobResult, JobSnapshot } from '../contracts/job-snapshot';
import type { JobObservation, StreamSink, SubmitResult, WaitResult } from '../contracts/job-types';
import { JOB_UNCHANGED } from '../contracts/job-wait-policy';
import {
  extensionTtl,
  type LeaseRequest,
  leaseEndsBy,
  leaseRequest,
  orphanWaitUntil,
  unreportedLeaseTtl,
} from '../contracts/submit-lease';
import { extendJobTtlSignal, jobSnapshotQuery, jobWebhookSignal } from './definitions';
import { emitOnEnd, failureData } from './emit-on-end';
import {
  leaseActivities,
  leaseAttemptMs,
  shortActivities,
  streamActivities,
  submitActivities,
  waitActivities,
  workerActivities,
} from './job-activities';
import { activityOutcome, JOB_FAILURE, type JobFailureDetails, jobFailure } from './job-failures';
import {
  afterTerminal,
  goneBeforeRetry,
  lastLookMarginMs,
  onExpired,
  onUncertainSubmit,
  resubmitAfterLease,
  resultsExpireAt,
  type SubmitKind,
  submitRetryDelayMs,
  ttlDeadline,
  whyGone,
} from './job-rules';
import { endpointIdKey, jobIdKey, jobStatusKey } from './search-attributes';

export type { JobWorkflowInput } from '../contracts/job-input';
export type { JobResult, JobSnapshot } from '../contracts/job-snapshot';

const TERMINAL: readonly string[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'];
/** How long a stream may take to drain after its job has finished. */
const STREAM_FINISH_MS = 2 * 60_000;
/** Bounds on what signals can make the workflow keep. */
const MAX_PENDING_HINTS = 50;
const MAX_STRAY_IDS = 20;

type Hint = { jobId: string; status: string };
type Expired = { kind: 'expired'; why: 'ttl' | 'results'; message: string };

interface Run {
  job: ParsedJobInput;
  s: JobSnapshot;
  /** The estimate of the runs before the last /retry, added to each later run's (s.cost). */
  earlierCost?: CostEstimate;
  /** Webhook hints not looked at yet, oldest first. */
  hints: Hint[];
  /** ttl values asked for by extendJobTtlSignal, not applied yet. */
  ttlRequests: number[];
  /** The lease submits ask for (contracts/submit-lease.ts); none before the 'submit-lease' patch. */
  lease?: LeaseRequest;
  /** Workflow time when the current job was submitted (before the call: the earliest it can be). */
  submittedAt: number;
  deadline: number;
  resultsExpireAt: number;
  /** The COMPLETED observation, whose output the result carries. */
  completed?: JobObservation;
  stream?: { scope: CancellationScope; done: boolean };
  sink?: StreamSink;
}

const isTerminal = (status: string | undefined): boolean => status !== undefined && TERMINAL.includes(status);

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
  syncSearchAttributes(run);

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
      throw error;
    }
    const failure = asJobFailure(run, error);
    run.s.phase = 'failed';
    run.s.failure = { type: failure.type ?? 'Error', message: failure.message };
    run.s.timings.endedAt = Date.now();
    await emitOnEnd(parsed.value.options.emitOnEnd, 'job.failed', failureData(failure));
    throw failure;
  }
}

function emptyDetails(endpointId: string): JobFailureDetails {
  return { endpointId, jobIds: [], attempts: 0, retries: 0, submissions: 0, uncertainSubmits: 0 };
}

function newRun(job: ParsedJobInput, startedAt: number): Run {
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
      timings: { startedAt },
      ...(job.options.stream ? { stream: { chunks: 0 } } : {}),
    },
    hints: [],
    ttlRequests: [],
    submittedAt: startedAt,
    deadline: Number.POSITIVE_INFINITY,
    resultsExpireAt: Number.POSITIVE_INFINITY,
  };
}

function details(run: Run, extra: Partial<JobFailureDetails> = {}): JobFailureDetails {
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
    ...extra,
  };
}

/** The lease's counts, only when something happened (older results and details have none). */
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

// ---------------------------------------------------------------------------------------------
// Signals

function receiveHint(run: Run, hint: unknown): void {
  const { jobId, status } = (hint ?? {}) as { jobId?: unknown; status?: unknown };
  if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 1024) return;
  run.s.webhooks += 1;
  // Duplicates of a hint still waiting add nothing.
  if (run.hints.some((h) => h.jobId === jobId && h.status === status)) return;
  run.hints.push({ jobId, status: typeof status === 'string' ? status : '' });
  if (run.hints.length > MAX_PENDING_HINTS) run.hints.shift();
}

function receiveTtlRequest(run: Run, request: unknown): void {
  const ttl = (request as { ttl?: unknown } | undefined)?.ttl;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 10_000 || ttl > 7 * 86_400_000) {
    run.s.ttlExtensionError = 'ttl must be an integer between 10000 and 604800000 ms';
    return;
  }
  run.ttlRequests.push(ttl);
}

function noteStray(run: Run, jobId: string): void {
  const { s } = run;
  if (s.jobIds.includes(jobId) || s.strayJobIds.includes(jobId)) return;
  log.warn('a webhook named a job this workflow does not follow: an orphan of an uncertain submit?', {
    jobId,
  });
  if (s.strayJobIds.length < MAX_STRAY_IDS) s.strayJobIds.push(jobId);
}

// ---------------------------------------------------------------------------------------------
// State

function syncSearchAttributes(run: Run): void {
  // The UI's current details change at the same moments (they cost no history event).
  setCurrentDetails(jobCurrentDetails(run.s));
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

function applyObservation(run: Run, observation: JobObservation): void {
  const { s } = run;
  const now = Date.now();
  s.status = observation.status;
  if (observation.delayTime !== undefined) s.delayTime = observation.delayTime;
  if (observation.executionTime !== undefined) s.executionTime = observation.executionTime;
  if (observation.cost !== undefined) s.cost = addRunCosts(run.earlierCost, observation.cost);
  if (observation.progress !== undefined) s.progress = observation.progress;
  if (observation.error !== undefined) s.error = observation.error;
  if (observation.status === 'IN_PROGRESS' && s.timings.runningAt === undefined) s.timings.runningAt = now;
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

const submitKind = (run: Run): SubmitKind => (run.job.options.mode === 'runsync' ? 'runsync' : 'run');

function setDeadline(run: Run, ttlMs: number): void {
  run.deadline = ttlDeadline(run.submittedAt, ttlMs);
  run.s.timings.ttlDeadline = run.deadline;
}

/** `leaseTtlMs`: the job went out under a lease and its ttl is that until it is extended. */
function ownJob(
  run: Run,
  observation: JobObservation,
  submittedAt: number,
  adopted: boolean,
  leaseTtlMs?: number,
): void {
  const { s } = run;
  s.jobId = observation.jobId;
  if (!s.jobIds.includes(observation.jobId)) s.jobIds.push(observation.jobId);
  s.adopted = adopted;
  s.attempts += 1;
  s.timings.submittedAt = submittedAt;
  delete s.timings.runningAt;
  delete s.progress;
  run.submittedAt = submittedAt;
  if (leaseTtlMs === undefined) delete s.leaseTtlMs;
  else s.leaseTtlMs = leaseTtlMs;
  setDeadline(run, leaseTtlMs ?? run.job.ttlMs);
  applyObservation(run, observation);
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
    const end = await followJob(run);
    if (end.kind === 'completed') return end.result;
    if (!isTerminal(run.s.status)) await cancelQuietly(run);
    if (onExpired(options, run.s.submissions) === 'resubmit') {
      log.warn('the job expired; submitting it afresh', { jobId: run.s.jobId, why: end.why });
      continue;
    }
    throw jobFailure(JOB_FAILURE.expired, end.message, details(run, { expired: end.why }));
  }
}

// --- submission

type SubmitOutcome =
  | { kind: 'submitted'; job: SubmitResult }
  /**
   * webhookArmed false: the request named no webhook, so no orphan will report itself.
   * leaseTtlMs: the request went out under that lease (unknown when the activity never reported).
   */
  | { kind: 'uncertain'; reason: string; webhookArmed?: boolean; leaseTtlMs?: number };

async function submitFresh(run: Run): Promise<void> {
  const { options } = run.job;
  for (;;) {
    run.s.phase = 'submitting';
    const sentAt = Date.now();
    const outcome = await submitOnce(run);
    const answeredAt = Date.now();
    if (outcome.kind === 'submitted') {
      const { leaseTtlMs, extended } = outcome.job;
      ownJob(run, outcome.job, sentAt, false, leaseTtlMs);
      if (leaseTtlMs === undefined) return;
      // The submit extended it at once (an older worker's submit does not: then the workflow does).
      if (extended) return leaseExtended(run, run.job.ttlMs);
      if (await extendLease(run, leaseTtlMs, answeredAt)) return;
      leaseLapsed(run);
      continue;
    }
    run.s.uncertainSubmits += 1;
    log.warn('a submit may have reached the service without an answer', { reason: outcome.reason });
    const leaseTtlMs = await uncertainLease(run, outcome);
    if (leaseTtlMs !== undefined) {
      // Under a lease: wait (a timer, no slot held) for the orphan to report itself, else send again.
      const armed = outcome.webhookArmed !== false;
      const lease = { ttlMs: leaseTtlMs, endsBy: leaseEndsBy(answeredAt, leaseTtlMs) };
      if (await adoptOrphan(run, sentAt, orphanWaitUntil(answeredAt, leaseTtlMs, armed), lease)) {
        // The look that adopted it extended it too (workflows from before that extend it now).
        if (run.s.leaseTtlMs === undefined) return;
        if (await extendLease(run, leaseTtlMs, answeredAt)) return;
        leaseLapsed(run);
        continue;
      }
      if (resubmitAfterLease(options, run.s.submissions)) {
        run.s.resubmittedAfterLease += 1;
        log.info('no orphan reported within the lease and the webhook window: submitting again');
        continue;
      }
      throw jobFailure(
        JOB_FAILURE.submitUncertain,
        `the submit to endpoint ${options.endpointId} was uncertain (${outcome.reason}) and ` +
          `maxSubmissions (${options.maxSubmissions}) and maxLeaseResubmits (${options.maxLeaseResubmits}) ` +
          'are spent; no orphan of it can still run ' +
          '(its lease has run out).',
        details(run),
      );
    }
    const until = Date.now() + (outcome.webhookArmed !== false ? options.uncertainSubmitWait : 0);
    if (await adoptOrphan(run, sentAt, until)) return;
    const decision = onUncertainSubmit(options, run.s.submissions);
    if (decision.choice === 'resubmit') {
      log.warn('submitting again as the caller chose (onUncertainSubmit: resubmit): the job may run twice');
      continue;
    }
    throw jobFailure(
      JOB_FAILURE.submitUncertain,
      `the submit to endpoint ${options.endpointId} may have created a job whose id never arrived ` +
        `(${outcome.reason}); ${decision.why}. Look for an orphan job on the endpoint before starting it again.`,
      details(run),
    );
  }
}

/**
 * One submission, retried here (not by Temporal) only while the activity says the request was
 * certainly not acted on. Runs in a non-cancellable scope: a cancellation mid-submit waits for the
 * job id, so the job can then be cancelled instead of left running unseen.
 */
async function submitOnce(run: Run): Promise<SubmitOutcome> {
  const { options } = run.job;
  const inline =
    options.outputInlineMaxBytes === undefined ? {} : { inlineMaxBytes: options.outputInlineMaxBytes };
  // The activity reads a referenced request itself: it never passes through history.
  const request = run.job.request ? { request: run.job.request } : { requestRef: options.requestRef };
  for (let attempt = 1; ; attempt++) {
    try {
      const job = await CancellationScope.nonCancellable(() =>
        options.mode === 'runsync'
          ? submitActivities(
              Math.max(options.submitTimeout, (options.runsyncWait ?? 90_000) + 60_000),
            ).runJobSync({
              endpointId: options.endpointId,
              ...request,
              ...(options.runsyncWait === undefined ? {} : { wait: options.runsyncWait }),
              ...inline,
            })
          : submitActivities(
              options.submitTimeout,
              run.lease ? leaseAttemptMs(run.lease.ttlMs) : undefined,
            ).submitJob({
              endpointId: options.endpointId,
              ...request,
              ...inline,
              ...(run.lease ? { lease: run.lease } : {}),
            }),
      );
      run.s.submissions += 1;
      return { kind: 'submitted', job };
    } catch (error) {
      const outcome = activityOutcome(error);
      if (!outcome) throw error;
      // Only the activity's own word makes a failure certain; a timeout, a cancellation by a
      // shutting-down worker or SubmitUncertain may each hide a job that exists.
      if (outcome.source !== 'application' || outcome.type === JOB_FAILURE.submitUncertain) {
        run.s.submissions += 1;
        const armed = outcome.facts.webhookArmed;
        const lease = outcome.facts.leaseTtlMs;
        return {
          kind: 'uncertain',
          reason: `${outcome.type}: ${outcome.message}`,
          ...(typeof armed === 'boolean' ? { webhookArmed: armed } : {}),
          ...(typeof lease === 'number' ? { leaseTtlMs: lease } : {}),
        };
      }
      const retryAfter = outcome.facts.retryAfterMs;
      const delay = submitRetryDelayMs(
        {
          retryable: outcome.retryable,
          ...(typeof retryAfter === 'number' ? { retryAfterMs: retryAfter } : {}),
        },
        attempt,
      );
      if (delay === undefined) {
        throw jobFailure(
          outcome.type,
          `the submit to endpoint ${options.endpointId} failed: ${outcome.message}`,
          details(run, pickFieldRule(outcome.facts)),
          error as Error,
        );
      }
      await sleep(delay);
    }
  }
}

function pickFieldRule(facts: Record<string, unknown>): Partial<JobFailureDetails> {
  return typeof facts.field === 'string' && typeof facts.rule === 'string'
    ? { field: facts.field, rule: facts.rule }
    : {};
}

/**
 * The lease an uncertain submit went out under. The activity says so; one that never reported (a
 * worker that died mid-submit) leaves it unknown unless the lease applies with or without a
 * webhook. A lease that applies only with a webhook ('auto') is then asked of the workers: they
 * share their webhook setting, so the one that sent the request armed its webhook (and with it
 * the lease) exactly when this one does. Before 'lease-unreported-submit' such a submit fell to
 * onUncertainSubmit.
 */
async function uncertainLease(
  run: Run,
  outcome: Extract<SubmitOutcome, { kind: 'uncertain' }>,
): Promise<number | undefined> {
  if (outcome.leaseTtlMs !== undefined) return outcome.leaseTtlMs;
  if (outcome.webhookArmed !== undefined) return undefined;
  const known = unreportedLeaseTtl(run.lease);
  if (known !== undefined || !run.lease) return known;
  const armed = await workerActivities.webhooksArmed();
  outcome.webhookArmed = armed;
  return armed ? run.lease.ttlMs : undefined;
}

/**
 * Under a lease: /status?ttl= sets the caller's ttl (counted from submission, as the service counts
 * it), tried until the lease runs out. False: the job is gone (deleted at its lease) or may be by
 * the time anything could be tried again.
 */
async function extendLease(run: Run, leaseTtlMs: number, answeredAt: number): Promise<boolean> {
  const { s } = run;
  const ttl = extensionTtl(leaseTtlMs, run.job.ttlMs);
  // A completed job's output is already here; its ttl no longer matters.
  if (ttl === undefined || s.status === 'COMPLETED') return true;
  const inline =
    run.job.options.outputInlineMaxBytes === undefined
      ? {}
      : { inlineMaxBytes: run.job.options.outputInlineMaxBytes };
  const ref = { endpointId: s.endpointId, jobId: s.jobId as string };
  // The status it answers with is left to the watcher: a stream must start before the job is seen
  // finished, and a short job may finish before this answer comes.
  const extended = () => {
    leaseExtended(run, ttl);
    return true;
  };
  try {
    const until = leaseEndsBy(answeredAt, leaseTtlMs);
    await leaseActivities(until - Date.now(), leaseAttemptMs(leaseTtlMs)).fetchJobStatus({
      ...ref,
      ttl,
      ...inline,
    });
    return extended();
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    const outcome = activityOutcome(error);
    log.warn('the lease could not be extended before it ran out', {
      jobId: s.jobId,
      error: outcome?.message ?? String(error),
    });
    // A 404: the job is gone.
    if (outcome?.type === JOB_FAILURE.expired) return false;
  }
  // Every try went unanswered, but one may have reached the service and only its answer was lost:
  // then the job lives on with the caller's ttl. Once the lease is over, a look tells which (alive:
  // it was extended; 404: deleted). It is retried, during an outage until even the caller's ttl
  // would have ended, because sending again while the job may live could make two.
  const leaseEnd = leaseEndsBy(answeredAt, leaseTtlMs);
  if (leaseEnd > Date.now()) await sleep(leaseEnd - Date.now());
  try {
    const until = leaseEndsBy(answeredAt, ttl);
    await leaseActivities(until - Date.now()).fetchJobStatus({ ...ref, ...inline });
    return extended();
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    return false;
  }
}

/** The job now lives under the caller's ttl, counted from submission. */
function leaseExtended(run: Run, ttl: number): void {
  delete run.s.leaseTtlMs;
  setDeadline(run, ttl);
}

/** The job's lease ran out unextended: the service deleted it, so submitting again is safe. */
function leaseLapsed(run: Run): void {
  const { options } = run.job;
  run.s.leaseLapses += 1;
  if (run.s.submissions < options.maxSubmissions) return;
  throw jobFailure(
    JOB_FAILURE.expired,
    `job ${run.s.jobId} on endpoint ${run.s.endpointId} expired: its submit lease ran out before it ` +
      `could be extended, and maxSubmissions (${options.maxSubmissions}) is reached`,
    details(run, { expired: 'ttl' }),
  );
}

/**
 * After an uncertain submit: a webhook naming a job this workflow never saw is that job. Waits
 * until `until` (a timer: no worker slot is held). `lease`: the orphan went out under one, so the
 * look must come before the service deletes it (with its output) at the lease's end: its tries are
 * short, so that a worker dying mid-look does not use up the lease.
 */
async function adoptOrphan(
  run: Run,
  sentAt: number,
  until: number,
  lease?: { ttlMs: number; endsBy: number },
): Promise<boolean> {
  run.s.phase = 'adopting';
  const adoptable = () => run.hints.some((hint) => !run.s.jobIds.includes(hint.jobId));
  for (;;) {
    const index = run.hints.findIndex((hint) => !run.s.jobIds.includes(hint.jobId));
    if (index >= 0) {
      const [hint] = run.hints.splice(index, 1);
      const observation: (JobObservation & { extendedTo?: number }) | undefined = hint
        ? lease
          ? await lookWithinLease(run, hint.jobId, lease)
          : await lookQuietly(run, hint.jobId)
        : undefined;
      if (observation) {
        log.info('adopted the job of an uncertain submit from its webhook', { jobId: observation.jobId });
        ownJob(run, observation, sentAt, true, lease?.ttlMs);
        if (observation.extendedTo !== undefined) leaseExtended(run, observation.extendedTo);
        run.s.uncertainAdopted += 1;
        return true;
      }
      continue;
    }
    const left = until - Date.now();
    if (left <= 0) return false;
    await condition(adoptable, left);
  }
}

/**
 * One /status, tried in short tries until the lease ends; undefined once it has (or on a 404). The
 * look also extends the orphan to the caller's ttl ('lease-adopt-extends'; before it, the extension
 * was a call of its own after the adoption): `extendedTo` says so.
 */
async function lookWithinLease(
  run: Run,
  jobId: string,
  lease: { ttlMs: number; endsBy: number },
): Promise<(JobObservation & { extendedTo?: number }) | undefined> {
  const left = lease.endsBy - Date.now();
  if (left <= 0) return undefined;
  const ttl = run.job.ttlMs;
  try {
    const observation = await leaseActivities(left, leaseAttemptMs(lease.ttlMs)).fetchJobStatus({
      endpointId: run.s.endpointId,
      jobId,
      ...(ttl !== undefined && extensionTtl(lease.ttlMs, ttl) !== undefined ? { ttl } : {}),
      ...(run.job.options.outputInlineMaxBytes === undefined
        ? {}
        : { inlineMaxBytes: run.job.options.outputInlineMaxBytes }),
    });
    return ttl === undefined ? observation : { ...observation, extendedTo: ttl };
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    log.warn('an orphan could not be looked at within its lease', {
      jobId,
      error: activityOutcome(error)?.message ?? String(error),
    });
    return undefined;
  }
}

// --- following one job (and its retries)

type FollowEnd = { kind: 'completed'; result: JobResult } | Expired;

async function followJob(run: Run): Promise<FollowEnd> {
  const { options } = run.job;
  for (;;) {
    startStream(run);
    const end = await watchUntilTerminal(run);
    await finishStream(run, end !== undefined);
    if (end) return end;

    const { s } = run;
    if (s.status === 'COMPLETED') return { kind: 'completed', result: resultOf(run) };
    if (s.status === 'CANCELLED') {
      throw jobFailure(
        JOB_FAILURE.cancelled,
        `job ${s.jobId} on endpoint ${s.endpointId} was cancelled outside this workflow`,
        details(run),
      );
    }
    const decision = afterTerminal(s.status as 'FAILED' | 'TIMED_OUT', options.retry, s.retries);
    if (decision.kind === 'give-up') throw finalFailure(run, decision.status);
    if (decision.kind !== 'retry') throw new Error(`unexpected decision ${decision.kind}`);

    s.phase = 'retry-backoff';
    if (decision.backoffMs > 0) await sleep(decision.backoffMs);
    const gone = goneBeforeRetry(Date.now(), run.deadline, run.resultsExpireAt);
    if (gone === 'ttl') return expired(run, 'ttl', 'its ttl passed during the retry backoff');
    if (gone === 'results') return expired(run, 'results', 'its results expired during the retry backoff');

    s.phase = 'retrying';
    let observation: JobObservation;
    try {
      observation = await shortActivities.retryJob({ endpointId: s.endpointId, jobId: s.jobId as string });
    } catch (error) {
      if (activityOutcome(error)?.type === JOB_FAILURE.expired) {
        return expired(run, 'results', 'the service no longer knows it (404 on /retry)');
      }
      throw error;
    }
    s.retries += 1;
    s.attempts += 1;
    // The run just retried had its estimate; the next run's is added to it (the same final
    // status seen twice replaces, never adds).
    if (s.cost) run.earlierCost = s.cost;
    delete s.timings.runningAt;
    delete s.progress;
    applyObservation(run, observation);
  }
}

function expired(run: Run, why: Expired['why'], what: string): Expired {
  return {
    kind: 'expired',
    why,
    message: `job ${run.s.jobId} on endpoint ${run.s.endpointId} expired: ${what}`,
  };
}

function finalFailure(run: Run, status: 'FAILED' | 'TIMED_OUT'): ApplicationFailure {
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

function resultOf(run: Run): JobResult {
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
    ...(s.stream ? { stream: { ...s.stream } } : {}),
  };
}

// --- waiting: webhook and polling at once

/** Until the job is finished (undefined) or known to be gone. */
async function watchUntilTerminal(run: Run): Promise<Expired | undefined> {
  while (!isTerminal(run.s.status)) {
    run.s.phase = 'waiting';
    // Stop looking a little before the service deletes the job: one last look must still find it.
    const returnBy = run.deadline - lastLookMarginMs(run.job.ttlMs);
    if (Date.now() >= returnBy) return lastLook(run);
    const segment = await watchSegment(run, returnBy);
    if (segment === 'deadline') return lastLook(run);
    if (typeof segment === 'object') return segment;
  }
  return undefined;
}

/** At the deadline: a job that is not finished now will be deleted by the service. */
async function lastLook(run: Run): Promise<Expired | undefined> {
  const observation = await lookQuietly(run, run.s.jobId as string);
  if (observation) {
    applyObservation(run, observation);
    if (isTerminal(observation.status)) return undefined;
    return expired(run, 'ttl', `its ttl deadline came while it was ${observation.status}`);
  }
  return expired(run, 'ttl', 'its ttl passed (the service answers 404)');
}

type Segment = 'changed' | 'deadline' | 'restart' | Expired;

/**
 * One poller activity, raced against webhook hints, ttl requests and the deadline. Whatever comes
 * first ends the segment; a poller still running is cancelled on the way out.
 */
async function watchSegment(run: Run, returnBy: number): Promise<Segment> {
  const { s } = run;
  const jobId = s.jobId as string;
  const scope = new CancellationScope();
  // A box, not a variable: the compiler does not see assignments made in callbacks.
  const poll: { settled?: { ok: true; value: WaitResult } | { ok: false; error: unknown } } = {};
  let pollerAtDeadline = false;
  const checked = new Set<string>();
  scope
    .run(() =>
      waitActivities(returnBy - Date.now()).waitForJobChange({
        endpointId: s.endpointId,
        jobId,
        knownStatus: s.status as JobStatusValue,
        returnBy,
        polling: run.job.polling,
        ...(run.job.options.outputInlineMaxBytes === undefined
          ? {}
          : { inlineMaxBytes: run.job.options.outputInlineMaxBytes }),
      }),
    )
    .then(
      (value) => {
        poll.settled = { ok: true, value };
      },
      (error: unknown) => {
        poll.settled = { ok: false, error };
      },
    );
  try {
    for (;;) {
      const woken = await condition(
        () =>
          (poll.settled !== undefined && !pollerAtDeadline) ||
          run.hints.length > 0 ||
          run.ttlRequests.length > 0,
        Math.max(returnBy - Date.now(), 1),
      );
      const settled = poll.settled;
      if (settled?.ok && !pollerAtDeadline) {
        applyObservation(run, settled.value);
        if (settled.value.reason === 'changed') return 'changed';
        // The worker's clock reached the deadline before the workflow's: wait out the rest with the
        // timer (webhooks still count) rather than start another poller for a few seconds.
        pollerAtDeadline = true;
      }
      if (settled && !settled.ok) return pollerFailed(run, settled.error);
      if (!woken) return 'deadline';

      const ttl = run.ttlRequests.shift();
      if (ttl !== undefined) {
        await extendTtl(run, ttl);
        return 'restart';
      }
      const hint = run.hints.shift();
      if (!hint) continue;
      if (hint.jobId !== jobId) {
        noteStray(run, hint.jobId);
        continue;
      }
      // A claim already checked against this status is not checked again (the service retries webhooks).
      const claim = `${hint.status}@${s.status}`;
      if (hint.status === s.status || checked.has(claim)) continue;
      checked.add(claim);
      const observation = await lookQuietly(run, jobId);
      if (observation && observation.status !== s.status) {
        applyObservation(run, observation);
        return 'changed';
      }
    }
  } finally {
    if (!poll.settled) scope.cancel();
  }
}

function pollerFailed(run: Run, error: unknown): Segment {
  if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
  const outcome = activityOutcome(error);
  if (outcome?.type === JOB_FAILURE.expired) {
    // The service deletes a job at its ttl, or a retention period after it finished. Before our
    // ttl estimate, and with no sight of the job for a whole retention period (a long outage,
    // say), the results expired unseen; otherwise the service's clock reached the ttl first.
    const lastAliveAt = outcome.facts.lastAliveAt;
    const why = whyGone(
      Date.now(),
      run.deadline,
      run.job.ttlMs,
      typeof lastAliveAt === 'number' ? lastAliveAt : undefined,
      submitKind(run),
    );
    return why === 'ttl'
      ? expired(run, 'ttl', 'its ttl passed (the service answers 404)')
      : expired(
          run,
          'results',
          'the service no longer knows it (404): it finished unseen and its results expired',
        );
  }
  // Out of time (the schedule-to-close timeout is the deadline) is the deadline; so is a last
  // "unchanged" look that the server could not retry within it.
  if (outcome?.source === 'timeout' || outcome?.type === JOB_UNCHANGED) return 'deadline';
  // Cancelled by a worker shutting down, not by us: poll again.
  if (outcome?.source === 'cancelled') return 'restart';
  throw error;
}

/** /status?ttl=: the service counts the new ttl from submission, and so does the deadline. */
async function extendTtl(run: Run, ttl: number): Promise<void> {
  try {
    const observation = await shortActivities.fetchJobStatus({
      endpointId: run.s.endpointId,
      jobId: run.s.jobId as string,
      ttl,
    });
    run.job = { ...run.job, ttlMs: ttl };
    setDeadline(run, ttl);
    delete run.s.ttlExtensionError;
    applyObservation(run, observation);
  } catch (error) {
    if (isCancellation(error)) throw error;
    run.s.ttlExtensionError = activityOutcome(error)?.message ?? String(error);
  }
}

/** One /status; undefined when it could not be read (404 included). Cancellation still propagates. */
async function lookQuietly(run: Run, jobId: string): Promise<JobObservation | undefined> {
  try {
    return await shortActivities.fetchJobStatus({
      endpointId: run.s.endpointId,
      jobId,
      ...(run.job.options.outputInlineMaxBytes === undefined
        ? {}
        : { inlineMaxBytes: run.job.options.outputInlineMaxBytes }),
    });
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn('a status check failed', { jobId, error: activityOutcome(error)?.message ?? String(error) });
    return undefined;
  }
}

// --- streaming

function resolveSink(run: Run): StreamSink | undefined {
  const sink = run.job.options.stream?.sink;
  if (sink?.kind !== 'signal' || sink.workflowId) return sink;
  const parent = workflowInfo().parent;
  if (!parent) {
    throw jobFailure(
      JOB_FAILURE.badRequest,
      'a signal stream sink without workflowId needs a parent workflow to signal',
      details(run, { field: 'stream.sink.workflowId', rule: 'is required without a parent workflow' }),
    );
  }
  return { kind: 'signal', workflowId: parent.workflowId, runId: parent.runId };
}

function startStream(run: Run): void {
  if (!run.sink || !run.s.stream || isTerminal(run.s.status)) return;
  const scope = new CancellationScope();
  const stream = { scope, done: false };
  run.stream = stream;
  const counts = run.s.stream;
  scope
    .run(() =>
      streamActivities(run.job.polling, run.deadline - Date.now()).streamJob({
        endpointId: run.s.endpointId,
        jobId: run.s.jobId as string,
        sink: run.sink as StreamSink,
        firstIndex: counts.chunks,
        polling: run.job.polling,
      }),
    )
    .then(
      (result) => {
        counts.chunks += result.chunks;
      },
      (error: unknown) => {
        if (!isCancellation(error)) counts.error = activityOutcome(error)?.message ?? String(error);
      },
    )
    .finally(() => {
      stream.done = true;
    });
}

/** The stream ends on its own once the job has finished; it gets a while to drain, then it is cut. */
async function finishStream(run: Run, jobGone: boolean): Promise<void> {
  const stream = run.stream;
  if (!stream) return;
  run.stream = undefined;
  if (!jobGone && (await condition(() => stream.done, STREAM_FINISH_MS))) return;
  if (!stream.done) {
    stream.scope.cancel();
    if (!jobGone && run.s.stream)
      run.s.stream.error = 'the stream did not end within 2 minutes of the job finishing';
  }
}

// --- cancellation and failures

async function cancelRemoteJob(run: Run): Promise<void> {
  const { s } = run;
  if (!s.jobId || isTerminal(s.status)) {
    s.remoteCancel = { sent: false };
    if (!s.jobId && s.uncertainSubmits > 0)
      log.warn('cancelled with no job id after an uncertain submit; an orphan may run');
    return;
  }
  try {
    const answer = await shortActivities.cancelJob({ endpointId: s.endpointId, jobId: s.jobId });
    s.remoteCancel = { sent: true, ...(answer.status ? { status: answer.status } : { status: 'GONE' }) };
    if (answer.status === 'CANCELLED') {
      s.status = 'CANCELLED';
      syncSearchAttributes(run);
    }
  } catch (error) {
    const message = activityOutcome(error)?.message ?? String(error);
    s.remoteCancel = { sent: true, error: message };
    log.error('cancelling the remote job failed', { jobId: s.jobId, error: message });
  }
}

/** Before a fresh submit replaces an expired job: make sure the old one cannot still run. */
async function cancelQuietly(run: Run): Promise<void> {
  const { s } = run;
  if (!s.jobId) return;
  try {
    await shortActivities.cancelJob({ endpointId: s.endpointId, jobId: s.jobId });
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn('cancelling the expired job failed', { jobId: s.jobId });
  }
}

/** Every failure leaves the workflow as a typed, non-retryable ApplicationFailure. */
function asJobFailure(run: Run, error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const outcome = activityOutcome(error);
  if (outcome) {
    const type =
      outcome.source === 'application'
        ? outcome.type
        : outcome.type === 'ActivityTimeout'
          ? 'ActivityTimeout'
          : 'Error';
    return jobFailure(type, outcome.message, details(run, pickFieldRule(outcome.facts)), error as Error);
  }
  // A bug: failing the workflow task (not the workflow) lets a fixed worker carry on.
  throw error;
}
