/**
 * How a job workflow ends other than by its result: cancelling its remote job (when the workflow is
 * cancelled, or before a fresh submit replaces an expired job) and turning any failure into the
 * typed, non-retryable ApplicationFailure it leaves with.
 */
import { ApplicationFailure, isCancellation, log } from '@temporalio/workflow';
import { cancelJobSummary } from '../../contracts/activity-summaries';
import { ACTIVITY_TIMEOUT } from '../../contracts/failures';
import { activityOutcome, jobFailure } from '../shared/job-failures';
import { shortActivities } from './job-activities';
import { details, isTerminal, pickFieldRule, type Run, syncSearchAttributes } from './job-run';

export async function cancelRemoteJob(run: Run): Promise<void> {
  const { s } = run;
  if (!s.jobId || isTerminal(s.status)) {
    s.remoteCancel = { sent: false };
    if (!s.jobId && s.uncertainSubmits > 0)
      log.warn('cancelled with no job id after an uncertain submit; an orphan may run');
    return;
  }
  try {
    const answer = await cancelJob(s.endpointId, s.jobId);
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
export async function cancelQuietly(run: Run): Promise<void> {
  const { s } = run;
  if (!s.jobId) return;
  try {
    await cancelJob(s.endpointId, s.jobId);
  } catch (error) {
    if (isCancellation(error)) throw error;
    log.warn('cancelling the expired job failed', { jobId: s.jobId });
  }
}

function cancelJob(endpointId: string, jobId: string) {
  return shortActivities.cancelJob.executeWithOptions({ summary: cancelJobSummary(jobId) }, [
    { endpointId, jobId },
  ]);
}

/** Every failure leaves the workflow as a typed, non-retryable ApplicationFailure. */
export function asJobFailure(run: Run, error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const outcome = activityOutcome(error);
  if (outcome) {
    const type =
      outcome.source === 'application'
        ? outcome.type
        : outcome.type === ACTIVITY_TIMEOUT
          ? ACTIVITY_TIMEOUT
          : 'Error';
    return jobFailure(type, outcome.message, details(run, pickFieldRule(outcome.facts)), error as Error);
  }
  // A bug: failing the workflow task (not the workflow) lets a fixed worker carry on.
  throw error;
}
