/**
 * Submitting the job until the workflow owns one: once (/run, or /runsync in mode runsync), retried
 * only while the activity says the request was certainly not acted on. A submit that may have
 * reached the service without an answer is uncertain: the workflow waits for the orphan's webhook
 * and adopts that job if /status confirms it; otherwise it fails with SubmitUncertain or submits
 * again, as the caller chose. Under a submit lease (contracts/submit-lease.ts) the job goes out
 * with a short ttl that is extended once its id is known; an uncertain submit then waits out the
 * lease and the webhook's retry window for the orphan, and submits again if none reported.
 *
 * Every decision is one call into a pure function (job-rules.ts, job-submit-rules.ts); this module
 * carries the decisions out.
 */
import { CancellationScope, log, sleep } from '@temporalio/workflow';
import type { SubmitResult } from '../contracts/job-types';
import { leaseAttemptMs, submitActivities, workerActivities } from './job-activities';
import { activityOutcome, JOB_FAILURE, jobFailure } from './job-failures';
import { holdLease } from './job-lease';
import { adoptOrphan } from './job-orphan';
import { onUncertainSubmit, resubmitAfterLease } from './job-rules';
import { details, inlineLimit, leaseExtended, ownJob, pickFieldRule, type Run } from './job-run';
import {
  afterSubmitFailure,
  leaseAfterSubmit,
  orphanWait,
  type UncertainReport,
  uncertainSubmitLease,
} from './job-submit-rules';

type SubmitOutcome =
  | { kind: 'submitted'; job: SubmitResult }
  /** `leaseTtlMs` unknown when the activity never reported; `webhookArmed` learnt later if need be. */
  | ({ kind: 'uncertain'; reason: string } & UncertainReport);
type Uncertain = Extract<SubmitOutcome, { kind: 'uncertain' }>;

/** Submits until the workflow owns a job (submitted or adopted), or fails. */
export async function submitFresh(run: Run): Promise<void> {
  for (;;) {
    run.s.phase = 'submitting';
    const sentAt = Date.now();
    const outcome = await submitOnce(run);
    const answeredAt = Date.now();
    const owned =
      outcome.kind === 'submitted'
        ? await keepSubmitted(run, outcome.job, sentAt, answeredAt)
        : await resolveUncertain(run, outcome, sentAt, answeredAt);
    if (owned) return;
  }
}

/** True: the job is this workflow's; false: its lease lapsed and it is to be submitted again. */
async function keepSubmitted(
  run: Run,
  job: SubmitResult,
  sentAt: number,
  answeredAt: number,
): Promise<boolean> {
  ownJob(run, job, sentAt, false, job.leaseTtlMs);
  const lease = leaseAfterSubmit(job);
  if (lease.kind === 'none') return true;
  if (lease.kind === 'extended') {
    leaseExtended(run, run.job.ttlMs);
    return true;
  }
  return holdLease(run, lease.leaseTtlMs, answeredAt);
}

/**
 * After an uncertain submit: waits (a timer, no slot held) for its orphan to report itself. True:
 * the orphan is adopted; false: it is to be submitted again; otherwise the workflow fails.
 */
async function resolveUncertain(
  run: Run,
  outcome: Uncertain,
  sentAt: number,
  answeredAt: number,
): Promise<boolean> {
  run.s.uncertainSubmits += 1;
  log.warn('a submit may have reached the service without an answer', { reason: outcome.reason });
  const leaseTtlMs = await uncertainLease(run, outcome);
  const armed = outcome.webhookArmed !== false;
  const wait = orphanWait(run.job.options.uncertainSubmitWait, Date.now(), answeredAt, leaseTtlMs, armed);
  if (await adoptOrphan(run, sentAt, wait.until, wait.lease)) {
    // The look that adopted a leased orphan extended it too, unless it could not (then it is now).
    const heldLease = run.s.leaseTtlMs;
    if (heldLease === undefined) return true;
    return holdLease(run, heldLease, answeredAt);
  }
  return noOrphanCame(run, outcome, wait.lease !== undefined);
}

/** No orphan reported in time: submit again (false) or fail, as the caller chose and the counts allow. */
function noOrphanCame(run: Run, outcome: Uncertain, underLease: boolean): false {
  const { options } = run.job;
  if (underLease) {
    if (resubmitAfterLease(options, run.s.submissions)) {
      run.s.resubmittedAfterLease += 1;
      log.info('no orphan reported within the lease and the webhook window: submitting again');
      return false;
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
  const decision = onUncertainSubmit(options, run.s.submissions);
  if (decision.choice === 'resubmit') {
    log.warn('submitting again as the caller chose (onUncertainSubmit: resubmit): the job may run twice');
    return false;
  }
  throw jobFailure(
    JOB_FAILURE.submitUncertain,
    `the submit to endpoint ${options.endpointId} may have created a job whose id never arrived ` +
      `(${outcome.reason}); ${decision.why}. Look for an orphan job on the endpoint before starting it again.`,
    details(run),
  );
}

/**
 * The lease an uncertain submit went out under (job-submit-rules.ts says when it is known). When
 * only the workers' webhook setting can tell, they are asked, and the answer is kept in `outcome`.
 */
async function uncertainLease(run: Run, outcome: Uncertain): Promise<number | undefined> {
  const lease = uncertainSubmitLease(outcome, run.lease);
  if (lease.known) return lease.leaseTtlMs;
  const armed = await workerActivities.webhooksArmed();
  outcome.webhookArmed = armed;
  return armed ? lease.ifWebhooksArmed : undefined;
}

/**
 * One submission, retried here (not by Temporal) only while the activity says the request was
 * certainly not acted on. Runs in a non-cancellable scope: a cancellation mid-submit waits for the
 * job id, so the job can then be cancelled instead of left running unseen.
 */
async function submitOnce(run: Run): Promise<SubmitOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      const job = await CancellationScope.nonCancellable(() => sendSubmit(run));
      run.s.submissions += 1;
      return { kind: 'submitted', job };
    } catch (error) {
      const outcome = activityOutcome(error);
      if (!outcome) throw error;
      const decision = afterSubmitFailure(outcome, attempt);
      if (decision.kind === 'uncertain') {
        run.s.submissions += 1;
        return { kind: 'uncertain', reason: `${outcome.type}: ${outcome.message}`, ...decision.reported };
      }
      if (decision.kind === 'fail') {
        throw jobFailure(
          outcome.type,
          `the submit to endpoint ${run.job.options.endpointId} failed: ${outcome.message}`,
          details(run, pickFieldRule(outcome.facts)),
          error as Error,
        );
      }
      await sleep(decision.delayMs);
    }
  }
}

/** The submit activity: /runsync, or /run under the lease if there is one. */
function sendSubmit(run: Run): Promise<SubmitResult> {
  const { options } = run.job;
  // The activity reads a referenced request itself: it never passes through history.
  const request = run.job.request ? { request: run.job.request } : { requestRef: options.requestRef };
  if (options.mode === 'runsync') {
    return submitActivities(
      Math.max(options.submitTimeout, (options.runsyncWait ?? 90_000) + 60_000),
    ).runJobSync({
      endpointId: options.endpointId,
      ...request,
      ...(options.runsyncWait === undefined ? {} : { wait: options.runsyncWait }),
      ...inlineLimit(run),
    });
  }
  return submitActivities(
    options.submitTimeout,
    run.lease ? leaseAttemptMs(run.lease.ttlMs) : undefined,
  ).submitJob({
    endpointId: options.endpointId,
    ...request,
    ...inlineLimit(run),
    ...(run.lease ? { lease: run.lease } : {}),
  });
}
