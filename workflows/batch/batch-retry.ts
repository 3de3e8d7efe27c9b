/**
 * Retries of the batch's FAILED and TIMED_OUT jobs: the items whose backoff is over go to /retry in
 * one activity (their due times sit on a whole-second grid, so close failures share a call).
 */
import { isCancellation, log } from '@temporalio/workflow';
import type { JobStatusValue } from '../../api/schemas/job';
import { retryJobsSummary } from '../../contracts/activity-summaries';
import type { RetryDueItem } from '../../engine/item-state';
import { activityOutcome } from '../shared/job-failures';
import { shortActivities } from './batch-activities';
import { advance, type BatchRun, bump, endpointIdAt } from './batch-run';
import { byEndpoint } from './batch-run-counts';

/** A /retry that went unanswered (one job's, or the whole call's) is tried again after this. */
const RETRY_CALL_PAUSE_MS = 5_000;

export function startRetries(run: BatchRun, now: number): void {
  if (run.retrying.size > 0) return;
  const due: RetryDueItem[] = [];
  for (const item of [...run.items.values()]) {
    if (item.phase !== 'retry-due' || item.retryAt > now) continue;
    const { commands } = advance(run, item, { kind: 'retry-time', now, stopping: run.state.stopping });
    if (commands.some((command) => command.kind === 'retry')) due.push(item);
  }
  // Each call retries the jobs of one endpoint.
  for (const [at, items] of byEndpoint(due)) retry(run, items, at);
}

function retry(run: BatchRun, due: RetryDueItem[], at: number): void {
  for (const item of due) run.retrying.add(item.index);
  shortActivities.retryBatchJobs
    .executeWithOptions({ summary: retryJobsSummary(due.length) }, [
      { endpointId: endpointIdAt(run, at), items: due.map((item) => [item.index, item.jobId]) },
    ])
    .then(
      ({ results }) => {
        for (const result of results) {
          const item = run.items.get(result.i);
          if (item?.phase !== 'retry-due') continue;
          const stopping = run.state.stopping;
          if (result.status !== undefined)
            advance(run, item, { kind: 'retried', status: result.status as JobStatusValue, now: Date.now() });
          else if (result.gone) advance(run, item, { kind: 'retry-gone', now: Date.now(), stopping });
          else if (result.unanswered)
            advance(run, item, { kind: 'retry-unanswered', now: Date.now(), pauseMs: RETRY_CALL_PAUSE_MS });
          else
            advance(run, item, {
              kind: 'retry-failed',
              now: Date.now(),
              error: result.error ?? 'unknown error',
            });
        }
      },
      (error: unknown) => {
        // Left as they were: tried again once their new due time comes round.
        for (const asked of due) {
          const item = run.items.get(asked.index);
          if (item?.phase === 'retry-due') {
            advance(run, item, { kind: 'retry-unanswered', now: Date.now(), pauseMs: RETRY_CALL_PAUSE_MS });
          }
        }
        if (!isCancellation(error))
          log.warn('retrying jobs failed', { error: activityOutcome(error)?.message });
      },
    )
    .finally(() => {
      for (const item of due) run.retrying.delete(item.index);
      bump(run);
    });
}
