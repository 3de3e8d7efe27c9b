/**
 * The batch workflow over a route on the time-skipping server, with a fake service of several
 * endpoints: an endpoint that starves its queue is drained and its queued jobs withdrawn to the
 * next one; a capacity failure moves its item to the next endpoint, and repeated ones drain it;
 * every item completes once, and the results and the summary say where.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { BatchActivities } from '../../activities/batch';
import type { RouteActivities } from '../../activities/route';
import type { BatchInput } from '../../contracts/batch-input';
import type { BatchResultLine } from '../../contracts/batch-summary';
import type { ItemChange } from '../../contracts/batch-types';
import { isCapacityFailure } from '../../contracts/route';
import { batchSuite, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

interface Job {
  i: number;
  endpointId: string;
  status: string;
  looks: number;
}

/**
 * Endpoints by id (answers in the order the workflow asks): a `starved` one keeps its jobs IN_QUEUE and shows no idle worker; `fails`
 * says which items fail (with that error text) on which endpoint. Every other job completes at
 * its first look.
 */
function routeService(
  total: number,
  options: {
    starved?: string[];
    fails?: (i: number, endpointId: string) => string | undefined;
    /** Endpoints whose jobs complete at their second look. */
    slow?: string[];
    /** A starved endpoint gets its workers back once its queue is withdrawn. */
    restoreOnWithdrawal?: boolean;
    /** Endpoints that no longer exist: every submit there answers 404. */
    gone?: string[];
    /** Maximum worker counts the account's listing gives (none: unknown). */
    workersMax?: Record<string, number>;
    /** Endpoints whose gate answers that they are paused: every page comes back unsent. */
    paused?: string[];
  },
) {
  const jobs = new Map<string, Job>();
  const lines: BatchResultLine[] = [];
  const overrides: Array<{ endpointId: string; inputOverrides?: Record<string, unknown> }> = [];
  const withdrawals: string[] = [];
  const pages: Array<{ endpointId: string; size: number }> = [];
  const starved = new Set(options.starved ?? []);
  let nextId = 0;
  const unchanged = () =>
    ApplicationFailure.create({
      type: 'JobUnchanged',
      message: 'nothing finished',
      nextRetryDelay: 1_000,
      category: ApplicationFailureCategory.BENIGN,
    });
  const batch: Partial<BatchActivities> = {
    async stageBatchItems() {
      return { batchKey: 'batch-route', manifestKey: 'batch-route/items.jsonl', total };
    },
    async submitBatchPage({ endpointId, indexes, inputOverrides }) {
      pages.push({ endpointId, size: indexes.length });
      overrides.push({ endpointId, ...(inputOverrides ? { inputOverrides } : {}) });
      if (options.paused?.includes(endpointId)) return { results: [], unsent: indexes.slice(), paused: true };
      if (options.gone?.includes(endpointId)) {
        const rejected = { type: 'NotFound', message: `endpoint ${endpointId} not found`, retryable: false };
        return { results: indexes.map((i) => ({ i, rejected })) };
      }
      return {
        results: indexes.map((i) => {
          const id = `job-${endpointId}-${i}-${nextId++}`;
          jobs.set(id, { i, endpointId, status: 'IN_QUEUE', looks: 0 });
          return { i, id };
        }),
      };
    },
    async watchBatchJobs({ endpointId, items, capacityFailures }) {
      const changes: ItemChange[] = [];
      for (const [i, id, , attempts, , , hops] of items) {
        const job = jobs.get(id) as Job;
        expect(job.endpointId).toBe(endpointId);
        job.looks += 1;
        const slow = options.slow?.includes(endpointId) && job.looks < 2;
        if (job.status === 'IN_QUEUE' && !starved.has(endpointId) && !slow) {
          const error = options.fails?.(i, endpointId);
          job.status = error ? 'FAILED' : 'COMPLETED';
        }
        if (job.status === 'IN_QUEUE') continue;
        if (job.status === 'COMPLETED')
          lines.push({
            index: i,
            jobId: id,
            endpointId,
            ...(hops ? { hops } : {}),
            status: 'COMPLETED',
            attempts,
            submissions: 0,
          });
        const error = job.status === 'FAILED' ? options.fails?.(i, endpointId) : undefined;
        const pattern =
          error === undefined ? undefined : capacityFailures?.find((p) => isCapacityFailure(error, [p]));
        changes.push({
          i,
          status: job.status,
          at: Date.now(),
          ...(pattern ? { capacityFailure: pattern } : {}),
        });
      }
      if (changes.length === 0) throw unchanged();
      return { changes, running: 0 };
    },
    async retryBatchJobs({ items }) {
      return {
        results: items.map(([i, id]) => {
          (jobs.get(id) as Job).status = 'IN_QUEUE';
          return { i, status: 'IN_QUEUE' };
        }),
      };
    },
    async cancelBatchJobs({ items }) {
      return { results: items.map(([i]) => ({ i, status: 'CANCELLED' })) };
    },
    async recordBatchResults({ lines: written }) {
      lines.push(...written);
    },
  };
  const route: Partial<RouteActivities> = {
    async endpointWorkers() {
      return { workersMax: options.workersMax ?? {} };
    },
    async endpointCapacity({ endpointId }) {
      return starved.has(endpointId)
        ? { idle: 0, running: 0, inQueue: 1, throttled: 1 }
        : { idle: 1, running: 0, inQueue: 0 };
    },
    async withdrawQueuedJobs({ jobs: asked }) {
      return {
        results: asked.map(([i, jobId]) => {
          const job = jobs.get(jobId) as Job;
          if (job.status !== 'IN_QUEUE') return { i, jobId, outcome: 'ended' as const };
          job.status = 'CANCELLED';
          withdrawals.push(jobId);
          if (options.restoreOnWithdrawal) starved.delete(job.endpointId);
          return { i, jobId, outcome: 'withdrawn' as const };
        }),
      };
    },
  };
  return { activities: { ...batch, ...route }, jobs, lines, overrides, withdrawals, starved, pages };
}

