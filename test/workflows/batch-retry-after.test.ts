/**
 * The batch's submit backoff honours the service's Retry-After, as the job workflow's does (both
 * take it from one rule, submitRetryDelayMs): a page whose submit the service refused with a 429
 * and a Retry-After of 90 s is sent again no sooner, where the backoff alone would wait 1 s. On the
 * time-skipping server; the submits' server times are the activities' scheduled times.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import type { SubmitItemResult } from '../../contracts/batch-types';
import { batchSuite, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

const RETRY_AFTER_MS = 90_000;

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('batch submit backoff', () => {
  const suite = batchSuite('batch-retry-after');

  it("waits out a 429's Retry-After before it submits a refused item again", async () => {
    const fake = fakeService(2);
    const submitTimes: number[] = [];
    let refused = false;
    const activities = {
      ...fake.activities,
      submitBatchPage: async (args: Parameters<typeof fake.activities.submitBatchPage>[0]) => {
        if (!args.indexes.includes(0)) return fake.activities.submitBatchPage(args);
        submitTimes.push(Context.current().info.currentAttemptScheduledTimestampMs);
        if (refused) return fake.activities.submitBatchPage(args);
        refused = true;
        const results: SubmitItemResult[] = args.indexes.map((i) => ({
          i,
          rejected: {
            type: 'RateLimited',
            message: 'too many requests',
            retryable: true,
            retryAfterMs: RETRY_AFTER_MS,
          },
        }));
        return { results };
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await suite.start(queue, input({ pageSize: 1 }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 2 } });
    expect(submitTimes).toHaveLength(2);
    const [first, second] = submitTimes as [number, number];
    expect(second - first).toBeGreaterThanOrEqual(RETRY_AFTER_MS);
  });
});
