/**
 * Submitting the job until the workflow owns one: /run (or /runsync in mode runsync), tried again
 * only while the activity says the request was certainly not acted on. A submit that may have
 * reached the service without an answer is uncertain: the workflow waits for the orphan's webhook
 * and adopts that job if /status confirms it; otherwise it fails with SubmitUncertain or submits
 * again, as the caller chose. Under a submit lease (contracts/submit-lease.ts) the job goes out
 * with a short ttl that is extended once its id is known; an uncertain submit then waits out the
 * lease and the webhook's retry window for the orphan, and submits again if none reported.
 *
 * What follows each answer is a step of the per-item engine (job-item.ts); this module carries
 * the steps out.
 */
import { CancellationScope, log, sleep } from '@temporalio/workflow';
import { runJobSyncSummary, submitAgainSummary, submitJobSummary } from '../../contracts/activity-summaries';
import { ASK_WAIT_MS } from '../../contracts/endpoint-gate';
import type { SubmitResult } from '../../contracts/job-types';
import type { EndedItem, ItemState, UncertainItem } from '../../engine/item-state';
import { submitFailureKind, type UncertainReport, uncertainSubmitLease } from '../../engine/job-submit-rules';
import { activityOutcome, JOB_FAILURE, jobFailure } from '../shared/job-failures';
import { leaseAttemptMs, submitActivities, workerActivities } from './job-activities';
import { advanceJob, routeEndpoint } from './job-item';
import { holdLease } from './job-lease';
import { adoptOrphan } from './job-orphan';
import { applyObservation, details, inlineLimit, pickFieldRule, type Run } from './job-run';

/**
 * Carries out the engine's steps until the workflow owns a job (submitted or adopted) whose lease,
 * if any, holds; or fails.
 */
export async function submitFresh(run: Run): Promise<void> {
  for (;;) {
    const item = current(run);
    switch (item.phase) {
      case 'running':
        if (!item.lease) return;
        await holdLease(run);
        break;
      case 'uncertain':
        await resolveUncertain(run, item);
        break;
      case 'ended':
        throw endedInSubmit(run, item);
      case 'queued':
        run.s.phase = 'submitting';
        if (item.notBefore !== undefined && item.notBefore > Date.now()) {
          const delay = item.notBefore - Date.now();
          await sleep(delay, { summary: submitAgainSummary(delay) });
        }
        await submitOnce(run);
        break;
      default:
        throw new Error(`a submit from phase ${item.phase}`);
    }
  }
}

/** The item as it is now (each await may have moved it). */
const current = (run: Run): ItemState => run.item;

/** One try of the submit: its answer (a job, a certain rejection or an uncertain end) is the engine's event. */
async function submitOnce(run: Run): Promise<void> {
  const sentAt = Date.now();
  try {
    const job = await CancellationScope.nonCancellable(() => sendSubmit(run));
    advanceJob(run, {
      kind: 'submitted',
      jobId: job.jobId,
      ttlMs: run.job.ttlMs,
      sentAt,
      answeredAt: Date.now(),
      ...(job.leaseTtlMs === undefined ? {} : { leaseTtlMs: job.leaseTtlMs }),
      ...(job.extended ? { extended: true } : {}),
    });
    applyObservation(run, job);
  } catch (error) {
    const outcome = activityOutcome(error);
    if (!outcome) throw error;
    const failure = submitFailureKind(outcome);
    if (failure.kind === 'made') {
      // Its lease, if any, is not known to be extended: the workflow's lease rules take it on.
      log.warn('a submit ended after its job was made: the job is taken from its last beat', {
        jobId: failure.jobId,
      });
      advanceJob(run, {
        kind: 'submitted',
        jobId: failure.jobId,
        ttlMs: run.job.ttlMs,
        sentAt,
        answeredAt: Date.now(),
        ...(failure.leaseTtlMs === undefined ? {} : { leaseTtlMs: failure.leaseTtlMs }),
      });
      // A job just made waits in the queue, or has moved on: the next look tells.
      applyObservation(run, { jobId: failure.jobId, status: 'IN_QUEUE', observedAt: Date.now() });
      return;
    }
    if (failure.kind === 'uncertain') {
      log.warn('a submit may have reached the service without an answer', { reason: outcome.message });
      run.uncertainReason = `${outcome.type}: ${outcome.message}`;
      await uncertain(run, failure.reported, sentAt);
      return;
    }
    const rejection = {
      retryable: failure.retryable,
      type: outcome.type,
      message: outcome.message,
      ...(typeof outcome.facts.retryAfterMs === 'number' ? { retryAfterMs: outcome.facts.retryAfterMs } : {}),
      ...(outcome.facts.noRoom === true ? { noRoom: true } : {}),
    };
    advanceJob(run, { kind: 'rejected', rejection, now: Date.now() });
    if (current(run).phase === 'ended') {
      throw jobFailure(
        outcome.type,
        `the submit to endpoint ${run.s.endpointId} failed: ${outcome.message}`,
        details(run, pickFieldRule(outcome.facts)),
        error as Error,
      );
    }
  }
}

