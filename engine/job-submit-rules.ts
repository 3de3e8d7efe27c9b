/**
 * What the job workflow must know of a submit before the per-item engine can step: whether a
 * failed try may have made a job, the lease an uncertain submit went out under, and the ttl a
 * leased job is extended to. Pure functions of what the workflow knows: no clock, no Temporal.
 */
import { type ActivityOutcome, JOB_FAILURE, SUBMIT_NOT_SENT } from '../contracts/failures';
import { beatSaysSending } from '../contracts/submit-beat';
import { extensionTtl, type LeaseRequest, unreportedLeaseTtl } from '../contracts/submit-lease';

/** What an uncertain submit's activity reported before it failed, if anything. */
export interface UncertainReport {
  /** false: the request named no webhook, so no orphan will report itself. */
  webhookArmed?: boolean;
  /** The request went out under this lease. */
  leaseTtlMs?: number;
}

/**
 * Whether a submit's failure proves that none of its requests went out: its activity said so
 * (SubmitNotSent), or it timed out before its heartbeat said a request was going out.
 */
export function sentNothing(failure: Pick<ActivityOutcome, 'source' | 'type' | 'facts'>): boolean {
  if (failure.source === 'timeout') return !beatSaysSending(failure.facts);
  return failure.source === 'application' && failure.type === SUBMIT_NOT_SENT;
}

/**
 * A submit's try failed: the job may exist (uncertain), or the service certainly did not act on it
 * (rejected: the engine decides whether and when to try again, `retryable` or not). Only the
 * activity's own word makes a failure certain, and so does a timeout whose last heartbeat never
 * said a request was going out (the server lost the task, or the worker died before sending:
 * activities/submit-beat.ts), which is worth another try. A timeout whose beat recorded the job's
 * id made that job ('made'). Any other timeout after that beat, a cancellation by a shutting-down
 * worker or SubmitUncertain may each hide a job that exists.
 */
export function submitFailureKind(
  failure: Pick<ActivityOutcome, 'source' | 'type' | 'facts' | 'retryable'>,
):
  | { kind: 'uncertain'; reported: UncertainReport }
  | { kind: 'rejected'; retryable: boolean }
  | { kind: 'made'; jobId: string; leaseTtlMs?: number } {
  if (sentNothing(failure)) return { kind: 'rejected', retryable: true };
  const { jobId, leaseTtlMs } = failure.facts;
  // The attempt ended after its beat recorded the job: the job is known, not uncertain.
  if (failure.source === 'timeout' && typeof jobId === 'string' && jobId !== '')
    return { kind: 'made', jobId, ...(typeof leaseTtlMs === 'number' ? { leaseTtlMs } : {}) };
  if (failure.source === 'application' && failure.type !== JOB_FAILURE.submitUncertain)
    return { kind: 'rejected', retryable: failure.retryable };
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
