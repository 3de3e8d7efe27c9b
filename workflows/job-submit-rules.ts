/**
 * The job workflow's decisions about a submit, its lease and an uncertain submit's orphan, that
 * workflows/job-rules.ts does not hold: each is one pure function of what the workflow knows, so
 * each decision point in the workflow is one call. No clock, no Temporal calls: the workflow
 * passes the time in and carries out the answer.
 */
import { JOB_FAILURE } from '../contracts/failures';
import type { SubmitResult } from '../contracts/job-types';
import {
  extensionTtl,
  type LeaseRequest,
  leaseEndsBy,
  orphanWaitUntil,
  unreportedLeaseTtl,
} from '../contracts/submit-lease';
import type { ActivityOutcome } from './job-failures';
import { type JobRuleOptions, type ResubmitChoice, submitRetryDelayMs } from './job-rules';

/** What an uncertain submit's activity reported before it failed, if anything. */
export interface UncertainReport {
  /** false: the request named no webhook, so no orphan will report itself. */
  webhookArmed?: boolean;
  /** The request went out under this lease. */
  leaseTtlMs?: number;
}

export type SubmitFailureDecision =
  | { kind: 'uncertain'; reported: UncertainReport }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'fail' };

/**
 * A submit's try failed after `triesSoFar` tries: the job may exist (uncertain), or it certainly
 * does not and the submit is tried again after a pause, or it fails.
 */
export function afterSubmitFailure(
  failure: Pick<ActivityOutcome, 'source' | 'type' | 'retryable' | 'facts'>,
  triesSoFar: number,
): SubmitFailureDecision {
  // Only the activity's own word makes a failure certain; a timeout, a cancellation by a
  // shutting-down worker or SubmitUncertain may each hide a job that exists.
  if (failure.source !== 'application' || failure.type === JOB_FAILURE.submitUncertain) {
    const armed = failure.facts.webhookArmed;
    const lease = failure.facts.leaseTtlMs;
    return {
      kind: 'uncertain',
      reported: {
        ...(typeof armed === 'boolean' ? { webhookArmed: armed } : {}),
        ...(typeof lease === 'number' ? { leaseTtlMs: lease } : {}),
      },
    };
  }
  const retryAfter = failure.facts.retryAfterMs;
  const delayMs = submitRetryDelayMs(
    {
      retryable: failure.retryable,
      ...(typeof retryAfter === 'number' ? { retryAfterMs: retryAfter } : {}),
    },
    triesSoFar,
  );
  return delayMs === undefined ? { kind: 'fail' } : { kind: 'retry', delayMs };
}

/**
 * A submit answered: its job has no lease, or the submit already extended the lease to the
 * caller's ttl, or the workflow must extend it (a worker whose submit does not extend leaves it so).
 */
export function leaseAfterSubmit(
  job: Pick<SubmitResult, 'leaseTtlMs' | 'extended'>,
): { kind: 'none' } | { kind: 'extended' } | { kind: 'extend'; leaseTtlMs: number } {
  if (job.leaseTtlMs === undefined) return { kind: 'none' };
  if (job.extended) return { kind: 'extended' };
  return { kind: 'extend', leaseTtlMs: job.leaseTtlMs };
}

/**
 * The ttl to extend a leased job to (/status?ttl=), or undefined when nothing needs extending: the
 * lease already is the caller's ttl, or the job completed (its output is here; its ttl no longer
 * matters).
 */
export function leaseExtensionTtl(
  leaseTtlMs: number,
  callerTtlMs: number,
  status?: string,
): number | undefined {
  return status === 'COMPLETED' ? undefined : extensionTtl(leaseTtlMs, callerTtlMs);
}

/** A lease ran out unextended: the service deleted the job, so it is sent again while submissions are left. */
export function afterLeaseLapse(options: JobRuleOptions, submissionsSoFar: number): ResubmitChoice {
  return submissionsSoFar < options.maxSubmissions ? 'resubmit' : 'fail';
}

/**
 * The lease an uncertain submit went out under. The activity says so; one that never reported (a
 * worker that died mid-submit) leaves it unknown unless the lease applies with or without a
 * webhook. A lease that applies only with a webhook ('auto') is then to be asked of the workers:
 * they share their webhook setting, so the one that sent the request armed its webhook (and with
 * it the lease) exactly when this one does.
 */
export function uncertainSubmitLease(
  reported: UncertainReport,
  lease: LeaseRequest | undefined,
): { known: true; leaseTtlMs: number | undefined } | { known: false; ifWebhooksArmed: number } {
  if (reported.leaseTtlMs !== undefined) return { known: true, leaseTtlMs: reported.leaseTtlMs };
  if (reported.webhookArmed !== undefined) return { known: true, leaseTtlMs: undefined };
  const known = unreportedLeaseTtl(lease);
  if (known !== undefined || !lease) return { known: true, leaseTtlMs: known };
  return { known: false, ifWebhooksArmed: lease.ttlMs };
}

/** How long to wait for an uncertain submit's orphan to report itself, and the lease it is under. */
export interface OrphanWait {
  until: number;
  /** The orphan went out under this lease: it must be looked at before the service deletes it. */
  lease?: { ttlMs: number; endsBy: number };
}

/**
 * After an uncertain submit answered at `answeredAt`: without a lease, the caller's
 * uncertainSubmitWait from now (none when no webhook was armed: nothing can report); under a
 * lease, the lease and the webhook's retry window (contracts/submit-lease.ts).
 */
export function orphanWait(
  uncertainSubmitWait: number,
  now: number,
  answeredAt: number,
  leaseTtlMs: number | undefined,
  webhookArmed: boolean,
): OrphanWait {
  if (leaseTtlMs === undefined) return { until: now + (webhookArmed ? uncertainSubmitWait : 0) };
  return {
    until: orphanWaitUntil(answeredAt, leaseTtlMs, webhookArmed),
    lease: { ttlMs: leaseTtlMs, endsBy: leaseEndsBy(answeredAt, leaseTtlMs) },
  };
}
