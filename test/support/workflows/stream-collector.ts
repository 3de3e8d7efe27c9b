/**
 * The workflow a `signal` stream sink delivers to, as a caller's own workflow would be: it keeps
 * every batch of chunks it is signalled, shows them through a query, and ends when told to.
 */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';
import type { JobStreamBatch } from '../../../contracts/signal-names';
import { jobStreamChunksSignal } from '../../../workflows/job/job-definitions';

export const collectedBatchesQuery = defineQuery<JobStreamBatch[]>('collectedBatches');
export const stopCollectingSignal = defineSignal('stopCollecting');

export async function streamCollector(): Promise<number> {
  const batches: JobStreamBatch[] = [];
  let stopped = false;
  setHandler(jobStreamChunksSignal, (batch) => {
    batches.push(batch);
  });
  setHandler(collectedBatchesQuery, () => batches);
  setHandler(stopCollectingSignal, () => {
    stopped = true;
  });
  await condition(() => stopped);
  return batches.reduce((sum, batch) => sum + batch.chunks.length, 0);
}
