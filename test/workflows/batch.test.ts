/**
 * The batch workflow on the time-skipping server with a fake service: failure tolerance by count
 * and by percentage, per-item retries, uncertain submits, pause, resume and a concurrency change
 * while running, and cancel. Continue-as-new is in batch-continue.test.ts (on the dev server).
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../../workflows/batch-definitions';
import type { BatchInput, BatchSummary } from '../../workflows/batch-input';
import {
  batchSuite,
  type Fate,
  failureOf,
  fakeService,
  quietRuntime,
  until,
  withWorker,
} from './batch-harness';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('batch workflow', () => {
  const suite = batchSuite('batch-wf');
  const { start } = suite;

  const failsForGood =
    (fails: Set<number>) =>
    (i: number): Fate =>
      fails.has(i) ? 'FAILED' : 'COMPLETED';

  it('completes within a tolerance by count, and fails past it with the same summary', async () => {
    const fails = new Set([2, 5, 11]);
    const ok = fakeService(20, failsForGood(fails));
    const summary = await withWorker(suite.env, suite.bundle, ok.activities, async (queue) =>
      (await start(queue, input({ failureTolerance: { count: 3 }, pageSize: 5 }))).result(),
    );
    expect(summary).toMatchObject({
      total: 20,
      counts: { completed: 17, failed: 3 },
      failures: 3,
      notStarted: 0,
      submissions: 20,
      toleranceExceeded: false,
    });
    expect(
      ok.lines
        .filter((line) => line.status === 'FAILED')
        .map((line) => line.index)
        .sort(),
    ).toEqual([11, 2, 5]);

    const over = fakeService(20, failsForGood(fails));
    const failure = await withWorker(suite.env, suite.bundle, over.activities, async (queue) =>
      failureOf((await start(queue, input({ failureTolerance: { count: 2 }, pageSize: 5 }))).result()),
    );
    expect(failure.type).toBe('BatchToleranceExceeded');
    const carried = failure.details?.[0] as BatchSummary;
    expect(carried).toMatchObject({ total: 20, toleranceExceeded: true, results: { key: 'batch-test' } });
    expect(carried.counts.failed).toBeGreaterThanOrEqual(3);
    // Nothing is lost: every item that ended has its line, the rest are counted as not started.
    expect(carried.counts.completed + carried.failures + carried.notStarted).toBe(20);
    expect(over.lines).toHaveLength(carried.counts.completed + carried.failures);
  });

  it('measures the tolerance as a percentage of all items', async () => {
    const fails = new Set([1, 2, 3]); // 15% of 20
    const within = fakeService(20, failsForGood(fails));
    const summary = await withWorker(suite.env, suite.bundle, within.activities, async (queue) =>
      (await start(queue, input({ failureTolerance: { percentage: 15 } }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 17, failed: 3 }, toleranceExceeded: false });

    const beyond = fakeService(20, failsForGood(fails));
    const failure = await withWorker(suite.env, suite.bundle, beyond.activities, async (queue) =>
      failureOf((await start(queue, input({ failureTolerance: { percentage: 10 } }))).result()),
    );
    expect(failure.type).toBe('BatchToleranceExceeded');
    expect((failure.details?.[0] as BatchSummary | undefined)?.counts.failed).toBe(3);
  });

  it('retries a failed item with /retry, and follows onUncertainSubmit for uncertain submits', async () => {
    const fake = fakeService(6, (i, attempt) => {
      if (i === 0) return attempt === 1 ? 'FAILED' : 'COMPLETED';
      if (i === 1) return attempt === 1 ? 'TIMED_OUT' : 'COMPLETED';
      if (i === 2) return { submit: 'uncertain' };
      if (i === 3) return { submit: 'rejected' };
      return 'COMPLETED';
    });
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (
        await start(
          queue,
          input({
            job: { retry: { maxRetries: 1, initialInterval: '1 minute' } },
            failureTolerance: { count: 2 },
          }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({
      counts: { completed: 4, uncertain: 1, rejected: 1 },
      retries: 2,
      submissions: 5,
      uncertainSubmits: 1,
    });
    expect(fake.lines.find((line) => line.index === 0)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
    expect(fake.lines.find((line) => line.index === 2)).toMatchObject({
      status: 'UNCERTAIN',
      submissions: 1,
    });

    // resubmit: the uncertain item is sent again (at-least-once, as chosen) up to maxSubmissions.
    let uncertainOnce = true;
    const again = fakeService(3, (i) => {
      if (i === 1 && uncertainOnce) {
        uncertainOnce = false;
        return { submit: 'uncertain' };
      }
      return 'COMPLETED';
    });
    const resubmitted = await withWorker(suite.env, suite.bundle, again.activities, async (queue) =>
      (await start(queue, input({ job: { onUncertainSubmit: 'resubmit' } }))).result(),
    );
    expect(resubmitted).toMatchObject({ counts: { completed: 3 }, submissions: 4, uncertainSubmits: 1 });
    expect(again.submitsPerItem.get(1)).toBe(2);
  });

  it('after a submit that died mid-page, keeps the jobs its heartbeat named; only the rest are uncertain', async () => {
    const fake = fakeService(4);
    let first = true;
    const activities = {
      ...fake.activities,
      async submitBatchPage(request: Parameters<typeof fake.activities.submitBatchPage>[0]) {
        if (!first) return fake.activities.submitBatchPage(request);
        first = false;
        // Items 0 and 1 are created and reported by heartbeat; then the worker "dies" (goes silent).
        const { results } = await fake.activities.submitBatchPage({ ...request, indexes: [0, 1] });
        Context.current().heartbeat({ created: results });
        await Context.current().sleep(8_000);
        return { results: [] };
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (
        await start(
          queue,
          input({ pageSize: 4, job: { submitTimeout: '5 seconds', onUncertainSubmit: 'resubmit' } }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 4 }, uncertainSubmits: 2, submissions: 6 });
    // One job each: 0 and 1 from the dead page (adopted from its heartbeat), 2 and 3 sent again.
    expect([0, 1, 2, 3].map((i) => fake.submitsPerItem.get(i))).toEqual([1, 1, 1, 1]);
    expect(fake.jobs.size).toBe(4);
  });

  it('watches a page submitted after its watcher started at once, not when an older job finishes', async () => {
    // Items 0 and 1 hang until the end; the page of 2 and 3 is answered only after a watcher has
    // started on 0 and 1. A single watcher retried with its first list would never see 2 and 3.
    const fake = fakeService(4, (i) => (i < 2 ? 'held' : 'COMPLETED'));
    let firstWatcherStarted!: () => void;
    const watcherStarted = new Promise<void>((resolve) => {
      firstWatcherStarted = resolve;
    });
    const seen = new Set<number>();
    const { submitBatchPage, watchBatchJobs } = fake.activities;
    const activities = {
      ...fake.activities,
      async submitBatchPage(args: Parameters<typeof submitBatchPage>[0]) {
        if (args.indexes.includes(2)) await watcherStarted;
        return submitBatchPage(args);
      },
      async watchBatchJobs(args: Parameters<typeof watchBatchJobs>[0]) {
        if (args.items.some(([i]) => i === 0)) firstWatcherStarted();
        const answer = await watchBatchJobs(args);
        for (const change of answer.changes) seen.add(change.i);
        // Once the late page is seen finished, the old jobs may end too.
        if (seen.has(2) && seen.has(3)) fake.releaseAll();
        return answer;
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await start(queue, input({ pageSize: 2, maxConcurrency: 4 }))).result(),
    );
    expect(summary).toMatchObject({ total: 4, counts: { completed: 4 }, submissions: 4 });
    expect([...fake.submitsPerItem.values()]).toEqual([1, 1, 1, 1]);
    // The held jobs were released only after the late page had been seen: it was watched on its own.
    expect(fake.watched.some(([i]) => i === 2)).toBe(true);
  });

  it('pauses, resumes and changes its concurrency while running', async () => {
    const fake = fakeService(30, () => 'held');
    await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ maxConcurrency: 4, pageSize: 4 }));
      await until(() => fake.live() === 4, '4 jobs in flight');
      await handle.signal(pauseBatchSignal);
      await until(async () => (await handle.query(batchProgressQuery)).paused, 'paused');
      for (let k = 0; k < 4; k++) fake.release(k);
      await until(async () => (await handle.query(batchProgressQuery)).done === 4, '4 done');
      // Paused: the freed slots stay empty.
      expect(fake.live()).toBe(0);
      expect(fake.jobs.size).toBe(4);

      const refused = await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [0] }).then(
        () => undefined,
        (error: Error) => error,
      );
      expect(String((refused?.cause as Error | undefined)?.message)).toMatch(/maxConcurrency/);
      expect(await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [10] })).toBe(4);
      await handle.signal(resumeBatchSignal);
      await until(() => fake.live() === 10, '10 jobs in flight after the change');
      expect(fake.maxInFlight()).toBe(10);
      fake.releaseAll();
      const summary = await handle.result();
      expect(summary).toMatchObject({ counts: { completed: 30 }, submissions: 30 });
      expect(fake.maxInFlight()).toBe(10);
    });
  });

  it('cancels every job in flight, records them, and ends cancelled', async () => {
    const fake = fakeService(10, () => 'held');
    await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ maxConcurrency: 6, pageSize: 6 }));
      await until(() => fake.live() === 6, '6 jobs in flight');
      await handle.cancel();
      const error = await handle.result().then(
        () => undefined,
        (caught: Error) => caught,
      );
      expect((error?.cause as Error | undefined)?.name).toBe('CancelledFailure');
    });
    expect(fake.cancelled).toHaveLength(6);
    expect(fake.lines.filter((line) => line.status === 'CANCELLED')).toHaveLength(6);
    expect(fake.jobs.size).toBe(6);
  });
});
