/**
 * How errors leave an activity. Temporal's retry policy decides what happens next from the
 * failure's `type` and `nonRetryable` flag alone, so every error is turned into an
 * ApplicationFailure here, once, with a stable type:
 *
 * - a ServiceError keeps its kind as the type (BadRequest, Unauthorized, RateLimited, ...),
 *   non-retryable unless the client marked it retryable, and a 429's Retry-After becomes
 *   `nextRetryDelay` so Temporal waits as long as the service asked;
 * - a job operation's 404 becomes `JobExpired`: the service answers 404 for a job its ttl deleted
 *   or whose results expired (an unknown endpoint gives 404 too; the message says both);
 * - a ValidationError (refused before anything was sent) becomes a non-retryable `BadRequest`;
 * - a submit that may have reached the service becomes a non-retryable `SubmitUncertain`, so
 *   nothing ever sends it a second time on its own (see activities/job.ts).
 *
 * The details (first element) carry the facts the workflow acts on, because the workflow side of
 * an ActivityFailure does not see `nextRetryDelay`.
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { z } from 'zod';
import { ServiceError, ValidationError } from '../api/errors';
import { type FailureFacts, JOB_EXPIRED, SUBMIT_UNCERTAIN } from '../contracts/failures';

export interface FailureContext {
  /** Job operations (status, stream, cancel, retry) read a 404 as the job having expired. */
  jobOperation?: boolean;
  /** Submits (run, runSync) turn "may have reached the service" into SubmitUncertain. */
  submit?: { webhookArmed: boolean; leaseTtlMs?: number };
  /** The activity's cancellation signal: an abort caused by it is reported as a cancellation. */
  signal?: AbortSignal;
}

function facts(error: ServiceError): FailureFacts {
  return {
    operation: error.operation,
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
  };
}

/** The failure to throw from an activity for `error` (a Temporal failure passes through unchanged). */
export function toApplicationFailure(
  error: unknown,
  context: FailureContext = {},
): ApplicationFailure | CancelledFailure {
  // Cancellation must surface as a CancelledFailure, or the worker reports a failure instead.
  if (context.signal?.aborted) {
    return error instanceof CancelledFailure ? error : new CancelledFailure('activity cancelled');
  }
  if (error instanceof ApplicationFailure || error instanceof CancelledFailure) return error;

  if (error instanceof ValidationError) {
    return ApplicationFailure.create({
      type: 'BadRequest',
      message: `invalid request, not sent: ${error.message}`,
      nonRetryable: true,
      details: [{ field: error.field, rule: error.rule } satisfies FailureFacts],
    });
  }

  if (error instanceof ServiceError) {
    if (context.submit && error.mayHaveReachedService) {
      return ApplicationFailure.create({
        type: SUBMIT_UNCERTAIN,
        message:
          `the ${error.operation} request may have reached the service (${error.message}); ` +
          'it is not repeated automatically because the service cannot de-duplicate submissions',
        nonRetryable: true,
        details: [
          {
            ...facts(error),
            cause: error.kind,
            webhookArmed: context.submit.webhookArmed,
            ...(context.submit.leaseTtlMs === undefined ? {} : { leaseTtlMs: context.submit.leaseTtlMs }),
          } satisfies FailureFacts,
        ],
      });
    }
    if (context.jobOperation && error.kind === 'NotFound') {
      return ApplicationFailure.create({
        type: JOB_EXPIRED,
        message: `${error.message} (the job's ttl or result retention has passed, or the endpoint is unknown)`,
        nonRetryable: true,
        details: [facts(error)],
      });
    }
    return ApplicationFailure.create({
      type: error.kind,
      message: error.message,
      nonRetryable: !error.retryable,
      ...(error.retryAfterMs !== undefined ? { nextRetryDelay: error.retryAfterMs } : {}),
      details: [facts(error)],
    });
  }

  // Anything else is a bug or an unexpected fault in this process: retryable, so a fixed worker
  // picks the work up again, and typed so that it is recognisable.
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({ type: 'InternalError', message, nonRetryable: false });
}

/** Runs `fn`, rethrowing whatever it throws as an activity failure. */
export async function asActivityFailures<T>(context: FailureContext, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toApplicationFailure(error, context);
  }
}

/** An activity's input checked against its schema: a BadRequest naming the field and the rule. */
export function parsed<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = [what, ...(issue?.path.map(String) ?? [])].join('.');
  throw ApplicationFailure.create({
    type: 'BadRequest',
    message: `invalid activity input: ${field}: ${issue?.message ?? 'is invalid'}`,
    nonRetryable: true,
    details: [{ field, rule: issue?.message ?? 'is invalid' }],
  });
}
