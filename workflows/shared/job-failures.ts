/**
 * The job workflow's failures: every way it can fail is an ApplicationFailure with one of the
 * JOB_FAILURE types (contracts/failures.ts), non-retryable, whose first detail is a
 * JobFailureDetails; and how the workflow reads an activity's failure.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { ACTIVITY_TIMEOUT, type ActivityOutcome, type JobFailureDetails } from '../../contracts/failures';

export {
  type ActivityOutcome,
  JOB_FAILURE,
  type JobFailureDetails,
  type JobFailureType,
} from '../../contracts/failures';

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
    const beat = cause.lastHeartbeatDetails;
    return {
      source: 'timeout',
      type: ACTIVITY_TIMEOUT,
      message: cause.message,
      retryable: false,
      facts: beat && typeof beat === 'object' ? (beat as Record<string, unknown>) : {},
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
