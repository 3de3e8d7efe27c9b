/**
 * A batch of 1,000 items end to end: the real worker (runWorker, webhook gateway beside it), the
 * dev server, the emulator over HTTP with its rate limits on. One item in ten fails once and is
 * retried (/retry, same job), one in fifty fails for good (within the tolerance). The summary's
 * counts are exact, the results hold one line per item whose output is its input's, and the
 * emulator saw exactly one submission per item. Past its tolerance a batch fails with the summary
 * and keeps every result, and a redrive runs what did not complete; a cancel reaches every job in
 * flight.
 *
 * The emulator runs at time scale 100 here, where the default 60 s submit lease is 0.6 s of real
 * time: too short to extend. These batches run with `submitLease: false`; the lease is tested at
 * time scale 1 in batch-lease.test.ts.
 */
/** The submit lease off (see above). */
const NO_LEASE = { submitLease: false } as const;

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  batchFailureOf,
  cancelBatch,
  finishedSummary,
  getBatchProgress,
  readBatchResults,
  redriveBatch,
  startBatch,
} from '../../client/batches';
import { historyText } from '../support/history';
import { eventually, type JobStack, jobsInProgress, startJobStack } from '../support/integration';

const ITEMS = 1_000;
const failsOnce = (i: number) => i % 10 === 3;
const failsForGood = (i: number) => i % 50 === 7;

