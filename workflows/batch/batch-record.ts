/**
 * The batch's results: lines of items that ended without output (failures, expiries, cancels) are
 * written to the results file in chunks by one activity at a time; completed items' lines, with
 * their outputs, the watcher wrote already.
 */
import { CancellationScope, condition, log } from '@temporalio/workflow';
import { recordResultsSummary } from '../../contracts/activity-summaries';
import type { PendingResultLine } from '../../contracts/batch-types';
import { activityOutcome } from '../shared/job-failures';
import { shortActivities } from './batch-activities';
import { type BatchRun, bump } from './batch-run';

const RECORD_CHUNK = 2_000;

export function startRecord(run: BatchRun): void {
  const { state } = run;
  if (run.recordRunning || state.lines.length === 0) return;
  const lines = state.lines.slice(0, RECORD_CHUNK);
  run.recordRunning = true;
  CancellationScope.nonCancellable(() => recordResults(state.batchKey, lines))
    .then(
      () => {
        state.lines.splice(0, lines.length);
      },
      (error: unknown) => log.error('recording results failed', { error: activityOutcome(error)?.message }),
    )
    .finally(() => {
      run.recordRunning = false;
      bump(run);
    });
}

/** Writes every line left, waiting for a write under way first (the batch is ending). */
export async function recordAll(run: BatchRun): Promise<void> {
  const { state } = run;
  await condition(() => !run.recordRunning);
  while (state.lines.length > 0) {
    const lines = state.lines.splice(0, RECORD_CHUNK);
    await recordResults(state.batchKey, lines);
  }
}

function recordResults(batchKey: string, lines: PendingResultLine[]) {
  return shortActivities.recordBatchResults.executeWithOptions(
    { summary: recordResultsSummary(lines.length) },
    [{ batchKey, lines }],
  );
}
