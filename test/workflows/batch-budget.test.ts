/**
 * The batch's cost and budget on the time-skipping server with a fake service whose watcher
 * reports each finished run's estimate: the running total in the summary and the progress, a
 * retried item's runs summed on its line, and a budget that stops new submissions while the jobs
 * in flight finish and count, ending in BatchBudgetExceeded with the summary.
 */
import { describe, expect, it } from 'vitest';
import { type BatchInput, parseBatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import { batchProgressQuery } from '../../workflows/batch/batch-definitions';
import { batchSuite, failureOf, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('batch cost and budget', () => {
  const suite = batchSuite('batch-cost');
  const { start } = suite;

  it('refuses a budget that is not a positive number, naming the field', () => {
    expect(parseBatchInput(input({ budget: 0 }))).toMatchObject({ ok: false, field: 'budget' });
    expect(parseBatchInput(input({ budget: -1 }))).toMatchObject({ ok: false, field: 'budget' });
    expect(parseBatchInput(input({ budget: Number.POSITIVE_INFINITY }))).toMatchObject({
      ok: false,
      field: 'budget',
    });
    expect(parseBatchInput(input({ budget: 2.5 }))).toMatchObject({ ok: true, value: { budget: 2.5 } });
  });

  it('keeps a running total and sums a retried item runs on its line', async () => {
    // Item 1 fails once and is retried: its line carries both runs.
    const fake = fakeService(
      6,
      (i, attempt) => (i === 1 && attempt === 1 ? 'FAILED' : 'COMPLETED'),
      undefined,
      (i, attempt) => 0.25 * (i + 1) + (attempt > 1 ? 0.125 : 0),
    );
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(
        queue,
        input({ job: { retry: { maxRetries: 1, initialInterval: 1_000 } }, pageSize: 2 }),
      );
      return handle.result();
    });
    // Runs: items 0..5 once (0.25 * (1+...+6) = 5.25) plus item 1's retry (0.5 + 0.125).
    expect(summary.cost).toEqual({ amount: 5.875, currency: 'USD', items: 7 });
    expect(summary).not.toHaveProperty('budgetExceeded');
    expect(summary).not.toHaveProperty('stoppedBecause');
  });

  it('stops submitting once the estimate reaches the budget; jobs in flight finish and count', async () => {
    // Item 0 finishes at once and costs the whole budget; items 1 to 3 are in flight until released.
    // Both pages go out in the first turn (4 slots, pages of 2), so 4 items are submitted.
    const fake = fakeService(
      10,
      (i) => (i === 0 ? 'COMPLETED' : 'held'),
      undefined,
      (i) => (i === 0 ? 5 : 1),
    );
    // Any look after the one that saw item 0 finish releases the jobs in flight: the workflow has
    // taken the budget in by then (a look starts only from a workflow task).
    let itemZeroSeen = false;
    const watch = fake.activities.watchBatchJobs;
    const activities = {
      ...fake.activities,
      watchBatchJobs: async (args: Parameters<typeof watch>[0]) => {
        if (itemZeroSeen) fake.releaseAll();
        const answer = await watch(args);
        if (answer.changes.some((change) => change.i === 0)) itemZeroSeen = true;
        return answer;
      },
    };
    const failure = await withWorker(suite.env, suite.bundle, activities, async (queue) => {
      const handle = await start(queue, input({ budget: 5, maxConcurrency: 4, pageSize: 2 }));
      const failure = await failureOf(handle.result());
      // The progress query carries the same running total and budget.
      expect(await handle.query(batchProgressQuery)).toMatchObject({
        cursor: 4,
        inFlight: 0,
        budget: 5,
        budgetExceeded: true,
        cost: { amount: 8, currency: 'USD', items: 4 },
      });
      return failure;
    });
    // The jobs in flight when the budget was reached finished and were recorded, each sent once.
    expect(fake.lines.map((line) => line.index).sort()).toEqual([0, 1, 2, 3]);
    expect([...fake.submitsPerItem.values()]).toEqual([1, 1, 1, 1]);
    expect(failure.type).toBe('BatchBudgetExceeded');
    expect(failure.message).toMatch(/reached the budget 5/);
    const summary = failure.details?.[0] as BatchSummary;
    expect(summary).toMatchObject({
      total: 10,
      counts: { completed: 4 },
      failures: 0,
      notStarted: 6,
      submissions: 4,
      budget: 5,
      budgetExceeded: true,
      stoppedBecause: 'budget',
      toleranceExceeded: false,
      cost: { amount: 8, currency: 'USD', items: 4 },
    });
    // Nothing past the cursor was ever submitted.
    expect([...fake.submitsPerItem.keys()].sort()).toEqual([0, 1, 2, 3]);
  });

  it('submits no item that would pass the budget, counting the jobs under way at the mean cost so far', async () => {
    // Every run costs 2 and the budget is 7: a third item fits (6), a fourth would pass it (8),
    // whatever order the runs finish in. The old rule ("reached") would have run 4.
    const fake = fakeService(
      10,
      () => 'COMPLETED',
      undefined,
      () => 2,
    );
    const failure = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ budget: 7, maxConcurrency: 2, pageSize: 1 }));
      return failureOf(handle.result());
    });
    expect(failure.type).toBe('BatchBudgetExceeded');
    expect(failure.message).toMatch(/would have passed with one more item the budget 7/);
    expect(failure.details?.[0]).toMatchObject({
      total: 10,
      counts: { completed: 3 },
      submissions: 3,
      notStarted: 7,
      budgetExceeded: true,
      stoppedBecause: 'budget',
      cost: { amount: 6, items: 3 },
    });
    expect([...fake.submitsPerItem.keys()].sort()).toEqual([0, 1, 2]);
  });
});
