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

  /**
   * The emulator's jobs of the endpoints, finished and removed ones too (a removed job's snapshot
   * keeps no input: an item is known by the job id its result line names).
   */
  function jobsOf(endpoints: string[]) {
    return stack.control
      .jobs(undefined, { removed: true })
      .filter((job) => endpoints.includes(job.endpointId));
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
          // Long enough that a's cold start on a loaded machine is not taken for starvation
          // (a drained before it starves would leave nothing to move).
          queueDelayLimit: '15 seconds',
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
    // b's input overrides reach the jobs sent there.
    const onB = await eventually(() => stack.control.jobs(b).find((job) => job.input !== undefined), 120_000);
    expect(onB.input?.on).toBe('b');
    expect(stack.control.jobs(a).every((job) => job.input === undefined || job.input.on === undefined)).toBe(
      true,
    );
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

    // The service's side: as many COMPLETED jobs as items, each the one its item's line names,
    // and no other job ran at all (a job withdrawn from a has executionTime 0): no item ran on both.
    const jobs = jobsOf([a, b]);
    const byId = new Map(jobs.map((job) => [job.id, job]));
    expect(jobs.filter((job) => job.status === 'COMPLETED')).toHaveLength(ITEMS);
    expect(jobs.filter((job) => job.status !== 'COMPLETED' && (job.executionTime ?? 0) > 0)).toEqual([]);
    const withdrawn = jobs.filter((job) => job.endpointId === a && job.status === 'CANCELLED');
    expect(withdrawn).toHaveLength(summary.hops ?? -1);

    // Each result line says where its item ran (and that it moved).
    const lines = await linesOf(summary);
    expect(lines).toHaveLength(ITEMS);
    expect(new Set(lines.map((line) => line.index)).size).toBe(ITEMS);
    for (const line of lines) {
      const ran = byId.get(line.jobId ?? '');
      expect(ran?.status, `item ${line.index}`).toBe('COMPLETED');
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
    // Each job that ran out of memory on a moved its item to b, where it completed.
    const jobs = jobsOf([a, b]);
    const outOfMemory = jobs.filter((job) => job.endpointId === a && job.status === 'FAILED');
    expect(outOfMemory.length).toBeGreaterThan(0);
    expect(summary.hops).toBe(outOfMemory.length);
    expect(jobs.filter((job) => job.status === 'COMPLETED')).toHaveLength(20);
    const lines = await linesOf(summary);
    const moved = lines.filter((line) => line.hops === 1);
    expect(moved).toHaveLength(outOfMemory.length);
    for (const line of moved) expect(line).toMatchObject({ status: 'COMPLETED', endpointId: b });
    const byId = new Map(jobs.map((job) => [job.id, job]));
    for (const line of lines) expect(byId.get(line.jobId ?? '')?.endpointId).toBe(line.endpointId);
  }, 300_000);
});
