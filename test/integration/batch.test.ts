/**
 * A batch of 1,000 items end to end: the real worker (runWorker, webhook gateway beside it), the
 * dev server, the emulator over HTTP with its rate limits on. One item in ten fails once and is
 * retried (/retry, same job), one in fifty fails for good (within the tolerance). The summary's
 * counts are exact, the results hold one line per item whose output is its input's, and the
 * emulator saw exactly one submission per item.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  getBatchProgress,
  readBatchResults,
  startBatch,
} from '../../client/batches';
import { type JobStack, startJobStack } from '../support/integration';

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
          retry: { maxRetries: 1, initialInterval: 100 },
          polling: { initialIntervalMs: 100, maxIntervalMs: 500, backoffCoefficient: 1.5 },
        },
        maxConcurrency: 200,
        failureTolerance: { count: permanent },
      },
      { workflowId: `batch-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitBatch(stack.client, handle);
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
    for await (const line of readBatchResults(summary, {
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
    const progress = await getBatchProgress(stack.client, handle.workflowId);
    expect(progress).toMatchObject({ done: ITEMS, inFlight: 0 });
    // Counters, not items, in history: well under one event per item (no signal per job either).
    expect(summary.historyEvents).toBeLessThan(ITEMS * 0.3);
    console.log(
      `batch of ${ITEMS}: ${summary.elapsedMs} ms, ${summary.historyEvents} history events in ${summary.runs} run(s)`,
    );
  }, 600_000);
});
