/**
 * recordBatchResults: the result lines of the items no watcher wrote: those that ended without
 * output (failures), and the child mode's.
 */

import type { BatchResultLine } from '../contracts/batch-summary';
import type { PendingResultLine } from '../contracts/batch-types';
import { type BatchShared, batchContext } from './batch-shared';

export function recordActivities(shared: BatchShared) {
  const { store, countOutcome } = shared;
  return {
    /**
     * Lines of items that ended, as one part per folder (replaced if retried): COMPLETED ones (the
     * child mode's, whose outputs are references) under results/, the others under failures/.
     */
    async recordBatchResults(input: { batchKey: string; lines: PendingResultLine[] }): Promise<void> {
      const { info, runId } = batchContext();
      const part = `${runId}-${info.activityId}.jsonl`;
      const lines = await Promise.all(input.lines.map(withErrorText));
      const completed = lines.filter((line) => line.status === 'COMPLETED');
      const failed = lines.filter((line) => line.status !== 'COMPLETED');
      const text = (lines: BatchResultLine[]) => lines.map((line) => JSON.stringify(line));
      if (completed.length > 0) await store.writeLines(`${input.batchKey}/results/${part}`, text(completed));
      if (failed.length > 0 || completed.length === 0)
        await store.writeLines(`${input.batchKey}/failures/${part}`, text(failed));
      for (const line of lines) countOutcome(line.status);
    },
  };

  /** A line's error text, read back from where the watcher put it. */
  async function withErrorText({ errorRef, ...line }: PendingResultLine): Promise<BatchResultLine> {
    if (errorRef === undefined) return line;
    try {
      const [text] = await store.readLines(errorRef, [0]);
      return { ...line, error: JSON.parse(text ?? '""') as string };
    } catch (error) {
      return {
        ...line,
        error: `its error text could not be read from the batch store: ${(error as Error).message}`,
      };
    }
  }
}
