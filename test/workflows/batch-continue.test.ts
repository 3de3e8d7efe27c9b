/**
 * The batch workflow continues as new, carrying its cursor, its jobs in flight and its counters,
 * while pause, resume and concurrency changes race the new runs. On the dev server (the
 * time-skipping test server mishandles updates racing a continue-as-new), with a fake service.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { serverlessBatch } from '../../workflows/batch';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../../workflows/batch-definitions';
import type { BatchInput } from '../../workflows/batch-input';
import { devServerEnv } from '../support/temporal';
import { bundleBatchWorkflow, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('batch workflow: continue-as-new', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await devServerEnv();
    bundle = await bundleBatchWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, args: BatchInput) =>
    env.client.workflow.start<typeof serverlessBatch>('serverlessBatch', {
      taskQueue,
      workflowId: `batch-can-${taskQueue}`,
      args: [args],
    });

  it('continues as new carrying cursor, jobs in flight and counters; signals and updates racing it count', async () => {
    const total = 400;
    const fake = fakeService(total, (i, attempt) => (i % 40 === 0 && attempt === 1 ? 'FAILED' : 'held'));
    await withWorker(env, bundle, fake.activities, async (queue) => {
      const handle = await start(
        queue,
        input({
          maxConcurrency: 20,
          pageSize: 5,
          maxEventsPerRun: 200,
          job: { retry: { maxRetries: 1, initialInterval: 1_000 } },
        }),
      );
      // Jobs finish a few at a time while pause, resume and concurrency changes race the new runs.
      let released = 0;
      let concurrency = 20;
      for (let round = 0; round < 60 && released < total; round++) {
        for (let k = 0; k < 8; k++) fake.release(released++);
        if (round % 10 === 3) await handle.signal(pauseBatchSignal);
        if (round % 10 === 4) await handle.signal(resumeBatchSignal);
        if (round % 10 === 5) {
          concurrency = 20 + round;
          await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [concurrency] });
        }
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      await handle.signal(resumeBatchSignal);
      fake.releaseAll();
      const summary = await handle.result();
      expect(summary.runs).toBeGreaterThan(1);
      expect(summary).toMatchObject({
        total,
        counts: { completed: total, failed: 0 },
        submissions: total,
        retries: total / 40,
        notStarted: 0,
      });
      const completed = new Set(
        fake.lines.filter((line) => line.status === 'COMPLETED').map((line) => line.index),
      );
      expect(completed.size).toBe(total);
      for (const [, submits] of fake.submitsPerItem) expect(submits).toBe(1);
      const progress = await handle.query(batchProgressQuery);
      expect(progress).toMatchObject({ paused: false, maxConcurrency: concurrency, done: total });
    });
  });
});
