/**
 * A batch whose endpoint's gate answers that the endpoint is paused: its pages come back unsent at
 * once, and the batch holds all its pages in the workflow (no worker slot held, no page sent
 * meanwhile), longer at each paused answer in a row as a job's tries wait (noRoomRetryDelayMs),
 * then sends every item once the endpoint resumes. On the time-skipping server; the pages' server
 * times are the activities' scheduled times. The hold is the endpoint's (engine/batch-route.ts
 * afterPageAnswer), so it crosses continue-as-new with the batch's state.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import { noRoomRetryDelayMs } from '../../engine/job-rules';
import { batchSuite, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

/**
 * Runs a batch of 6 items in pages of 2 on an endpoint paused for `pauseMs` after the first page:
 * the summary, the moments pages went out (several at once, a few ms apart) while it was paused,
 * and whether the batch continued as new.
 */
async function pausedBatch(
  suite: ReturnType<typeof batchSuite>,
  pauseMs: number,
  extra: Partial<BatchInput> = {},
) {
  const fake = fakeService(6);
  const pageTimes: number[] = [];
  const activities = {
    ...fake.activities,
    submitBatchPage: async (args: Parameters<typeof fake.activities.submitBatchPage>[0]) => {
      const at = Context.current().info.currentAttemptScheduledTimestampMs;
      pageTimes.push(at);
      if (at < (pageTimes[0] as number) + pauseMs)
        return { results: [], unsent: args.indexes.slice(), paused: true as const };
      return fake.activities.submitBatchPage(args);
    },
  };
  const { summary, continued } = await withWorker(suite.env, suite.bundle, activities, async (queue) => {
    const handle = await suite.start(queue, input({ pageSize: 2, ...extra }));
    const summary = await handle.result();
    // The last run's id, against the first's: another when the batch continued as new.
    const last = await suite.env.client.workflow.getHandle(handle.workflowId).describe();
    return { summary, continued: last.runId !== handle.firstExecutionRunId };
  });
  const moments: number[] = [];
  for (const at of [...pageTimes].sort((a, b) => a - b)) {
    if (moments.length === 0 || at - (moments[moments.length - 1] as number) > 500) moments.push(at);
  }
  const paused = moments.filter((at) => at < (pageTimes[0] as number) + pauseMs);
  return { summary, moments, paused, continued };
}

/** Each wait after a paused answer is longer than the one before, and no page went out before it was over. */
function expectGrowingWaits(moments: number[], paused: number[]): void {
  for (let tries = 1; tries < moments.length; tries++) {
    const gap = (moments[tries] as number) - (moments[tries - 1] as number);
    if (tries <= paused.length) expect(gap).toBeGreaterThanOrEqual(noRoomRetryDelayMs(tries));
  }
}

describe('a batch on a paused endpoint', () => {
  const suite = batchSuite('batch-paused');

  it('holds its pages in the workflow, a while longer at each paused answer, and sends each item once resumed', async () => {
    const { summary, moments, paused } = await pausedBatch(suite, 100_000);
    expect(summary).toMatchObject({ counts: { completed: 6 }, submissions: 6 });
    expectGrowingWaits(moments, paused);
    // 1, 2, 4 ... 64 s: seven waits reach past 100 s, so seven moments fell in the pause.
    expect(paused).toHaveLength(7);
  });

  it('carries its hold through continue-as-new: a new run sends no page before the hold is over', async () => {
    // Ten minutes paused: 1, 2, 4 ... 32 s, then a minute apart, about 16 paused answers, more
    // than a run of 200 events holds.
    const { summary, moments, paused, continued } = await pausedBatch(suite, 600_000, {
      maxEventsPerRun: 200,
    });
    expect(continued).toBe(true);
    expect(summary).toMatchObject({ counts: { completed: 6 }, submissions: 6 });
    expectGrowingWaits(moments, paused);
    expect(paused.length).toBeLessThanOrEqual(16);
  });
});
