/**
 * A batch whose endpoint's gate answers that the endpoint is paused: its pages come back unsent at
 * once, and the batch holds all its pages in the workflow (no worker slot held, no page sent
 * meanwhile), longer at each paused answer in a row as a job's tries wait (noRoomRetryDelayMs),
 * then sends every item once the endpoint resumes. On the time-skipping server; the pages' server
 * times are the activities' scheduled times.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import { noRoomRetryDelayMs } from '../../engine/job-rules';
import { batchSuite, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

/** How long the endpoint stays paused after the batch's first page. */
const PAUSE_MS = 100_000;

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('a batch on a paused endpoint', () => {
  const suite = batchSuite('batch-paused');

  it('holds its pages in the workflow, a while longer at each paused answer, and sends each item once resumed', async () => {
    const fake = fakeService(6);
    const pageTimes: number[] = [];
    const activities = {
      ...fake.activities,
      submitBatchPage: async (args: Parameters<typeof fake.activities.submitBatchPage>[0]) => {
        const at = Context.current().info.currentAttemptScheduledTimestampMs;
        pageTimes.push(at);
        if (at < (pageTimes[0] as number) + PAUSE_MS)
          return { results: [], unsent: args.indexes.slice(), paused: true as const };
        return fake.activities.submitBatchPage(args);
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await suite.start(queue, input({ pageSize: 2 }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 6 }, submissions: 6 });
    // The moments pages went out (several at once, a few ms apart): each wait after a paused answer is longer,
    // and no page went out before it was over.
    const moments: number[] = [];
    for (const at of [...pageTimes].sort((a, b) => a - b)) {
      if (moments.length === 0 || at - (moments[moments.length - 1] as number) > 500) moments.push(at);
    }
    const paused = moments.filter((at) => at < (pageTimes[0] as number) + PAUSE_MS);
    for (let tries = 1; tries < moments.length; tries++) {
      const gap = (moments[tries] as number) - (moments[tries - 1] as number);
      if (tries <= paused.length) expect(gap).toBeGreaterThanOrEqual(noRoomRetryDelayMs(tries));
    }
    // 1, 2, 4 ... 64 s: seven waits reach past 100 s, so seven moments fell in the pause.
    expect(paused).toHaveLength(7);
  });
});