const input = (extra: Partial<BatchInput>): BatchInput => ({
  items: { manifest: { key: 'items.jsonl' } },
  job: { submitLease: false },
  ...extra,
});

/** Each item's COMPLETED jobs: exactly one per item, or the test says which. */
function completedPerItem(service: ReturnType<typeof routeService>): Map<number, Job[]> {
  const out = new Map<number, Job[]>();
  for (const job of service.jobs.values())
    if (job.status === 'COMPLETED') out.set(job.i, [...(out.get(job.i) ?? []), job]);
  return out;
}

describe('batch workflow over a route', () => {
  const suite = batchSuite('batch-route');

  it("sizes each endpoint's window by its workers (and a quarter more queued): the rest flows to the next", async () => {
    const service = routeService(30, { slow: ['a', 'b'], workersMax: { a: 4, b: 8 } });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: { endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }] },
            maxConcurrency: 100,
            pageSize: 100,
          }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({ total: 30, counts: { completed: 30 } });
    // a holds 5 jobs in flight (4 workers and a quarter more), b 10; never a page beyond them.
    // The first page of each goes out at once (their order of arrival is the server's to choose).
    const firsts = service.pages.slice(0, 2).sort((x, y) => x.endpointId.localeCompare(y.endpointId));
    expect(firsts).toEqual([
      { endpointId: 'a', size: 5 },
      { endpointId: 'b', size: 10 },
    ]);
    expect(service.pages.every((page) => page.size <= (page.endpointId === 'a' ? 5 : 10))).toBe(true);
    expect(completedPerItem(service).size).toBe(30);
  });

  it('sends every page to the next endpoint while the first is paused, holding none back for it', async () => {
    const service = routeService(30, { paused: ['a'] });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: { endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }] },
            maxConcurrency: 10,
            pageSize: 5,
          }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({ total: 30, counts: { completed: 30 } });
    expect([...service.jobs.values()].every((job) => job.endpointId === 'b')).toBe(true);
    // a was asked only until its first paused answers came: then held, it had no room.
    expect(service.pages.filter((page) => page.endpointId === 'a').length).toBeLessThanOrEqual(2);
    expect(completedPerItem(service).size).toBe(30);
  });

  it('drains an endpoint that starves its queue: its queued jobs are withdrawn to the next one', async () => {
    const service = routeService(40, { starved: ['a'] });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: {
              endpoints: [{ endpointId: 'a' }, { endpointId: 'b', inputOverrides: { precision: 'fp16' } }],
              queueDelayLimit: '5 seconds',
              recheckAfter: '1 hour',
            },
            maxConcurrency: 10,
            pageSize: 5,
          }),
        )
      ).result(),
    );
    // The first window went to a, where nothing starts; withdrawn, everything ran on b.
    expect(service.withdrawals).toHaveLength(10);
    expect(summary).toMatchObject({
      total: 40,
      counts: { completed: 40 },
      hops: 10,
      endpoints: { a: { completed: 0, failed: 0, moved: 10 }, b: { completed: 40, failed: 0, moved: 0 } },
    });
    expect(summary.endpoints?.a?.drainedUntil).toBeGreaterThan(Date.now());
    const completed = completedPerItem(service);
    expect(completed.size).toBe(40);
    expect([...completed.values()].every((runs) => runs.length === 1 && runs[0]?.endpointId === 'b')).toBe(
      true,
    );
    expect(service.lines.filter((line) => line.hops === 1)).toHaveLength(10);
    // b's overrides ride with every page sent there; a has none.
    expect(
      service.overrides
        .filter((page) => page.endpointId === 'b')
        .every((page) => page.inputOverrides?.precision === 'fp16'),
    ).toBe(true);
    expect(
      service.overrides
        .filter((page) => page.endpointId === 'a')
        .every((page) => page.inputOverrides === undefined),
    ).toBe(true);
  }, 120_000);

  it('moves an item that failed for capacity to the next endpoint, and drains one that keeps failing', async () => {
    const oom = new Set([1, 2, 3, 4]);
    const service = routeService(30, {
      fails: (i, endpointId) =>
        endpointId === 'a' && oom.has(i) ? 'torch.OutOfMemoryError: CUDA out of memory' : undefined,
    });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: {
              endpoints: [
                { endpointId: 'b', pricePerSecond: 0.002 },
                { endpointId: 'a', pricePerSecond: 0.001 },
              ],
              capacityFailures: ['out of memory'],
              recheckAfter: '1 hour',
            },
            maxConcurrency: 5,
            pageSize: 5,
          }),
        )
      ).result(),
    );
    // a is the cheaper: first in the route; its capacity failures moved their items to b, and the
    // third drained it, so the rest ran on b.
    expect(summary.counts.completed).toBe(30);
    expect(summary.hops).toBeGreaterThanOrEqual(3);
    expect(summary.endpoints?.a?.moved).toBe(summary.hops);
    expect(summary.endpoints?.a?.drainedUntil).toBeDefined();
    expect((summary.endpoints?.a?.completed ?? 0) + (summary.endpoints?.b?.completed ?? 0)).toBe(30);
    const lines = new Map(service.lines.map((line) => [line.index, line]));
    for (const i of oom)
      expect(lines.get(i)).toMatchObject({ status: 'COMPLETED', endpointId: 'b', hops: 1 });
    expect(completedPerItem(service).size).toBe(30);
  }, 120_000);

  it('tries a drained endpoint again after recheckAfter: a probe page, then its whole window', async () => {
    const service = routeService(200, { starved: ['a'], slow: ['b'], restoreOnWithdrawal: true });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: {
              endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }],
              queueDelayLimit: '5 seconds',
              recheckAfter: '10 seconds',
            },
            maxConcurrency: 10,
            pageSize: 5,
          }),
        )
      ).result(),
    );
    expect(service.withdrawals).toHaveLength(10);
    expect(summary.counts.completed).toBe(200);
    const a = summary.endpoints?.a;
    const b = summary.endpoints?.b;
    // b took the work while a was drained; a took it back once its probe completed.
    expect(b?.completed).toBeGreaterThan(0);
    expect(a?.completed).toBeGreaterThan(5);
    expect((a?.completed ?? 0) + (b?.completed ?? 0)).toBe(200);
    expect(a?.drainedUntil).toBeUndefined();
    expect(completedPerItem(service).size).toBe(200);
    expect([...completedPerItem(service).values()].every((runs) => runs.length === 1)).toBe(true);
  }, 120_000);

  it('sends the items of an endpoint that is gone (its submits answer 404) to the next one', async () => {
    const service = routeService(20, { gone: ['a'] });
    const summary = await withWorker(suite.env, suite.bundle, service.activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({
            route: { endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }], recheckAfter: '1 hour' },
            maxConcurrency: 10,
            pageSize: 5,
          }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({
      counts: { completed: 20, rejected: 0 },
      endpoints: { a: { completed: 0, failed: 0 }, b: { completed: 20 } },
    });
    expect(summary.endpoints?.a?.drainedUntil).toBeDefined();
    // Only the pages sent before the first answer (two submits at once per endpoint) went to a.
    expect(service.overrides.filter((page) => page.endpointId === 'a').length).toBeLessThanOrEqual(2);
  }, 120_000);
});
