/**
 * The job workflow's failures: every way it can fail is an ApplicationFailure with one of these
 * types, non-retryable, whose first detail is a JobFailureDetails. Callers switch on
 * `error.cause.type` of the WorkflowFailedError (see client/jobs.ts).
 *
 * A leaf module (type-only imports): the client names these types without bundling activity code.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import type { JobActivityFailureType } from '../activities/failures';
import type { ServiceErrorKind } from '../api/errors';

export const JOB_FAILURE = {
  /** The job ended FAILED and was not (or no longer) retried; details carry the service's error. */
  failed: 'JobFailed',
  /** The job ended TIMED_OUT (ran past its executionTimeout) and was not (or no longer) retried. */
  timedOut: 'JobTimedOut',
  /** The remote job was CANCELLED by someone else (cancelling the workflow ends it as cancelled instead). */
  cancelled: 'JobCancelled',
  /** The job is gone: its ttl passed (404, or the deadline came first) or its results expired before a retry. */
  expired: 'JobExpired' satisfies JobActivityFailureType,
  /** A submit may have created a job whose id never arrived, and the caller chose not to resubmit. */
  submitUncertain: 'SubmitUncertain' satisfies JobActivityFailureType,
  /** The workflow input (or the request in it) breaks a rule; details name the field. */
  badRequest: 'BadRequest' satisfies JobActivityFailureType,
  /** The service refused the API key. */
  unauthorized: 'Unauthorized' satisfies JobActivityFailureType,
  /** A stream sink the worker does not have. */
  streamSink: 'StreamSinkError',
} as const;

/**
 * Every type a job workflow can fail with: the JOB_FAILURE ones, plus the service error kinds that
 * outlived their retries (NotFound for an unknown endpoint, RateLimited, ServerError, NetworkError,
 * Timeout, InvalidResponse) and `ActivityTimeout` (an activity that never answered).
 */
export type JobFailureType =
  | (typeof JOB_FAILURE)[keyof typeof JOB_FAILURE]
  | ServiceErrorKind
  | 'ActivityTimeout';

export interface JobFailureDetails {
  endpointId: string;
  jobId?: string;
  jobIds: string[];
  /** The remote job's last confirmed status. */
  status?: string;
  /** JobFailed: the service's error text. */
  error?: string;
  /** JobExpired: `ttl` (the job was deleted) or `results` (they expired before a retry). */
  expired?: 'ttl' | 'results';
  attempts: number;
  retries: number;
  submissions: number;
  uncertainSubmits: number;
  /** Under a submit lease: uncertain submits resolved by adopting the orphan, or by a new submission after the lease; leases that ran out before they could be extended. */
  uncertainAdopted?: number;
  resubmittedAfterLease?: number;
  leaseLapses?: number;
  /** BadRequest on the input: where and what. */
  field?: string;
  rule?: string;
}

export function jobFailure(
  type: string,
  message: string,
  details: JobFailureDetails,
  cause?: Error,
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message,
    nonRetryable: true,
    details: [details],
    ...(cause ? { cause } : {}),
  });
}

/** What the workflow needs to know about an activity's failure. */
export interface ActivityOutcome {
  /** `application`: the activity's code said what happened; the others: it never got to say. */
  source: 'application' | 'timeout' | 'cancelled' | 'other';
  /** The ApplicationFailure type, `ActivityTimeout`, `Cancelled` or `Error`. */
  type: string;
  message: string;
  retryable: boolean;
  /** The first detail of the ApplicationFailure, if any. */
  facts: Record<string, unknown>;
}

export function activityOutcome(error: unknown): ActivityOutcome | undefined {
  if (!(error instanceof ActivityFailure)) return undefined;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure) {
    const first = cause.details?.[0];
    return {
      source: 'application',
      type: cause.type ?? 'Error',
      message: cause.message,
      retryable: !cause.nonRetryable,
      facts: first && typeof first === 'object' ? (first as Record<string, unknown>) : {},
    };
  }
  if (cause instanceof TimeoutFailure) {
    return {
      source: 'timeout',
      type: 'ActivityTimeout',
      message: cause.message,
      retryable: false,
      facts: {},
    };
  }
  if (cause instanceof CancelledFailure) {
    return { source: 'cancelled', type: 'Cancelled', message: cause.message, retryable: false, facts: {} };
  }
  return {
    source: 'other',
    type: 'Error',
    message: cause?.message ?? error.message,
    retryable: false,
    facts: {},
  };
}
