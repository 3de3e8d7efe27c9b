/**
 * The batch's child mode end to end: the real worker (runWorker, webhook gateway beside it), the
 * dev server, the emulator over HTTP. 50 items, one job workflow each, one in five failing once and
 * retried by its job workflow: the summary's counts are exact, the results hold one line per item
 * whose output (in the result store) is its input's, the emulator saw exactly one submission per
 * item, and no item's request or output is in the batch's history or its children's. Cancelling
 * the batch cancels its children, whose jobs end CANCELLED at the service.
 *
 * At time scale 100 the default submit lease is too short to extend (see batch.test.ts): off here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  cancelBatch,
  readBatchResults,
  startBatch,
  writeBatchManifest,
} from '../../client/batches';
import { batchKeyFor } from '../../stores/batch-store';
import type { ResultRef } from '../../stores/result-store';
import { createLocalResultStore } from '../../stores/result-store';
import { expectBatchSummaryAllCompleted } from '../support/batch-scenarios';
import {
  FAST_POLLING,
  historyText,
  type JobStack,
  jobsInProgress,
  startJobStack,
} from '../support/integration';

const ITEMS = 50;
const failsOnce = (i: number) => i % 5 === 2;
/** Text only the items hold: it must never show in a history. */
const tagOf = (i: number) => `item-text-${i}-zq`;

describe('batch engine, child mode, on the emulator', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'batch-children', timeScale: 100, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('runs 50 items as job workflows: exact counts, one line per item, one submission per item', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 20 });
    const inline = Array.from({ length: ITEMS }, (_, i) => ({
      input: { output: { index: i, tag: tagOf(i) }, ...(failsOnce(i) ? { failTimes: 1 } : {}) },
    }));
    const once = inline.filter((_, i) => failsOnce(i)).length;
    const batchId = `batch-children-${Date.now()}`;
    const dir = stack.workerEnv.RESULT_STORE_DIR as string;
    const manifest = await writeBatchManifest(inline, { store: dir, key: `manifests/${batchId}.jsonl` });
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { manifest: { key: manifest.key } },
        mode: 'children',
        job: { submitLease: false, retry: { maxRetries: 1, initialInterval: 100 }, polling: FAST_POLLING },
        maxConcurrency: 10,
      },
      { workflowId: batchId, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, { batch: handle });
    expectBatchSummaryAllCompleted(summary, ITEMS);
    expect(summary).toMatchObject({
      submissions: ITEMS,
      uncertainSubmits: 0,
      retries: once,
      toleranceExceeded: false,
    });
    expect(stack.control.submissions(endpointId)).toBe(ITEMS);

    const outputs = createLocalResultStore(dir);
    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, { batch: summary, store: dir })) lines.push(line);
    expect(lines).toHaveLength(ITEMS);
    expect(new Set(lines.map((line) => line.index)).size).toBe(ITEMS);
    for (const line of lines) {
      expect(line).toMatchObject({ status: 'COMPLETED', submissions: 1 });
      expect(line.attempts).toBe(failsOnce(line.index) ? 2 : 1);
      expect(line).not.toHaveProperty('output');
      expect(await outputs.get(line.outputRef as ResultRef)).toEqual({
        index: line.index,
        tag: tagOf(line.index),
      });
    }

    // The items went in by manifest: nothing of any item, neither requests nor outputs, is in the
    // batch's history or a child's.
    const batchHistory = historyText(await handle.fetchHistory());
    expect(batchHistory).not.toContain('-zq');
    expect(batchHistory).toContain(`${batchId}/item-49`);
    const childEvents: number[] = [];
    for (const index of [0, 2, 49]) {
      const history = await stack.client.workflow.getHandle(`${batchId}/item-${index}`).fetchHistory();
      childEvents.push(history.events?.length ?? 0);
      const child = historyText(history);
      expect(child).toContain('"requestRef"');
      expect(child).not.toContain('-zq');
    }
    console.log(
      `child-mode batch of ${ITEMS}: ${summary.elapsedMs} ms, ${summary.historyEvents} batch history events in ` +
        `${summary.runs} run(s); child histories (items 0, 2, 49): ${childEvents.join(', ')} events`,
    );
  }, 300_000);

  it('cancelling the batch cancels its children, whose jobs end CANCELLED at the service', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 20 });
    // An hour of service time each: they run until cancelled.
    const dir = stack.workerEnv.RESULT_STORE_DIR as string;
    const batchId = `batch-children-cancel-${Date.now()}`;
    const manifest = await writeBatchManifest(
      Array.from({ length: 20 }, (_, i) => ({ input: { sleepMs: 3_600_000, output: { i } } })),
      { store: dir, key: `manifests/${batchId}.jsonl` },
    );
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: { manifest: { key: manifest.key } },
        mode: 'children',
        job: { submitLease: false, polling: FAST_POLLING },
        maxConcurrency: 5,
      },
      { workflowId: batchId, taskQueue: stack.taskQueue },
    );
    await jobsInProgress(stack.control, endpointId, 5);
    await cancelBatch(stack.client, { batch: handle.workflowId });
    const error = await awaitBatch(stack.client, { batch: handle }).then(
      () => undefined,
      (caught: Error) => caught,
    );
    expect((error?.cause as Error | undefined)?.name).toBe('CancelledFailure');
    const jobs = stack.control.jobs(endpointId);
    expect(jobs).toHaveLength(5);
    expect(jobs.every((job) => job.status === 'CANCELLED')).toBe(true);
    expect(stack.control.submissions(endpointId)).toBe(5);
    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, {
      batch: { kind: 'serverless-batch-results', store: 'local', key: batchKeyFor(batchId) },
      store: dir,
    }))
      lines.push(line);
    expect(lines.map((line) => line.status)).toEqual(Array(5).fill('CANCELLED'));
  }, 300_000);
});
