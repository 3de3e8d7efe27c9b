/**
 * The batch's child mode continuing as new on the dev server (the time-skipping test server's
 * continue-as-new is not atomic, and here children are open across it): the cursor and the
 * counters are carried, every item's child starts once across the runs, every line is written once,
 * and the window holds. The batch workflow with a fake serverlessJob bundled beside it
 * (test/workflows/batch-children-workflows.ts); the children sleep a few milliseconds of real time.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import type { serverlessBatch } from '../../workflows/batch/batch';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';
import { bundleWorkflows, quietRuntime, withWorker } from '../support/workflow-harness';
import { fakeChildren } from '../workflows/batch-children-fake';
import type { ChildFate } from '../workflows/batch-children-workflows';

quietRuntime();

const ITEMS = 60;
const broken = (i: number) => i % 7 === 3;
/** Children end in a spread order (a few ms apart), one in seven failing. */
const fates = (i: number): ChildFate => ({ kind: broken(i) ? 'FAILED' : 'COMPLETED', ms: 10 + (i % 5) * 15 });
const every = Array.from({ length: ITEMS }, (_, i) => i);

describe('batch workflow: child mode, continue-as-new', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await devServerEnv();
    bundle = await bundleWorkflows(require.resolve('../workflows/batch-children-workflows.ts'));
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('continues as new when its run is full, carrying the cursor and the counters', async () => {
    const fake = fakeChildren(ITEMS, fates);
    const failing = every.filter(broken).length;
    const input: BatchInput = {
      endpointId: 'ep-1',
      items: { manifest: { key: 'items.jsonl' } },
      mode: 'children',
      maxConcurrency: 5,
      maxEventsPerRun: 200,
      failureTolerance: { count: failing },
      // The next run starts from the caller's input, durations as given.
      job: { polling: { initialInterval: '1 second', maxInterval: '2 seconds' } },
    };
    const summary = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof serverlessBatch>('serverlessBatch', {
        taskQueue,
        workflowId: uniqueTaskQueue('batch-children-can'),
        args: [input],
      });
      return handle.result();
    });
    expect(summary.runs).toBeGreaterThan(1);
    expect(summary).toMatchObject({
      total: ITEMS,
      counts: { completed: ITEMS - failing, failed: failing },
      submissions: ITEMS,
      retries: failing,
      notStarted: 0,
    });
    // Every item once: no child started twice across the runs, every line written once.
    expect(fake.started.sort((a, b) => a - b)).toEqual(every);
    expect(fake.lines.map((line) => line.index).sort((a, b) => a - b)).toEqual(every);
    expect(fake.most()).toBeLessThanOrEqual(5);
  });
});
