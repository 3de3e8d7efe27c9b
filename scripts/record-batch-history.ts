/**
 * Records the history of one batch on a throwaway dev server into
 * test/fixtures/<name>.history.json, for the batch replay test. The activities are scripted (no
 * service needed): 6 items in pages of 2 with 4 slots; the page of items 2 and 3 is answered only
 * after a watcher has started on items 0 and 1, which stay running for three of its looks; item 5
 * fails once and is retried by /retry. So the history holds submits, a watcher retried on
 * JobUnchanged, a later page, a retry and the results. The code that records it is the code the
 * history belongs to: run it from a checkout of that code.
 *
 *   npx tsx scripts/record-batch-history.ts batch
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { BatchActivities } from '../activities/batch';
import type { ItemChange } from '../contracts/batch-types';
import type { serverlessBatch } from '../workflows/batch/batch';
import { recordHistories, runRecording } from './history-recorder';

const BATCH_RECORDED_ID = 'batch-recorded';
const TOTAL = 6;

function scriptedActivities(): Partial<BatchActivities> {
  const attempts = new Map<number, number>();
  let firstWatcher!: () => void;
  const firstWatcherStarted = new Promise<void>((resolve) => {
    firstWatcher = resolve;
  });
  let looksAtHeld = 0;
  const finished = new Set<number>();
  return {
    stageBatchItems: async () => ({
      batchKey: 'batch-recorded',
      manifestKey: 'batch-recorded/items.jsonl',
      total: TOTAL,
    }),
    submitBatchPage: async ({ indexes }) => {
      if (indexes.includes(2)) await firstWatcherStarted;
      return { results: indexes.map((i) => ({ i, id: `job-${i}` })) };
    },
    watchBatchJobs: async ({ items }) => {
      if (items.some(([i]) => i === 0)) firstWatcher();
      const held = items.some(([i]) => i < 2) && looksAtHeld++ < 3;
      const changes: ItemChange[] = [];
      for (const [i] of items) {
        if (finished.has(i) || (held && i < 2)) continue;
        const attempt = attempts.get(i) ?? 1;
        const status = i === 5 && attempt === 1 ? 'FAILED' : 'COMPLETED';
        if (status === 'COMPLETED') finished.add(i);
        changes.push({ i, status, at: Date.now(), ...(status === 'FAILED' ? { error: 'failed once' } : {}) });
      }
      if (changes.length === 0)
        throw ApplicationFailure.create({
          type: 'JobUnchanged',
          message: 'nothing finished',
          nextRetryDelay: 200,
          category: ApplicationFailureCategory.BENIGN,
        });
      return { changes, running: 0 };
    },
    retryBatchJobs: async ({ items }) => ({
      results: items.map(([i]) => {
        attempts.set(i, (attempts.get(i) ?? 1) + 1);
        return { i, status: 'IN_QUEUE' };
      }),
    }),
    recordBatchResults: async () => undefined,
  };
}

runRecording(async () => {
  const name = process.argv[2];
  if (!name || !/^batch(-[a-z-]+)?$/.test(name))
    throw new Error('usage: record-batch-history.ts batch[-<name>]');
  await recordHistories(
    {
      taskQueue: 'record-batch-history',
      workflowsPath: require.resolve('../workflows/batch/batch'),
      activities: scriptedActivities(),
    },
    async ({ client, taskQueue, save }) => {
      const handle = await client.workflow.start<typeof serverlessBatch>('serverlessBatch', {
        taskQueue,
        workflowId: BATCH_RECORDED_ID,
        args: [
          {
            endpointId: 'ep-rec',
            items: { manifest: { key: 'items.jsonl' } },
            pageSize: 2,
            maxConcurrency: 4,
            job: { retry: { maxRetries: 1, initialInterval: 500 } },
          },
        ],
      });
      await save(name, handle);
    },
  );
});
