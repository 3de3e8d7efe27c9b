/**
 * The bulk action workflow on the time-skipping server with a fake page activity: it pages through
 * the whole selection, sums the counts, keeps the first failures only, answers its progress query
 * mid-way, and continues as new on a long selection carrying the page token and the counts.
 */
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BulkPageRequest, BulkPageResult, BulkProgress } from '../../contracts/bulk-action';
import type { bulkAction } from '../../workflows/bulk/bulk-action';
import { bulkProgressQuery } from '../../workflows/bulk/bulk-definitions';
import { timeSkippingEnv, uniqueTaskQueue } from '../support/temporal';
import { bundleWorkflows, quietRuntime, withWorker } from '../support/workflow-harness';

quietRuntime();

const WORKFLOWS = path.resolve(__dirname, '../../workflows/bulk/bulk-action.ts');

/** A selection of `runs` runs, every `failEvery`th failing; the page token is the offset. */
function fakePages(runs: number, failEvery = 0, gate?: { atPage: number; open: Promise<void> }) {
  const requests: BulkPageRequest[] = [];
  return {
    requests,
    activities: {
      async bulkPage(request: BulkPageRequest): Promise<BulkPageResult> {
        requests.push(request);
        if (gate && requests.length === gate.atPage) await gate.open;
        const offset = request.nextPageToken
          ? Number(Buffer.from(request.nextPageToken, 'base64').toString())
          : 0;
        const end = Math.min(offset + request.pageSize, runs);
        const result: BulkPageResult = { seen: end - offset, acted: 0, skipped: 0, failed: 0, failures: [] };
        for (let index = offset; index < end; index++) {
          if (failEvery > 0 && index % failEvery === 0) {
            result.failed += 1;
            result.failures.push({ workflowId: `run-${index}`, message: `run ${index} refused` });
          } else result.acted += 1;
        }
        return end < runs
          ? { ...result, nextPageToken: Buffer.from(String(end)).toString('base64') }
          : result;
      },
    },
  };
}

describe('bulkAction', () => {
  let env: TestWorkflowEnvironment;
  let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  beforeAll(async () => {
    env = await timeSkippingEnv();
    bundle = await bundleWorkflows(WORKFLOWS);
  }, 300_000);
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, input: Parameters<typeof bulkAction>[0]) =>
    env.client.workflow.start<typeof bulkAction>('bulkAction', {
      taskQueue,
      workflowId: uniqueTaskQueue('bulk-wf'),
      args: [input],
    });

  it('pages through the selection, sums the counts and keeps the first 20 failures', async () => {
    const fake = fakePages(95, 5);
    const progress = await withWorker(env, bundle, fake.activities, async (queue) =>
      (await start(queue, { action: 'cancel', query: 'q', pageSize: 10 })).result(),
    );
    expect(progress).toMatchObject({ done: true, pages: 10, seen: 95, acted: 76, failed: 19, skipped: 0 });
    expect(progress.failures).toHaveLength(19);
    expect(progress.nextPageToken).toBeUndefined();
    // Each page asked once, the token of the one before, and the action's own id as bulkId.
    expect(fake.requests.map((request) => request.nextPageToken ?? null)[1]).toBe(
      Buffer.from('10').toString('base64'),
    );
    expect(new Set(fake.requests.map((request) => request.bulkId)).size).toBe(1);

    const many = fakePages(200, 2);
    const capped = await withWorker(env, bundle, many.activities, async (queue) =>
      (await start(queue, { action: 'retry', query: 'q', pageSize: 50 })).result(),
    );
    expect(capped.failed).toBe(100);
    expect(capped.failures).toHaveLength(20);
  });

  it('answers its progress query mid-way', async () => {
    let open!: () => void;
    const gate = { atPage: 3, open: new Promise<void>((resolve) => (open = resolve)) };
    const fake = fakePages(50, 0, gate);
    await withWorker(env, bundle, fake.activities, async (queue) => {
      const handle = await start(queue, { action: 'cancel', query: 'q', pageSize: 10 });
      let seen: BulkProgress | undefined;
      for (let attempt = 0; attempt < 200 && seen?.pages !== 2; attempt++) {
        seen = await handle.query(bulkProgressQuery);
        if (seen.pages !== 2) await env.sleep(50);
      }
      expect(seen).toMatchObject({ pages: 2, seen: 20, acted: 20, done: false });
      open();
      expect(await handle.result()).toMatchObject({ pages: 5, seen: 50, done: true });
    });
  });

  it('continues as new on a long selection, carrying the page token and the counts', async () => {
    const fake = fakePages(260);
    await withWorker(env, bundle, fake.activities, async (queue) => {
      const handle = await start(queue, { action: 'cancel', query: 'q', pageSize: 1 });
      const progress = await handle.result();
      expect(progress).toMatchObject({ done: true, pages: 260, seen: 260, acted: 260 });
      const description = await handle.describe();
      expect(description.runId).not.toBe(handle.firstExecutionRunId);
      // No page asked twice, none skipped: the token went through continue-as-new.
      const offsets = fake.requests.map((request) =>
        request.nextPageToken ? Number(Buffer.from(request.nextPageToken, 'base64').toString()) : 0,
      );
      expect(offsets).toEqual(Array.from({ length: 260 }, (_, index) => index));
    });
  }, 120_000);
});
