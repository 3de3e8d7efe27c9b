/**
 * The batch workflow under a submit lease (contracts/submit-lease.ts), on the time-skipping server
 * with a fake service: every branch of the job workflow's lease, per item: the extension succeeds;
 * an uncertain submit's orphan reports by webhook within the lease and is adopted (its watcher's
 * looks extend it);
 * no orphan reports and the item is submitted again after the lease and the webhook window; the
 * extension meets a 404 (the lease ran out) and the item is submitted again; the extension gets no
 * answer until the lease ends and the watcher's 404 tells that the job is gone.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import {
  DEFAULT_LEASE_MS,
  orphanWaitUntil,
  WEBHOOK_MARGIN_MS,
  WEBHOOK_RETRY_WINDOW_MS,
} from '../../contracts/submit-lease';
import { jobWebhookSignal } from '../../workflows/job/job-definitions';
import { batchSuite, type Fate, fakeService, quietRuntime, until, withWorker } from './batch-harness';

quietRuntime();

/** A lease shorter than the looks take (contracts/submit-lease.ts): extended by an activity. */
const LEASE = { ms: 30_000 };

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  job: { submitLease: LEASE.ms },
  ...extra,
});

describe('batch workflow under a submit lease', () => {
  const suite = batchSuite('batch-lease-wf');
  const { start } = suite;

  it("extends every new job's lease to the caller's ttl, one activity for the page", async () => {
    const fake = fakeService(5, () => 'held', LEASE);
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ pageSize: 5 }));
      await until(() => fake.extensions.length === 5, 'the five leases extended');
      fake.releaseAll();
      return handle.result();
    });
    expect(summary).toMatchObject({
      counts: { completed: 5 },
      submissions: 5,
      uncertainSubmits: 0,
      lease: { uncertainAdopted: 0, resubmittedAfterLease: 0, leaseLapses: 0 },
    });
    expect(fake.extensions.map((e) => e.answer)).toEqual(Array(5).fill('extended'));
    // The caller's ttl (the service default here), counted from submission as the service counts it.
    expect(new Set(fake.extensions.map((e) => e.ttl)).size).toBe(1);
    expect(fake.extensions[0]?.ttl).toBeGreaterThan(LEASE.ms);
  });

  it("leaves a long lease to the watcher's look at the job: no extension activity", async () => {
    const fake = fakeService(4, () => 'COMPLETED', { ms: DEFAULT_LEASE_MS });
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (await start(queue, input({ pageSize: 4, job: { submitLease: 'auto' } }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 4 }, submissions: 4, lease: { leaseLapses: 0 } });
    expect(fake.extensions).toEqual([]);
    expect(fake.extensionsByLook.map((extension) => extension.i).sort()).toEqual([0, 1, 2, 3]);
  });

  it('extends a long lease with an activity while every watcher is taken and its job has none', async () => {
    const fake = fakeService(40, () => 'held', { ms: DEFAULT_LEASE_MS });
    // The first eight watchers look at nothing until released: every watcher is taken.
    const watch = fake.activities.watchBatchJobs;
    let watchers = 0;
    let released = false;
    fake.activities.watchBatchJobs = async (args) => {
      if (++watchers <= 8)
        while (!released) {
          Context.current().heartbeat();
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      return watch(args);
    };
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(
        queue,
        input({ pageSize: 2, maxConcurrency: 40, job: { submitLease: 'auto' } }),
      );
      await until(() => fake.submitsPerItem.size === 40, 'every item submitted');
      await until(() => fake.extensions.length > 0, 'a lease extended by an activity');
      released = true;
      await until(
        () => fake.extensions.length + fake.extensionsByLook.length >= 40,
        'every lease extended, by a look or an activity',
      );
      fake.releaseAll();
      return handle.result();
    });
    expect(summary).toMatchObject({ counts: { completed: 40 }, submissions: 40, lease: { leaseLapses: 0 } });
    expect(fake.extensions.length).toBeGreaterThan(0);
    expect(fake.extensionsByLook.length).toBeGreaterThan(0);
  });

  it("adopts an uncertain submit's orphan that reports by webhook within the lease; its watcher's look extends it", async () => {
    const fake = fakeService(
      4,
      (i, attempt): Fate => (i === 2 && attempt === 1 ? { submit: 'orphan' } : 'COMPLETED'),
      LEASE,
    );
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ pageSize: 4 }));
      await until(() => fake.orphans.length === 1, 'the orphan created');
      const orphan = fake.orphans[0] as { i: number; id: string };
      await handle.signal(jobWebhookSignal, { jobId: orphan.id, status: 'COMPLETED', item: orphan.i });
      return handle.result();
    });
    const orphan = fake.orphans[0] as { i: number; id: string };
    expect(summary).toMatchObject({
      counts: { completed: 4 },
      submissions: 4,
      uncertainSubmits: 1,
      lease: { uncertainAdopted: 1, resubmittedAfterLease: 0, leaseLapses: 0 },
    });
    expect(fake.submitsPerItem.get(2)).toBe(1);
    expect(fake.lines.find((line) => line.index === 2)).toMatchObject({
      status: 'COMPLETED',
      jobId: orphan.id,
    });
    // Adopted within the lease: long before the lease and the webhook window were over.
    expect(summary.elapsedMs).toBeLessThan(orphanWaitUntil(0, LEASE.ms, true));
    // Its lease went to the caller's ttl with the watcher's look, not with an activity of its own.
    expect(fake.extensionsByLook).toEqual([{ i: 2, id: orphan.id, ttl: expect.any(Number) }]);
    expect(fake.extensions.filter((extension) => extension.i === 2)).toEqual([]);
  });

  it('submits an uncertain item again once the lease and the webhook window pass with no report', async () => {
    let submits = (_i: number) => 0;
    const fake = fakeService(
      3,
      (i): Fate => (i === 1 && submits(1) === 1 ? { submit: 'uncertain' } : 'COMPLETED'),
      LEASE,
    );
    submits = (i) => fake.submitsPerItem.get(i) ?? 0;
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (await start(queue, input())).result(),
    );
    expect(summary).toMatchObject({
      counts: { completed: 3, uncertain: 0 },
      submissions: 4,
      uncertainSubmits: 1,
      lease: { uncertainAdopted: 0, resubmittedAfterLease: 1, leaseLapses: 0 },
    });
    expect(fake.submitsPerItem.get(1)).toBe(2);
    // Not one moment before no orphan could still run or report.
    expect(summary.elapsedMs).toBeGreaterThanOrEqual(LEASE.ms + WEBHOOK_RETRY_WINDOW_MS + WEBHOOK_MARGIN_MS);
  });

  it('submits an item again when its extension meets a 404 (the lease ran out)', async () => {
    let first: string | undefined;
    const fake = fakeService(3, (i, attempt): Fate => (i === 0 && attempt === 1 ? 'held' : 'COMPLETED'), {
      ...LEASE,
      extend: (i, jobId) => {
        if (i !== 0) return 'extended';
        first ??= jobId;
        return jobId === first ? 'gone' : 'extended';
      },
    });
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (await start(queue, input())).result(),
    );
    expect(summary).toMatchObject({
      counts: { completed: 3, expired: 0 },
      submissions: 4,
      lease: { uncertainAdopted: 0, resubmittedAfterLease: 0, leaseLapses: 1 },
    });
    expect(fake.submitsPerItem.get(0)).toBe(2);
    expect(fake.lines.find((line) => line.index === 0)?.jobId).not.toBe(first);
  });

  it('tries the leases again at once when the worker extending them dies (no heartbeat): none lapses', async () => {
    const fake = fakeService(3, (): Fate => 'held', LEASE);
    const extend = fake.activities.extendBatchLeases;
    let calls = 0;
    fake.activities.extendBatchLeases = async (args) => {
      // The first worker dies holding the page: no heartbeat, no answer.
      if (++calls === 1) await Context.current().sleep(10 * LEASE.ms);
      return extend(args);
    };
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ pageSize: 3 }));
      // Moves the test server's clock past the heartbeat timeout (a quarter of the lease).
      await suite.env.sleep(LEASE.ms / 2);
      await until(() => fake.extensions.length === 3, 'the leases extended by a second try');
      fake.releaseAll();
      return handle.result();
    });
    expect(calls).toBe(2);
    expect(summary).toMatchObject({
      counts: { completed: 3 },
      submissions: 3,
      lease: { leaseLapses: 0 },
    });
    expect(fake.extensions.map((e) => e.answer)).toEqual(Array(3).fill('extended'));
  });

  it('leaves a job whose extension got no answer to the watcher: its 404 is a lapse, submitted again', async () => {
    let first: string | undefined;
    const fake = fakeService(3, (i, attempt): Fate => (i === 0 && attempt === 1 ? 'held' : 'COMPLETED'), {
      ...LEASE,
      extend: (i, jobId) => {
        if (i !== 0) return 'extended';
        first ??= jobId;
        if (jobId !== first) return 'extended';
        // Every try failed until the lease ended; the service deleted the job at its lease.
        fake.jobs.delete(jobId);
        return 'unknown';
      },
    });
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (await start(queue, input())).result(),
    );
    expect(summary).toMatchObject({
      counts: { completed: 3, expired: 0 },
      submissions: 4,
      lease: { leaseLapses: 1 },
    });
    expect(fake.submitsPerItem.get(0)).toBe(2);
  });
});
