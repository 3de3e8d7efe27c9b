/**
 * Batch cost, budget, the batch metrics and the `cost` CLI on the real stack: dev server, emulator
 * over HTTP, a real worker (runWorker) with prices, /metrics and one endpoint named for the
 * in-flight gauge. The emulator's frozen clock holds jobs in flight while the gauge is read.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  type BatchSummary,
  batchFailureOf,
  readBatchResults,
  startBatch,
} from '../../client/batches';
import { runCli } from '../../client/cli';
import { awaitJob } from '../../client/jobs';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { sampleSum } from '../observability/counting-proxy';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

const PRICE_PER_SECOND = 0.5;
const round = (amount: number) => Math.round(amount * 1e6) / 1e6;

describe('batch cost and budget on the emulator (real worker with prices)', () => {
  let stack: JobStack;
  let endpointId: string;
  let metricsUrl: string;
  let resultDir: string;
  const controller = new AbortController();
  let running: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    stack = await startJobStack({ name: 'batch-cost', timeScale: 100, worker: false });
    endpointId = stack.endpoint({ gpuIds: 'AMPERE_16', workersMin: 0, workersMax: 4 });
    resultDir = stack.workerEnv.RESULT_STORE_DIR as string;
    const config = loadWorkerConfig({
      ...stack.workerEnv,
      WORKER_METRICS_PORT: '0',
      WORKER_METRICS_ENDPOINT_LABELS: `${endpointId}:main`,
      SERVERLESS_PRICES: JSON.stringify({ currency: 'EUR', perSecond: { AMPERE_16: PRICE_PER_SECOND } }),
    });
    let ready!: (url: string) => void;
    const isReady = new Promise<string>((resolve) => {
      ready = resolve;
    });
    running = runWorker(config, {
      signal: controller.signal,
      logger: createLogger({ level: 'error', secrets: [stack.apiKey] }),
      onReady: (info) => ready(info.metricsUrl ?? ''),
    });
    running.catch(() => undefined);
    metricsUrl = await Promise.race([
      isReady,
      running.then(() => Promise.reject(new Error('the worker stopped early'))),
    ]);
  });

  afterAll(async () => {
    controller.abort();
    await running.catch(() => undefined);
    await stack?.close();
  });

  async function scrape(): Promise<string> {
    const response = await request(`${metricsUrl}/metrics`);
    expect(response.statusCode).toBe(200);
    return response.body.text();
  }

  async function lines(summary: BatchSummary): Promise<BatchResultLine[]> {
    const out: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, { batch: summary, store: resultDir }))
      out.push(line);
    return out;
  }

  async function cli(...args: string[]) {
    let out = '';
    let err = '';
    const code = await runCli(
      ['--task-queue', stack.taskQueue, ...args],
      { out: (text) => (out += text), err: (text) => (err += text) },
      async () => stack.client,
    );
    return { code, out, err };
  }

  const items = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ input: { sleepMs: 2_000, output: { i } } }));

  /** Each line's cost is its executionTime x the price, and the summary's the sum of the lines'. */
  function expectCostsAddUp(summary: BatchSummary, written: BatchResultLine[]): void {
    const completed = written.filter((line) => line.status === 'COMPLETED');
    expect(completed).toHaveLength(summary.counts.completed);
    for (const line of completed) {
      expect(line.executionTime).toBeGreaterThan(0);
      expect(line.cost).toBe(round(((line.executionTime as number) / 1000) * PRICE_PER_SECOND));
    }
    const ofLines = written.reduce((total, line) => total + (line.cost ?? 0), 0);
    const ofTimes = completed.reduce(
      (total, line) => total + round(((line.executionTime as number) / 1000) * PRICE_PER_SECOND),
      0,
    );
    expect(summary.cost.amount).toBeCloseTo(ofLines, 6);
    expect(summary.cost.amount).toBeCloseTo(ofTimes, 6);
    expect(summary.cost).toMatchObject({ currency: 'EUR', items: completed.length });
  }

  it('counts the jobs in flight while the service is frozen, then back to 0; items by outcome; costs add up', async () => {
    stack.control.freeze();
    let resumed = false;
    try {
      const handle = await startBatch(
        stack.client,
        { endpointId, items: { inline: items(3) }, job: { polling: FAST_POLLING } },
        { workflowId: `batch-cost-gauge-${Date.now()}`, taskQueue: stack.taskQueue },
      );
      // Submitted and held in the queue by the frozen clock: 3 in flight, on the named endpoint too.
      const during = await eventually(async () => {
        const text = await scrape();
        return sampleSum(text, 'durable_serverless_jobs_in_flight') === 3 ? text : undefined;
      });
      expect(sampleSum(during, 'durable_serverless_jobs_in_flight_by_endpoint', { endpoint: 'main' })).toBe(
        3,
      );
      stack.control.resume();
      resumed = true;
      const summary = await awaitBatch(stack.client, { batch: handle });
      expect(summary.counts.completed).toBe(3);
      expectCostsAddUp(summary, await lines(summary));
      const after = await eventually(async () => {
        const text = await scrape();
        return sampleSum(text, 'durable_serverless_jobs_in_flight') === 0 ? text : undefined;
      });
      expect(sampleSum(after, 'durable_serverless_jobs_in_flight_by_endpoint', { endpoint: 'main' })).toBe(0);
      expect(
        sampleSum(after, 'durable_serverless_batch_items_finished_total', { outcome: 'completed' }),
      ).toBe(3);
      // No id in the scrape: the endpoint shows by its alias only.
      expect(after).not.toContain(endpointId);
      expect(after).not.toContain(handle.workflowId);

      const shown = await cli('cost', 'batch', handle.workflowId, '--json');
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.out)).toMatchObject({ running: false, cost: summary.cost });
    } finally {
      if (!resumed) stack.control.resume();
    }
  });

  it('stops a batch at its budget: the jobs in flight finish, the summary says why, the costs add up', async () => {
    const before = sampleSum(await scrape(), 'durable_serverless_batch_items_finished_total', {
      outcome: 'completed',
    });
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { inline: items(12) },
        maxConcurrency: 2,
        pageSize: 2,
        budget: 2.5,
        job: { polling: FAST_POLLING },
      },
      { workflowId: `batch-cost-budget-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const error = await awaitBatch(stack.client, { batch: handle }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const failure = batchFailureOf(error);
    expect(failure?.type).toBe('BatchBudgetExceeded');
    expect(failure?.message).toMatch(/(reached|would have passed with one more item) the budget 2\.5/);
    const summary = failure?.summary as BatchSummary;
    expect(summary).toMatchObject({
      total: 12,
      budget: 2.5,
      budgetExceeded: true,
      stoppedBecause: 'budget',
      toleranceExceeded: false,
      failures: 0,
    });
    // Each run costs about 1 (2 s at 0.5/s). The first page (2) goes out before any estimate; from
    // then on no item starts that would pass the budget, counting the jobs under way at the mean
    // cost so far: it stops when one more run would pass it.
    const mean = summary.cost.amount / summary.cost.items;
    expect(summary.counts.completed).toBeGreaterThanOrEqual(2);
    expect(summary.cost.amount + mean).toBeGreaterThan(2.5);
    expect(summary.cost.amount).toBeLessThan(2.5 + mean);
    expect(summary.notStarted).toBeGreaterThan(0);
    expect(summary.counts.completed + summary.notStarted).toBe(12);
    expect(summary.submissions).toBe(summary.counts.completed);
    expect(stack.control.submissions(endpointId)).toBeGreaterThanOrEqual(summary.submissions);
    expectCostsAddUp(summary, await lines(summary));
    const after = await scrape();
    expect(sampleSum(after, 'durable_serverless_batch_items_finished_total', { outcome: 'completed' })).toBe(
      before + summary.counts.completed,
    );

    // The CLI reads the same from the failed batch's summary.
    const shown = await cli('cost', 'batch', handle.workflowId);
    expect(shown.code).toBe(0);
    expect(shown.out).toContain(`${summary.cost.amount} EUR`);
    expect(shown.out).toContain('budget 2.5 (submissions stopped by it)');
  });

  it('cost job, cost endpoint and cost range sum the closed workflows, a child-mode batch once', async () => {
    const since = new Date().toISOString();
    // A child-mode batch: its item job workflows carry the endpoint too, and its summary their cost.
    const children = await startBatch(
      stack.client,
      { endpointId, mode: 'children', items: { inline: items(2) }, job: { polling: FAST_POLLING } },
      { workflowId: `batch-cost-children-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const childSummary = await awaitBatch(stack.client, { batch: children });
    expect(childSummary.counts.completed).toBe(2);
    expect(childSummary.cost.amount).toBeGreaterThan(0);
    const job = await stack.start({
      endpointId,
      request: { input: { sleepMs: 2_000, output: 'one' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job });
    expect(result.cost?.amount).toBeGreaterThan(0);
    const jobShown = await cli('cost', 'job', job.workflowId, '--json');
    expect(jobShown.code).toBe(0);
    expect(JSON.parse(jobShown.out)).toEqual({ workflowId: job.workflowId, cost: result.cost });

    // Visibility is eventually consistent: the three batches, the job and the two children, once
    // all are listed.
    const report = await eventually(async () => {
      const shown = await cli('cost', 'endpoint', endpointId, '--json', '--since', '2020-01-01T00:00:00Z');
      const parsed = JSON.parse(shown.out);
      return parsed.jobs.workflows === 3 && parsed.batches.workflows === 3 ? parsed : undefined;
    });
    // The children are in their batch's summary, not added again as jobs.
    expect(report.jobs).toEqual({ workflows: 3, withCost: 1, amount: result.cost?.amount, inBatches: 2 });
    expect(report.amount).toBeCloseTo(report.jobs.amount + report.batches.amount, 6);
    expect(report.batches.amount).toBeGreaterThan(2.5 + childSummary.cost.amount);
    expect(report.currency).toBe('EUR');

    // The account over the time of this test: at least the job and the child-mode batch (other
    // test files may share the server and close workflows meanwhile), the children counted once.
    const until = new Date(Date.now() + 60_000).toISOString();
    const range = await eventually(async () => {
      const shown = await cli('cost', 'range', '--json', '--since', since, '--until', until);
      expect(shown.code).toBe(0);
      const parsed = JSON.parse(shown.out);
      return parsed.jobs.inBatches >= 2 && parsed.jobs.withCost >= 1 ? parsed : undefined;
    });
    expect(range).not.toHaveProperty('endpointId');
    expect(range.amount).toBeGreaterThanOrEqual((result.cost?.amount ?? 0) + childSummary.cost.amount - 1e-6);
    expect(range.amount).toBeCloseTo(range.jobs.amount + range.batches.amount, 6);
    const text = await cli('cost', 'range', '--since', since, '--until', until);
    expect(text.out).toMatch(/^\S+ to \S+: [\d.]+ EUR \(/);

    // A range that ended before anything ran finds nothing.
    const empty = await cli('cost', 'endpoint', endpointId, '--json', '--until', '2020-01-01T00:00:00Z');
    expect(JSON.parse(empty.out)).toMatchObject({
      amount: 0,
      jobs: { workflows: 0 },
      batches: { workflows: 0 },
    });
  });
});
