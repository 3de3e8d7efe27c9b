/**
 * A batch over a route of two endpoints end to end: the real worker, the dev server, the emulator
 * over HTTP. Half way through, endpoint a loses its workers (the emulator starves it): its queued
 * jobs are withdrawn and run on b, every item completes exactly once, no item has a job that ran
 * on both endpoints, and the summary splits the items between them. And an item that runs out of
 * GPU memory on a (the oom template) completes on b.
 *
 * Time scale 100 with the submit lease off, as in batch.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  type BatchSummary,
  getBatchProgress,
  readBatchResults,
  startBatch,
} from '../../client/batches';
import { eventually, type JobStack, startJobStack } from '../support/integration';

const NO_LEASE = { submitLease: false } as const;
const ITEMS = 2_000;

describe('batch over a route on the emulator', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'batch-route', timeScale: 100, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  async function linesOf(summary: BatchSummary): Promise<BatchResultLine[]> {
    const lines: BatchResultLine[] = [];
    const store = stack.workerEnv.RESULT_STORE_DIR as string;
    for await (const line of readBatchResults(stack.client, { batch: summary, store })) lines.push(line);
    return lines;
  }

  /** The emulator's jobs (finished and removed ones too) of the endpoints, by item index. */
  function jobsByItem(endpoints: string[]) {
    const byItem = new Map<number, ReturnType<JobStack['control']['jobs']>>();
    for (const job of stack.control.jobs(undefined, { removed: true })) {
      if (!endpoints.includes(job.endpointId)) continue;
      const index = (job.input?.output as { index?: number } | undefined)?.index;
      if (index === undefined) throw new Error(`job ${job.id} names no item`);
      byItem.set(index, [...(byItem.get(index) ?? []), job]);
    }
    return byItem;
  }

  it(`moves the queue of an endpoint that loses its workers to the next one: ${ITEMS} items, each once`, async () => {
    const a = stack.endpoint({ workersMin: 0, workersMax: 100, flashBootType: 'FLASHBOOT' });
    const b = stack.endpoint({ workersMin: 0, workersMax: 100, flashBootType: 'FLASHBOOT' });
    // 2 s of service time each (20 ms here): short jobs, a queue that forms once a has no workers.
    const inline = Array.from({ length: ITEMS }, (_, i) => ({
      input: { sleepMs: 2_000, output: { index: i } },
    }));
    const started = Date.now();
    const handle = await startBatch(
      stack.client,
      {
        route: {
          endpoints: [{ endpointId: a }, { endpointId: b, inputOverrides: { on: 'b' } }],
          queueDelayLimit: '5 seconds',
          recheckAfter: '1 hour',
        },
        items: { inline },
        job: { ...NO_LEASE, polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 } },
        maxConcurrency: 200,
      },
      { workflowId: `batch-route-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    // Half way, on the batch's own count: a loses its workers (its queued jobs stay IN_QUEUE).
    await eventually(
      async () => (await getBatchProgress(stack.client, { batch: handle.workflowId })).done >= ITEMS / 2,
      300_000,
    );
    stack.control.starveEndpoint(a);
    const summary = await awaitBatch(stack.client, { batch: handle });
    const elapsed = Date.now() - started;

    const split = summary.endpoints ?? {};
    expect(summary).toMatchObject({ total: ITEMS, counts: { completed: ITEMS }, failures: 0 });
    expect(split[a]?.completed).toBeGreaterThan(0);
    expect(split[b]?.completed).toBeGreaterThan(0);
    expect((split[a]?.completed ?? 0) + (split[b]?.completed ?? 0)).toBe(ITEMS);
    expect(summary.hops).toBeGreaterThan(0);
    expect(split[a]?.moved).toBe(summary.hops);
    expect(split[a]?.drainedUntil).toBeDefined();

    // The service's side: one COMPLETED job per item; a job withdrawn from a never ran there.
    const byItem = jobsByItem([a, b]);
    expect(byItem.size).toBe(ITEMS);
    let moved = 0;
    for (const [index, jobs] of byItem) {
      expect(
        jobs.filter((job) => job.status === 'COMPLETED'),
        `item ${index}`,
      ).toHaveLength(1);
      const ranOn = new Set(jobs.filter((job) => (job.executionTime ?? 0) > 0).map((job) => job.endpointId));
      expect(ranOn.size, `item ${index} ran on ${[...ranOn].join(', ')}`).toBe(1);
      if (jobs.some((job) => job.endpointId === a && job.status === 'CANCELLED')) moved += 1;
    }
    expect(moved).toBe(summary.hops);
    // b's input overrides reached every job sent there.
    for (const jobs of byItem.values())
      for (const job of jobs) expect(job.input?.on).toBe(job.endpointId === b ? 'b' : undefined);

    // Each result line says where it ran (and that it moved).
    const lines = await linesOf(summary);
    expect(lines).toHaveLength(ITEMS);
    for (const line of lines) {
      const ran = byItem.get(line.index)?.find((job) => job.status === 'COMPLETED');
      expect(line).toMatchObject({ status: 'COMPLETED', endpointId: ran?.endpointId });
    }
    expect(lines.filter((line) => line.hops === 1)).toHaveLength(summary.hops ?? -1);
    console.log(
      `batch of ${ITEMS} over [a, b], a starved half way: ${elapsed} ms; ` +
        `a ${split[a]?.completed}, b ${split[b]?.completed}, ${summary.hops} moved; ` +
        `${summary.historyEvents} history events in ${summary.runs} run(s)`,
    );
  }, 600_000);

  it('completes on b an item that runs out of GPU memory on a', async () => {
    const a = stack.endpoint({ workersMin: 0, workersMax: 20, templateId: 'oom', gpuIds: 'AMPERE_16' });
    const b = stack.endpoint({ workersMin: 0, workersMax: 20 });
    // About a third of the inputs run out of memory on a; the same inputs complete on b.
    const inline = Array.from({ length: 20 }, (_, i) => ({ input: { output: { index: i }, oomShare: 0.3 } }));
    const handle = await startBatch(
      stack.client,
      {
        route: {
          endpoints: [{ endpointId: a }, { endpointId: b }],
          capacityFailures: ['CUDA out of memory'],
          recheckAfter: '1 hour',
        },
        items: { inline },
        job: NO_LEASE,
        maxConcurrency: 5,
        pageSize: 5,
      },
      { workflowId: `batch-route-oom-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, { batch: handle });
    expect(summary).toMatchObject({ total: 20, counts: { completed: 20 }, failures: 0, retries: 0 });
    const byItem = jobsByItem([a, b]);
    const outOfMemory = [...byItem]
      .filter(([, jobs]) => jobs.some((job) => job.endpointId === a && job.status === 'FAILED'))
      .map(([index]) => index);
    expect(outOfMemory.length).toBeGreaterThan(0);
    expect(summary.hops).toBe(outOfMemory.length);
    const lines = new Map((await linesOf(summary)).map((line) => [line.index, line]));
    for (const index of outOfMemory) {
      expect(
        byItem
          .get(index)
          ?.filter((job) => job.status === 'COMPLETED')
          .map((job) => job.endpointId),
      ).toEqual([b]);
      expect(lines.get(index)).toMatchObject({ status: 'COMPLETED', endpointId: b, hops: 1 });
    }
    for (const jobs of byItem.values())
      expect(jobs.filter((job) => job.status === 'COMPLETED')).toHaveLength(1);
  }, 300_000);
});