describe('batch engine on the emulator', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'batch', timeScale: 100, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('runs 1,000 items: exact counts, one result line per item, one submission per item', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 100 });
    const inline = Array.from({ length: ITEMS }, (_, i) => ({
      input: {
        output: { index: i },
        ...(failsOnce(i) ? { failTimes: 1 } : {}),
        ...(failsForGood(i) ? { fail: `item ${i} is broken` } : {}),
      },
    }));
    const permanent = inline.filter((_, i) => failsForGood(i)).length;
    const once = inline.filter((_, i) => failsOnce(i)).length;
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { inline },
        job: {
          ...NO_LEASE,
          retry: { maxRetries: 1, initialInterval: 100 },
          polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 },
        },
        maxConcurrency: 200,
        failureTolerance: { count: permanent },
      },
      { workflowId: `batch-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, { batch: handle });
    expect(summary).toMatchObject({
      total: ITEMS,
      counts: {
        completed: ITEMS - permanent,
        failed: permanent,
        timedOut: 0,
        expired: 0,
        cancelled: 0,
        uncertain: 0,
        rejected: 0,
      },
      failures: permanent,
      notStarted: 0,
      submissions: ITEMS,
      uncertainSubmits: 0,
      retries: once + permanent,
      toleranceExceeded: false,
    });
    expect(stack.control.submissions(endpointId)).toBe(ITEMS);

    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, {
      batch: summary,
      store: stack.workerEnv.RESULT_STORE_DIR as string,
    })) {
      lines.push(line);
    }
    expect(lines).toHaveLength(ITEMS);
    expect(new Set(lines.map((line) => line.index)).size).toBe(ITEMS);
    for (const line of lines) {
      if (failsForGood(line.index)) {
        expect(line).toMatchObject({ status: 'FAILED', attempts: 2, error: `item ${line.index} is broken` });
      } else {
        expect(line).toMatchObject({ status: 'COMPLETED', output: { index: line.index } });
        expect(line.attempts).toBe(failsOnce(line.index) ? 2 : 1);
      }
    }
    const progress = await getBatchProgress(stack.client, { batch: handle.workflowId });
    expect(progress).toMatchObject({ done: ITEMS, inFlight: 0 });
    console.log(
      `batch of ${ITEMS}: ${summary.elapsedMs} ms, ${summary.historyEvents} history events in ${summary.runs} run(s)`,
    );
    // Counters, not items, in history: a fraction of an event per item (no signal per job either).
    // How the events fall into workflow tasks depends on the machine's load: 0.22 to 0.28 per item
    // with this file alone, 0.27 to 0.34 with four copies at once and 0.36 in a whole test run on 2
    // cores; fixed costs weigh more here than in the bench (0.09 at 10,000 items).
    expect(summary.historyEvents).toBeLessThan(ITEMS * 0.4);
  }, 600_000);

  async function linesOf(summary: Parameters<typeof readBatchResults>[1]['batch'], only?: 'failures') {
    const lines: BatchResultLine[] = [];
    const store = stack.workerEnv.RESULT_STORE_DIR as string;
    for await (const line of readBatchResults(stack.client, {
      batch: summary,
      store,
      ...(only ? { only } : {}),
    }))
      lines.push(line);
    return lines;
  }

  it('fails past its tolerance with the summary and every result kept; a redrive runs the rest', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 20 });
    // Items 0-9 fail twice (one retry is not enough), 10-99 complete.
    const inline = Array.from({ length: 100 }, (_, i) => ({
      input: { output: { index: i }, ...(i < 10 ? { failTimes: 2 } : {}) },
    }));
    const job = { ...NO_LEASE, retry: { maxRetries: 1, initialInterval: 100 } };
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { inline },
        job,
        maxConcurrency: 20,
        pageSize: 20,
        failureTolerance: { count: 4 },
      },
      { workflowId: `batch-over-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const error = await awaitBatch(stack.client, { batch: handle }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const failure = batchFailureOf(error);
    expect(failure?.type).toBe('BatchToleranceExceeded');
    const summary = failure?.summary;
    if (!summary) throw new Error('no summary in the failure');
    expect(summary.toleranceExceeded).toBe(true);
    expect(summary.counts.failed).toBeGreaterThanOrEqual(5);
    expect(summary.counts.completed + summary.failures + summary.notStarted).toBe(100);
    const lines = await linesOf(summary);
    expect(lines).toHaveLength(summary.counts.completed + summary.failures);
    const failed = await linesOf(summary, 'failures');
    expect(failed.every((line) => line.status === 'FAILED')).toBe(true);
    expect(stack.control.submissions(endpointId)).toBe(summary.submissions);
    // The service's error texts are in the results file, never in history: it holds store keys.
    expect(failed.map((line) => line.error)).toContain('scripted failure on attempt 2');
    expect(summary.runs).toBe(1);
    const history = historyText(await handle.fetchHistory());
    expect(history).toMatch(/"errorRef":"batch-[0-9a-f]+\/errors\//);
    expect(history).not.toContain('scripted failure');

    // The redrive, with one more retry: the failed items (new jobs, each failing twice, then
    // completing) and the items never started.
    const redrive = await redriveBatch(stack.client, {
      batch: handle,
      workflowId: `batch-redrive-${Date.now()}`,
      taskQueue: stack.taskQueue,
      changes: { job: { ...NO_LEASE, retry: { maxRetries: 2, initialInterval: 100 } } },
    });
    const again = await awaitBatch(stack.client, { batch: redrive });
    expect(again).toMatchObject({ total: summary.failures + summary.notStarted, failures: 0 });
    const outputs = (await linesOf(again)).map((line) => (line.output as { index: number }).index);
    const first = lines.filter((line) => line.status === 'COMPLETED').map((line) => line.index);
    expect([...first, ...outputs].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  }, 300_000);

  it('adopts the orphans of uncertain submits by their webhooks, each item submitted once', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 50 });
    // The service creates these jobs but the answers are lost: five uncertain submits.
    stack.control.injectFault({ operation: 'run', endpointId, kind: 'drop-after', times: 5 });
    const inline = Array.from({ length: 50 }, (_, i) => ({ input: { output: { index: i } } }));
    const handle = await startBatch(
      stack.client,
      { endpointId, items: { inline }, job: { ...NO_LEASE, uncertainSubmitWait: '2 minutes' }, pageSize: 10 },
      { workflowId: `batch-orphans-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, { batch: handle });
    expect(summary).toMatchObject({
      counts: { completed: 50, uncertain: 0 },
      uncertainSubmits: 5,
      submissions: 50,
    });
    expect(stack.control.submissions(endpointId)).toBe(50);
    // The gateway signalled only the webhooks of possible orphans; the watcher saw the rest.
    expect(summary.webhooks).toBeGreaterThanOrEqual(5);
    expect(summary.webhooks).toBeLessThan(50);
    const lines = await linesOf(summary);
    expect(lines.map((line) => (line.output as { index: number }).index).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i),
    );
  }, 300_000);

  it('cancels every job in flight at the service, then ends cancelled', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 100 });
    // An hour of service time each: they run until cancelled.
    const inline = Array.from({ length: 200 }, (_, i) => ({ input: { sleepMs: 3_600_000, output: { i } } }));
    const handle = await startBatch(
      stack.client,
      { endpointId, items: { inline }, job: NO_LEASE, maxConcurrency: 30, pageSize: 30 },
      { workflowId: `batch-cancel-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    await jobsInProgress(stack.control, endpointId, 30);
    await cancelBatch(stack.client, { batch: handle.workflowId });
    const error = await awaitBatch(stack.client, { batch: handle }).then(
      () => undefined,
      (caught: Error) => caught,
    );
    expect((error?.cause as Error | undefined)?.name).toBe('CancelledFailure');
    const jobs = stack.control.jobs(endpointId);
    expect(jobs).toHaveLength(30);
    expect(jobs.every((job) => job.status === 'CANCELLED')).toBe(true);
    expect(stack.control.submissions(endpointId)).toBe(30);

    // Cancelled, its summary and results are still there: 30 CANCELLED lines, 170 never started,
    // and a redrive of all 200 (numbered 0..199 in their order) on a fresh endpoint.
    const summary = await finishedSummary(stack.client, { batch: handle });
    expect(summary).toMatchObject({
      total: 200,
      counts: { cancelled: 30, completed: 0 },
      notStarted: 170,
      stoppedBecause: 'cancelled',
    });
    const cancelled = await linesOf(summary);
    expect(cancelled).toHaveLength(30);
    expect(cancelled.every((line) => line.status === 'CANCELLED')).toBe(true);
    const redrive = await redriveBatch(stack.client, {
      batch: handle,
      workflowId: `batch-cancel-redrive-${Date.now()}`,
      taskQueue: stack.taskQueue,
      changes: { maxConcurrency: 200 },
    });
    const progress = await eventually(async () => {
      const now = await getBatchProgress(stack.client, { batch: redrive.workflowId });
      return now.cursor > 0 ? now : undefined;
    }, 60_000);
    expect(progress.total).toBe(200);
    await cancelBatch(stack.client, { batch: redrive.workflowId });
    await awaitBatch(stack.client, { batch: redrive }).catch(() => undefined);
  }, 300_000);
});
