/**
 * The batch workflow on the time-skipping server with a fake service: failure tolerance by count
 * and by percentage, per-item retries, per-item expiry, uncertain submits, pause, resume and a
 * concurrency change while running, cancel, and the facade's redrive of a finished batch.
 * Continue-as-new is in batch-continue.test.ts (on the dev server).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { afterAll, describe, expect, it } from 'vitest';
import { redriveBatch } from '../../client/batches';
import type { BatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import { createLocalBatchStore } from '../../stores/batch-store';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../../workflows/batch/batch-definitions';
import {
  batchSuite,
  type Fate,
  failureOf,
  fakeService,
  overStore,
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
  const dir = mkdtempSync(path.join(tmpdir(), 'batch-wf-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

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

  it('tries a /retry that went unanswered again, and the item completes', async () => {
    const fake = fakeService(2, (i, attempt) => (i === 0 && attempt === 1 ? 'FAILED' : 'COMPLETED'));
    const retryCalls: number[][] = [];
    const activities = {
      ...fake.activities,
      async retryBatchJobs(call: Parameters<typeof fake.activities.retryBatchJobs>[0]) {
        retryCalls.push(call.items.map(([i]) => i));
        if (retryCalls.length === 1) return { results: call.items.map(([i]) => ({ i, unanswered: true })) };
        return fake.activities.retryBatchJobs(call);
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (
        await start(queue, input({ job: { retry: { maxRetries: 1, initialInterval: '1 minute' } } }))
      ).result(),
    );
    expect(retryCalls).toEqual([[0], [0]]);
    expect(summary).toMatchObject({ counts: { completed: 2 }, retries: 1, submissions: 2 });
    expect(fake.lines.find((line) => line.index === 0)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
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

  it('ends an item whose job is gone (its ttl passed) EXPIRED, or submits it again with onExpired resubmit', async () => {
    // Item 1's first job has a 10 s ttl and never finishes: the service deletes it, and every look
    // after that answers 404. A job submitted again completes.
    const plan = (i: number, attempt: number): Fate =>
      i === 1 && attempt === 1 ? { expires: 10_000 } : 'COMPLETED';
    const failing = fakeService(4, plan);
    const summary = await withWorker(suite.env, suite.bundle, failing.activities, async (queue) =>
      (await start(queue, input({ failureTolerance: { count: 1 } }))).result(),
    );
    expect(failing.expired).toHaveLength(1);
    expect(summary).toMatchObject({
      total: 4,
      counts: { completed: 3, expired: 1 },
      failures: 1,
      notStarted: 0,
      submissions: 4,
      toleranceExceeded: false,
    });
    expect(failing.lines.find((line) => line.index === 1)).toEqual(
      expect.objectContaining({
        status: 'EXPIRED',
        jobId: failing.expired[0]?.id,
        submissions: 1,
        error: expect.stringContaining('its ttl passed'),
      }),
    );
    expect(failing.submitsPerItem.get(1)).toBe(1);

    const resubmitting = fakeService(4, plan);
    const again = await withWorker(suite.env, suite.bundle, resubmitting.activities, async (queue) =>
      (await start(queue, input({ job: { onExpired: 'resubmit' } }))).result(),
    );
    expect(resubmitting.expired).toHaveLength(1);
    expect(again).toMatchObject({ counts: { completed: 4, expired: 0 }, failures: 0, submissions: 5 });
    expect(resubmitting.submitsPerItem.get(1)).toBe(2);
    // The item's line is its second job's.
    const line = resubmitting.lines.find((entry) => entry.index === 1);
    expect(line).toMatchObject({ status: 'COMPLETED', attempts: 2 });
    expect(line?.jobId).not.toBe(resubmitting.expired[0]?.id);
  });

  it('redrives a finished batch: a new batch of exactly the items that did not complete', async () => {
    const store = createLocalBatchStore(dir);
    const manifest = 'redrive/items.jsonl';
    await store.writeLines(
      manifest,
      Array.from({ length: 10 }, (_, k) => JSON.stringify({ input: { item: k } })),
    );
    const fails = new Set([2, 5, 7]);
    const first = fakeService(10, failsForGood(fails));
    const { handle, summary } = await withWorker(
      suite.env,
      suite.bundle,
      overStore(first, store, dir),
      async (queue) => {
        const started = await start(
          queue,
          input({ items: { manifest: { key: manifest } }, failureTolerance: { count: 3 }, pageSize: 4 }),
        );
        return { handle: started, summary: await started.result() };
      },
    );
    expect(summary).toMatchObject({ total: 10, counts: { completed: 7, failed: 3 } });

    // Each submit of the redrive reads its items back from the new batch's manifest: which of the
    // first batch's items each index is.
    const second = fakeService(3);
    const submitted: Array<[index: number, item: number]> = [];
    const activities = {
      ...overStore(second, store, dir),
      async submitBatchPage(args: Parameters<typeof second.activities.submitBatchPage>[0]) {
        const lines = await store.readLines(args.manifestKey, args.indexes);
        args.indexes.forEach((index, k) => {
          submitted.push([index, (JSON.parse(lines[k] as string) as { input: { item: number } }).input.item]);
        });
        return second.activities.submitBatchPage(args);
      },
    };
    const redriven = await withWorker(suite.env, suite.bundle, activities, async (queue) => {
      const redrive = await redriveBatch(suite.env.client, {
        batch: handle.workflowId,
        workflowId: `${handle.workflowId}-redrive`,
        taskQueue: queue,
        changes: { maxConcurrency: 2 },
      });
      expect((await redrive.describe()).taskQueue).toBe(queue);
      return redrive.result();
    });
    // The failed items, numbered from 0 in their order, each submitted once.
    expect(submitted.sort((a, b) => a[0] - b[0])).toEqual([
      [0, 2],
      [1, 5],
      [2, 7],
    ]);
    expect(redriven).toMatchObject({
      batchId: `${handle.workflowId}-redrive`,
      endpointId: 'ep-1',
      total: 3,
      counts: { completed: 3, failed: 0 },
      failures: 0,
      notStarted: 0,
      submissions: 3,
    });
    expect(redriven.results.key).not.toBe(summary.results.key);
    // The change asked for: never more than 2 jobs in flight.
    expect(second.maxInFlight()).toBeLessThanOrEqual(2);
    // A finished batch with nothing left to redrive is refused.
    await expect(
      redriveBatch(suite.env.client, { batch: redriven.batchId, workflowId: 'none', taskQueue: 'none' }),
    ).rejects.toThrow(/no failed items/);
  });

  type FakeService = ReturnType<typeof fakeService>;
  type PageRequest = Parameters<FakeService['activities']['submitBatchPage']>[0];

  /** The fake's activities with the first page's submit done by `first`, the rest as usual. */
  function firstPageBy(fake: FakeService, first: (request: PageRequest) => Promise<never>) {
    let firstDone = false;
    return {
      ...fake.activities,
      async submitBatchPage(request: PageRequest) {
        if (firstDone) return fake.activities.submitBatchPage(request);
        firstDone = true;
        return first(request);
      },
    };
  }

  /** A batch of the fake's 4 items in one page, whose submits time out after 5 s. */
  const pageOfFour = (queue: string, onUncertainSubmit: 'fail' | 'resubmit') =>
    start(queue, input({ pageSize: 4, job: { submitTimeout: '5 seconds', onUncertainSubmit } }));

  it('after a submit that died mid-page, keeps the jobs its heartbeat named; only the rest are uncertain', async () => {
    const fake = fakeService(4);
    const activities = firstPageBy(fake, async (request) => {
      // Items 0 and 1 are created and reported by heartbeat; then the worker "dies" (goes silent).
      const { results } = await fake.activities.submitBatchPage({ ...request, indexes: [0, 1] });
      Context.current().heartbeat({ sending: true, created: results });
      // Silent until the worker stops: only the submit's timeout tells the workflow.
      return Context.current().cancelled;
    });
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await pageOfFour(queue, 'resubmit')).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 4 }, uncertainSubmits: 2, submissions: 6 });
    // One job each: 0 and 1 from the dead page (adopted from its heartbeat), 2 and 3 sent again.
    expect([0, 1, 2, 3].map((i) => fake.submitsPerItem.get(i))).toEqual([1, 1, 1, 1]);
    expect(fake.jobs.size).toBe(4);
  });

  it('queues again every item of a page whose submit timed out before its beat (the server lost the task)', async () => {
    const fake = fakeService(4);
    // Never got as far as its beat: to the workflow, a task no worker received.
    const activities = firstPageBy(fake, () => Context.current().cancelled);
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await pageOfFour(queue, 'fail')).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 4 }, uncertainSubmits: 0, submissions: 4 });
    expect([0, 1, 2, 3].map((i) => fake.submitsPerItem.get(i))).toEqual([1, 1, 1, 1]);
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

      const refused = await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [0] }).then(
        () => undefined,
        (error: Error) => error,
      );
      expect(String((refused?.cause as Error | undefined)?.message)).toMatch(/maxConcurrency/);
      // The update is a turn of the paused workflow's loop with 10 free slots and 26 items waiting:
      // one that ignored the pause would have started a submit in that same workflow task, and the
      // progress answered after it would show it (a cursor past 4, items in flight).
      expect(await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [10] })).toBe(4);
      expect(await handle.query(batchProgressQuery)).toMatchObject({
        paused: true,
        maxConcurrency: 10,
        done: 4,
        cursor: 4,
        inFlight: 0,
        submissions: 4,
      });
      expect(fake.submitsPerItem.size).toBe(4);
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