/**
 * An uncertain submit: the lease it went out under (when only the workers' webhook setting can
 * tell, they are asked), then the engine's wait for its orphan.
 */
async function uncertain(run: Run, reported: UncertainReport, sentAt: number): Promise<void> {
  const answeredAt = Date.now();
  const lease = uncertainSubmitLease(reported, run.lease);
  let webhookArmed = reported.webhookArmed;
  let leaseTtlMs = lease.known ? lease.leaseTtlMs : undefined;
  if (!lease.known) {
    webhookArmed = await workerActivities.webhooksArmed();
    leaseTtlMs = webhookArmed ? lease.ifWebhooksArmed : undefined;
  }
  advanceJob(run, {
    kind: 'uncertain',
    sentAt,
    answeredAt,
    webhookArmed: webhookArmed !== false,
    ttlMs: run.job.ttlMs,
    ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
  });
}

/** Waits (a timer, no slot held) for the orphan to report itself: adopted, or the wait is over. */
async function resolveUncertain(run: Run, item: UncertainItem): Promise<void> {
  const adopted = await adoptOrphan(run, item);
  if (adopted) {
    log.info('adopted the job of an uncertain submit from its webhook', { jobId: adopted.jobId });
    advanceJob(run, {
      kind: 'orphan-reported',
      jobId: adopted.jobId,
      now: Date.now(),
      defaultTtlMs: run.job.ttlMs,
      ...(adopted.extendedTo === undefined ? {} : { extendedTo: adopted.extendedTo }),
    });
    applyObservation(run, adopted);
    return;
  }
  advanceJob(run, { kind: 'wait-over', stopping: false });
  if (current(run).phase === 'queued') {
    log.warn(
      item.lease
        ? 'no orphan reported within the lease and the webhook window: submitting again'
        : 'submitting again as the caller chose (onUncertainSubmit: resubmit): the job may run twice',
    );
  }
}

/** The item ended before the workflow owned a job: the typed failure that says why. */
function endedInSubmit(run: Run, item: EndedItem): Error {
  const endpoint = run.s.endpointId;
  if (item.outcome === 'uncertain') {
    return jobFailure(
      JOB_FAILURE.submitUncertain,
      `the submit to endpoint ${endpoint} was uncertain (${run.uncertainReason ?? 'no answer'}): ${item.reason}. ` +
        'Look for an orphan job on the endpoint before starting it again.',
      details(run),
    );
  }
  return jobFailure(
    JOB_FAILURE.expired,
    `job ${run.s.jobId} on endpoint ${endpoint} expired: ${item.reason}`,
    details(run, item.expired ? { expired: item.expired } : {}),
  );
}

/**
 * The submit activity: /runsync, or /run under the lease if there is one, to the endpoint the item
 * is on (on a route: with that endpoint's input overrides, and the move that brought it there).
 */
function sendSubmit(run: Run): Promise<SubmitResult> {
  const { options } = run.job;
  const { endpointId, inputOverrides } = routeEndpoint(run);
  // The activity reads a referenced request itself: it never passes through history.
  const request = run.job.request ? { request: run.job.request } : { requestRef: options.requestRef };
  if (options.mode === 'runsync') {
    return submitActivities(
      Math.max(options.submitTimeout, (options.runsyncWait ?? 90_000) + 60_000),
    ).runJobSync.executeWithOptions({ summary: runJobSyncSummary(endpointId) }, [
      {
        endpointId,
        ...request,
        ...(options.runsyncWait === undefined ? {} : { wait: options.runsyncWait }),
        ...inlineLimit(run),
      },
    ]);
  }
  const { priority, fairnessKey, fairnessWeight } = options;
  const scheduling = {
    ...(priority === undefined ? {} : { priority }),
    ...(fairnessKey === undefined ? {} : { fairnessKey }),
    ...(fairnessWeight === undefined ? {} : { fairnessWeight }),
  };
  // Its time includes a wait at the endpoint's gate for room in the /run window.
  return submitActivities(
    options.submitTimeout + ASK_WAIT_MS,
    run.lease ? leaseAttemptMs(run.lease.ttlMs) : undefined,
  ).submitJob.executeWithOptions(
    // This try's number among the submits that may make a job.
    { summary: submitJobSummary(endpointId, run.item.submissions + 1) },
    [
      {
        endpointId,
        ...request,
        ...inlineLimit(run),
        ...(run.lease ? { lease: run.lease } : {}),
        ...(inputOverrides ? { inputOverrides } : {}),
        ...(run.hop ? { hop: run.hop } : {}),
        ...(Object.keys(scheduling).length === 0 ? {} : { scheduling }),
      },
    ],
  );
}
