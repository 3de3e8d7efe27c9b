/**
 * A batch's pages under its endpoint's /run limit: each carries its share of the concurrent
 * requests and the batch's priority and fairness key for the endpoint's gate, and a page's items
 * that the gate gave no room (or that could not go out in time) come back unsent and are submitted
 * again in a later page.
 */
import { describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import type { PageSend } from '../../contracts/batch-types';
import { batchSuite, fakeService, quietRuntime, withWorker } from './batch-harness';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

type FakeService = ReturnType<typeof fakeService>;
type PageRequest = Parameters<FakeService['activities']['submitBatchPage']>[0];

/** The fake's activities, with the worker's /run limit in the stage's answer and every page recorded. */
function withRunLimit(fake: FakeService, runLimit: { perTenSeconds: number; concurrent: number }) {
  const pages: Array<{ indexes: number[]; send: PageSend | undefined }> = [];
  return {
    pages,
    activities: {
      ...fake.activities,
      async stageBatchItems(args: Parameters<FakeService['activities']['stageBatchItems']>[0]) {
        return { ...(await fake.activities.stageBatchItems(args)), runLimit };
      },
      async submitBatchPage(request: PageRequest) {
        pages.push({ indexes: request.indexes, send: request.send });
        return fake.activities.submitBatchPage(request);
      },
    },
  };
}

describe('a batch under its endpoint /run limit', () => {
  const suite = batchSuite('batch-send');

  it("gives each page its share of the concurrent requests and the batch's priority and fairness key", async () => {
    const fake = fakeService(12);
    const { pages, activities } = withRunLimit(fake, { perTenSeconds: 4, concurrent: 6 });
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (
        await suite.start(
          queue,
          input({ pageSize: 3, maxConcurrency: 12, priority: 2, fairnessKey: 'tenant-a', fairnessWeight: 3 }),
        )
      ).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 12 }, submissions: 12 });
    expect(pages.length).toBeGreaterThanOrEqual(4);
    for (const page of pages) {
      // Two pages may send at once: each gets half the concurrent requests. The room in the /run
      // window is the endpoint gate's to grant (test/integration/shared-endpoint.test.ts).
      expect(page.send).toEqual({
        concurrent: 3,
        scheduling: { priority: 2, fairnessKey: 'tenant-a', fairnessWeight: 3 },
      });
    }
  });

  it('submits again, once, the items a page could not send in time', async () => {
    const fake = fakeService(6);
    const { pages, activities } = withRunLimit(fake, { perTenSeconds: 100, concurrent: 10 });
    let firstDone = false;
    const late = {
      ...activities,
      async submitBatchPage(request: PageRequest) {
        if (firstDone) return activities.submitBatchPage(request);
        firstDone = true;
        pages.push({ indexes: request.indexes, send: request.send });
        // Its time to send passed before the worker got to it: nothing went out.
        return { results: [], unsent: request.indexes };
      },
    };
    const summary = await withWorker(suite.env, suite.bundle, late, async (queue) =>
      (await suite.start(queue, input({ pageSize: 6 }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 6 }, submissions: 6, uncertainSubmits: 0 });
    expect([0, 1, 2, 3, 4, 5].map((i) => fake.submitsPerItem.get(i))).toEqual([1, 1, 1, 1, 1, 1]);
    expect(pages.length).toBeGreaterThanOrEqual(2);
  });
});
