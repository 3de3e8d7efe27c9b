/**
 * Failure names every layer shares: the types the job activities raise (beyond the service's error
 * kinds), the facts their first detail carries, and the types a job workflow fails with, which
 * callers switch on (`error.cause.type` of the WorkflowFailedError, see client/jobs.ts).
 */
import type { ServiceErrorKind } from '../api/errors';
import type { CostEstimate } from './cost';
import { JOB_UNCHANGED } from './job-wait-policy';
import type { RouteHop } from './route';

/** Failure types the job activities raise beyond the ServiceErrorKinds. */
export const JOB_EXPIRED = 'JobExpired';
export const SUBMIT_UNCERTAIN = 'SubmitUncertain';
/** A submit that sent nothing: the Temporal server did not confirm its attempt (retryable). */
export const SUBMIT_NOT_SENT = 'SubmitNotSent';
export { JOB_UNCHANGED };

export type JobActivityFailureType =
  | ServiceErrorKind
  | typeof JOB_EXPIRED
  | typeof SUBMIT_UNCERTAIN
  | typeof SUBMIT_NOT_SENT;

/**
 * The heartbeat details of a submit from the moment before its first request goes out: that a
 * request may be out, with what the workflow needs to know of it. A submit whose activity timed out
 * without them sent nothing (activities/submit-beat.ts says why that holds).
 */
export interface SubmitBeat {
  sending: true;
  /** A job's submit: whether the request named a webhook, and the lease it went out under. */
  webhookArmed?: boolean;
  leaseTtlMs?: number;
  /** A batch page's submit: the jobs it created so far. */
  created?: Array<{ i: number; id: string; ttl?: number; lease?: number }>;
}

/** Whether an activity's last heartbeat details say a submit's request may be out. */
export function beatSaysSending(details: unknown): boolean {
  return (
    typeof details === 'object' && details !== null && (details as { sending?: unknown }).sending === true
  );
}

/** What the first `details` element of every failure raised here holds. */
export interface FailureFacts {
  operation?: string;
  status?: number;
  retryAfterMs?: number;
  /** ValidationError only: the path of the bad value and the rule it breaks. */
  field?: string;
  rule?: string;
  /** SubmitUncertain only: the kind of the underlying error, and whether the job request named a webhook. */
  cause?: ServiceErrorKind;
  webhookArmed?: boolean;
  /** SubmitUncertain only: the lease ttl the request carried, when it was submitted under one. */
  leaseTtlMs?: number;
}

export const JOB_FAILURE = {
  /** The job ended FAILED and was not (or no longer) retried; details carry the service's error. */
  failed: 'JobFailed',
  /** The job ended TIMED_OUT (ran past its executionTimeout) and was not (or no longer) retried. */
  timedOut: 'JobTimedOut',
  /** The remote job was CANCELLED by someone else (cancelling the workflow ends it as cancelled instead). */
  cancelled: 'JobCancelled',
  /** The job is gone: its ttl passed (404, or the deadline came first) or its results expired before a retry. */
  expired: JOB_EXPIRED,
  /** A submit may have created a job whose id never arrived, and the caller chose not to resubmit. */
  submitUncertain: SUBMIT_UNCERTAIN,
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
  /** On a route: its moves between endpoints (endpointId is the one it failed on). */
  hops?: RouteHop[];
  /** The estimated cost of its runs, when the worker estimates costs (`cost job` reads it here). */
  cost?: CostEstimate;
  /** BadRequest on the input: where and what. */
  field?: string;
  rule?: string;
}

/** What a workflow needs to know about an activity's failure. */
export interface ActivityOutcome {
  /** `application`: the activity's code said what happened; the others: it never got to say. */
  source: 'application' | 'timeout' | 'cancelled' | 'other';
  /** The ApplicationFailure type, `ActivityTimeout`, `Cancelled` or `Error`. */
  type: string;
  message: string;
  retryable: boolean;
  /** The first detail of the ApplicationFailure, or a timeout's last heartbeat details, if any. */
  facts: Record<string, unknown>;
}
