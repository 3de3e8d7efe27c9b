/**
 * The batch holds its endpoint's /run limit for every worker that sends its pages: each page gets a
 * send time from the workflow (engine/send-window.ts), and a page's items that could not go out
 * in time come back unsent and are submitted again in a later page.
 */
import { describe, expect, it } from 'vitest';
import type { BatchInput, PageSend } from '../../contracts/batch-input';
import { RUN_WINDOW_MS, SEND_SLACK_MS } from '../../engine/send-window';
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

  it('gives its pages send times that keep every window of the limit to it, each a share of the concurrent requests', async () => {
    const fake = fakeService(12);
    const { pages, activities } = withRunLimit(fake, { perTenSeconds: 4, concurrent: 6 });
    const summary = await withWorker(suite.env, suite.bundle, activities, async (queue) =>
      (await suite.start(queue, input({ pageSize: 3, maxConcurrency: 12 }))).result(),
    );
    expect(summary).toMatchObject({ counts: { completed: 12 }, submissions: 12 });
    const sends = pages.map((page) => ({ at: page.send?.at ?? Number.NaN, count: page.indexes.length }));
    // No window holds more than 4: the next page waits for the window and slack to pass.
    for (const [k, page] of sends.entries()) {
      const window = sends.filter(
        (other) => other.at > page.at - RUN_WINDOW_MS - SEND_SLACK_MS && other.at <= page.at,
      );
      expect(
        window.reduce((sum, other) => sum + other.count, 0),
        `window ending at page ${k}`,
      ).toBeLessThanOrEqual(4);
    }
    // 12 requests at 4 a window take three windows.
    expect(sends.at(-1)!.at - sends[0]!.at).toBeGreaterThanOrEqual(2 * (RUN_WINDOW_MS + SEND_SLACK_MS));
    for (const page of pages) {
      expect(page.send?.by).toBe((page.send?.at ?? 0) + SEND_SLACK_MS);
      // Two pages may send at once: each gets half the concurrent requests.
      expect(page.send?.concurrent).toBe(3);
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
