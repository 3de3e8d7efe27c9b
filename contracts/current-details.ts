/**
 * The current details a running workflow shows in the Temporal UI (`setCurrentDetails`): a small
 * Markdown table rendered from the same snapshot its progress query answers. Setting them costs no
 * history event (the UI reads them through the workflow's metadata query), so a workflow may
 * refresh them on every turn of its loop. Pure: the workflow bundle carries it, tests read it
 * without a server.
 */
import type { BatchProgress } from './batch-input';
import type { JobSnapshot } from './job-snapshot';
import { formatCount, formatDuration, formatInstant, formatMoney, markdownTable } from './progress-markdown';

/** A batch: counts, throughput, estimated end, cost so far, budget left, paused. `now`: workflow time. */
export function batchCurrentDetails(progress: BatchProgress, now: number): string {
  const { counts, cost } = progress;
  const failed = progress.done - counts.completed - counts.cancelled;
  const queued = Math.max(progress.total - progress.cursor, 0);
  const ended = progress.done >= progress.total && progress.total > 0;
  const eta = ended
    ? 'done'
    : progress.etaMs !== undefined
      ? `${formatInstant(now + progress.etaMs)} (in ${formatDuration(progress.etaMs)})`
      : 'not yet known';
  const budgetLeft =
    progress.budget === undefined
      ? undefined
      : formatMoney(Math.max(progress.budget - cost.amount, 0), cost.currency);
  const state = progress.paused
    ? 'paused: no new submissions'
    : progress.toleranceExceeded
      ? 'stopping: failure tolerance exceeded'
      : progress.budgetExceeded
        ? 'stopping: budget reached'
        : ended
          ? 'finished'
          : 'running';
  return [
    `**${formatCount(progress.done)} of ${formatCount(progress.total)} items done**`,
    '',
    markdownTable(
      [
        ['Completed', formatCount(counts.completed)],
        ['Failed', formatCount(failed)],
        ['In flight', formatCount(progress.inFlight)],
        ['Queued', formatCount(queued)],
        ['Cancelled', formatCount(counts.cancelled)],
        ['Throughput', `${progress.ratePerSecond.toFixed(1)} items/s`],
        ['Estimated end', eta],
        ['Cost so far', formatMoney(cost.amount, cost.currency)],
        ['Budget left', budgetLeft],
        ['State', state],
      ],
      ['Items', 'Now'],
    ),
  ].join('\n');
}

/** A job: remote status, attempt, queue delay, cost. */
export function jobCurrentDetails(snapshot: JobSnapshot): string {
  return markdownTable(
    [
      ['Phase', snapshot.phase],
      ['Remote status', snapshot.status ?? 'not submitted yet'],
      ['Remote job', snapshot.jobId],
      ['Attempt', formatCount(Math.max(snapshot.attempts, 1))],
      ['Queue delay', snapshot.delayTime !== undefined ? formatDuration(snapshot.delayTime) : undefined],
      ['Cost', snapshot.cost ? formatMoney(snapshot.cost.amount, snapshot.cost.currency) : undefined],
    ],
    ['Job', 'Now'],
  );
}
