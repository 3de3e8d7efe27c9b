/**
 * A cancelled batch: every job in flight is cancelled at the service (within the /cancel limits,
 * in chunks) and recorded, as is every other item under way; then the batch ends as cancelled.
 */
import { condition, log } from '@temporalio/workflow';
import { cancelJobsSummary } from '../../contracts/activity-summaries';
import type { RunningItem } from '../../engine/item-state';
import { activityOutcome } from '../shared/job-failures';
import { shortActivities } from './batch-activities';
import { recordAll } from './batch-record';
import { advance, type BatchRun, bump, endpointIdAt } from './batch-run';
import { byEndpoint } from './batch-run-counts';
import { cancelWatchers } from './batch-watch';

const CANCEL_CHUNK = 1_000;

/** Cancels the jobs the engine gave up before they were seen finished, a chunk at a time. */
export function startCancels(run: BatchRun): void {
  const { state } = run;
  if (run.cancelRunning || state.toCancel.length === 0) return;
  // A chunk of the jobs on the first one's endpoint (each call names one endpoint).
  const at = state.toCancel[0]?.endpoint ?? 0;
  const taken = state.toCancel.slice(0, CANCEL_CHUNK);
  const chunk = taken.filter((job) => (job.endpoint ?? 0) === at);
  run.cancelRunning = true;
  cancelJobs(run, chunk, at)
    .then(
      () => undefined,
      (error: unknown) =>
        log.warn('cancelling jobs given up failed', { error: activityOutcome(error)?.message }),
    )
    .finally(() => {
      // Tried once: a job the service no longer has, or one it refused, is not tried again.
      const sent = new Set(chunk);
      state.toCancel.splice(0, state.toCancel.length, ...state.toCancel.filter((job) => !sent.has(job)));
      run.cancelRunning = false;
      bump(run);
    });
}

export async function cancelInFlight(run: BatchRun): Promise<void> {
  cancelWatchers(run);
  // Submits under way finish first: their jobs get ids, and so can be cancelled.
  await condition(() => run.submitsRunning === 0 && run.retrying.size === 0);
  const now = Date.now();
  const live = [...run.items.values()].filter((item): item is RunningItem => item.phase === 'running');
  for (const [at, jobs] of byEndpoint(live)) {
    for (let from = 0; from < jobs.length; from += CANCEL_CHUNK)
      await cancelChunk(run, jobs.slice(from, from + CANCEL_CHUNK), now, at);
  }
  for (const item of [...run.items.values()]) {
    const reason =
      item.phase === 'uncertain'
        ? 'the batch was cancelled after an uncertain submit'
        : 'the batch was cancelled';
    advance(run, item, { kind: 'abandoned', now, reason });
  }
  run.state.stopping = true;
  await recordAll(run);
}

function cancelJobs(run: BatchRun, jobs: readonly { index: number; jobId: string }[], at: number) {
  return shortActivities.cancelBatchJobs.executeWithOptions({ summary: cancelJobsSummary(jobs.length) }, [
    { endpointId: endpointIdAt(run, at), items: jobs.map((job) => [job.index, job.jobId]) },
  ]);
}

async function cancelChunk(run: BatchRun, chunk: RunningItem[], now: number, at: number): Promise<void> {
  let answers: Map<number, { status?: string; error?: string }>;
  try {
    const { results } = await cancelJobs(run, chunk, at);
    answers = new Map(results.map((result) => [result.i, result]));
  } catch (error) {
    answers = new Map();
    log.error('cancelling jobs in flight failed', { error: activityOutcome(error)?.message });
  }
  for (const item of chunk) {
    const answer = answers.get(item.index);
    advance(run, item, {
      kind: 'abandoned',
      now,
      reason: answer?.error
        ? `the batch was cancelled; cancelling the job failed: ${answer.error}`
        : 'the batch was cancelled',
      ...(answer?.status === undefined ? {} : { status: answer.status }),
    });
  }
}
