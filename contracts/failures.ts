/**
 * Every failure name of the library, one catalogue: the types the activities raise (beyond the
 * service's error kinds, api/errors.ts) and the types each workflow fails with, which callers
 * switch on (`error.cause.type` of the WorkflowFailedError, see client/jobs.ts), with the details
 * those failures carry. A family's names are one object (JOB_FAILURE, BATCH_FAILURE,
 * ENDPOINT_FAILURE, EPHEMERAL_FAILURE, AUTOMATION_FAILURE); a name two families share
 * (`BadRequest`) is written once and named by both.
 */
import type { ServiceErrorKind } from '../api/errors';
import type { CostEstimate } from './cost';
import type { RouteHop } from './route';

/** A workflow input (or the request in it) breaks a rule; details name the field and the rule. */
const BAD_REQUEST = 'BadRequest' satisfies ServiceErrorKind;

// --- the activities' own (retried or read by the workflows, not a workflow's end)

/** Failure types the job activities raise beyond the ServiceErrorKinds. */
export const JOB_EXPIRED = 'JobExpired';
export const SUBMIT_UNCERTAIN = 'SubmitUncertain';
/** A submit that sent nothing: the Temporal server did not confirm its attempt (retryable). */
export const SUBMIT_NOT_SENT = 'SubmitNotSent';
/** A wait's look found nothing new: the server retries it after `nextRetryDelay` (see job-wait.ts). */
export const JOB_UNCHANGED = 'JobUnchanged';
export type JobActivityFailureType =
  | ServiceErrorKind
  | typeof JOB_EXPIRED
  | typeof SUBMIT_UNCERTAIN
  | typeof SUBMIT_NOT_SENT;

// --- the workflows' ends

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
  badRequest: BAD_REQUEST,
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

/** How a workflow names an activity that never answered (its timeout: no type of its own). */
export const ACTIVITY_TIMEOUT = 'ActivityTimeout' satisfies JobFailureType;

export const BATCH_FAILURE = {
  /** More items failed than the batch's failure tolerance allows; details: the batch's summary. */
  toleranceExceeded: 'BatchToleranceExceeded',
  /** The batch's estimated cost reached its budget; details: the batch's summary. */
  budgetExceeded: 'BatchBudgetExceeded',
  badRequest: BAD_REQUEST,
} as const;

export type BatchFailureType = (typeof BATCH_FAILURE)[keyof typeof BATCH_FAILURE];

/** Failure types of the endpoint activities and workflows beyond the ServiceErrorKinds. */
export const ENDPOINT_FAILURE = {
  /** The endpoint id is not in the account (any more). */
  notFound: 'EndpointNotFound',
  /** deleteEndpoint was refused because workersMin or workersMax is not 0. */
  notScaledDown: 'EndpointNotScaledDown',
  /** More than one endpoint carries the name: which one is meant cannot be told. */
  duplicateName: 'DuplicateEndpointName',
  /** An endpoint of the requested name exists with another templateId: it is not adopted. */
  nameConflict: 'EndpointNameConflict',
  /** REST created an endpoint that GraphQL does not list yet; a retry finds it by name. */
  notListed: 'EndpointNotListed',
  /**
   * A workflow input (or its merge with the current endpoint) breaks a rule; details hold
   * { field, rule }. BadRequest, as for a job workflow's input and a ValidationError in activities.
   */
  invalidInput: BAD_REQUEST,
} as const;

export type EndpointFailureType = (typeof ENDPOINT_FAILURE)[keyof typeof ENDPOINT_FAILURE];

export const EPHEMERAL_FAILURE = {
  /**
   * The batch failed with its summary (BatchToleranceExceeded, BatchBudgetExceeded); the endpoint
   * was torn down since. Its details: [EphemeralBatchFailure]; its cause: the batch's failure.
   */
  batchFailed: 'EphemeralBatchFailed',
} as const;

export const AUTOMATION_FAILURE = {
  /** The ended runs' estimated cost reached the automation's budget; details: what was not run. */
  budgetExceeded: 'AutomationBudgetExceeded',
} as const;

// --- what the failures carry

/** What the first `details` element of every failure the job activities raise holds. */
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
