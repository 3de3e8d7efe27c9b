/**
 * A batch's watchers hand their /status windows on (contracts/look-log.ts): an ended watcher's
 * looks that still count go to the batch, and each new watcher takes over at most its share of them.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import type { LookShare } from '../../contracts/batch-types';
import type { LookLog } from '../../contracts/look-log';
import { batchSuite, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

type FakeService = ReturnType<typeof fakeService>;
type WatchRequest = Parameters<FakeService['activities']['watchBatchJobs']>[0];

const sum = (log: LookLog | undefined) => (log ?? []).reduce((total, [, looks]) => total + looks, 0);

describe('a batch handing its watchers’ windows on', () => {
  const suite = batchSuite('batch-look-handover');

  it('gives each new watcher the looks of the ended ones that still count, at most its share', async () => {
    const fake = fakeService(12);
    const watchers: Array<{ share: LookShare | undefined; seed: LookLog | undefined; looks: LookLog }> = [];
    const activities = {
      ...fake.activities,
      async stageBatchItems(args: Parameters<FakeService['activities']['stageBatchItems']>[0]) {
        return { ...(await fake.activities.stageBatchItems(args)), statusLimit: { perTenSeconds: 40 } };
      },
      async watchBatchJobs(request: WatchRequest) {
        const answer = await fake.activities.watchBatchJobs(request);
        // It used its whole share, in the second its attempt was scheduled (on the server's clock).
        const second = Math.floor(Context.current().info.currentAttemptScheduledTimestampMs / 1_000);
        const looks: LookLog = [[second, request.share?.perTenSeconds ?? 0, 'a-worker']];
        watchers.push({ share: request.share, seed: request.seed, looks });
        return { ...answer, looks };
      },
    };
    const input: BatchInput = {
      endpointId: 'ep-1',
      items: { manifest: { key: 'items.jsonl' } },
      pageSize: 3,
      maxConcurrency: 6,
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await suite.start(queue, input)).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 12 }, submissions: 12 });
    expect(watchers.length).toBeGreaterThan(1);
    for (const watcher of watchers) {
      expect(watcher.share).toBeDefined();
      expect(sum(watcher.seed)).toBeLessThanOrEqual(watcher.share?.perTenSeconds ?? 0);
    }
    // Later watchers started from the looks handed back, and no look was handed on twice.
    const seeded = watchers.reduce((total, watcher) => total + sum(watcher.seed), 0);
    expect(seeded).toBeGreaterThan(0);
    expect(seeded).toBeLessThanOrEqual(watchers.reduce((total, watcher) => total + sum(watcher.looks), 0));
    expect(watchers[0]?.seed).toBeUndefined();
  });
});
