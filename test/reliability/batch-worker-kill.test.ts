/**
 * A batch of 2,000 items on the real server on PostgreSQL while its worker process is SIGKILLed
 * three times (once the service has acted on about 25%, 50% and 75% of the submissions), a new one
 * started each time. Every item completes with its output, the results file holds one line per
 * item, and no item ran twice on the service.
 *
 * All items run on one endpoint (200 warm workers); each item's output names it, so the service's
 * jobs (with those it deleted) say how often an item was submitted and how often it ran. A kill
 * cuts the submit pages in flight: the jobs their last heartbeat named are kept, the rest of those
 * pages are uncertain submits under the lease. Their orphans (the requests that did reach the
 * service) report themselves by webhook through the gateway, its own process alive through the
 * kills, and are adopted; an item with no orphan (never sent) is sent again once its lease is over
 * (README "Batches", "Submitting under a lease").
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectEveryItemCompletedOnce, runWorkerKillBatch } from '../support/batch-scenarios';
import { type Stack, startStack } from './support';

const ITEMS = 2_000;
const WORKERS = 200;
/** The kills, as shares of the items the service has acted on. */
const KILL_AT = [0.25, 0.5, 0.75];

describe('reliability: the worker SIGKILLed three times mid-batch (real server on PostgreSQL)', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Service time is real time: webhook retries are the spec's 10 s apart.
    stack = await startStack({ name: 'batch-worker-kill', timeScale: 1 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${KILL_AT.length} SIGKILLs during a batch of ${ITEMS} items: every item completes, none runs twice`, async () => {
    const { figures, summary } = await runWorkerKillBatch(stack, {
      items: ITEMS,
      workers: WORKERS,
      killAt: KILL_AT,
      job: {
        // The submit lease, as a duration: it then applies to the items of a page cut by a kill
        // whose requests never reported (the default 'auto' lease is known to apply only once a
        // request is known to name a webhook). A cut page is noticed within submitTimeout (its
        // heartbeat timeout); the jobs its last heartbeat named are kept, an orphan that reports
        // itself by webhook is adopted and extended, and an item with none is sent again once the
        // lease and the webhook window are over, when no orphan of it can run. 60 s: the
        // default's length; the kills here are far fewer than worker-kill's crash loop.
        submitLease: '60 seconds',
        submitTimeout: 15_000,
        // An item sent again after one kill can be cut by the next.
        maxSubmissions: 5,
      },
      report: { name: 'batch-worker-kill' },
      summaryWaitMs: 300_000,
    });

    // Every item completed with its output and none ran twice (an item may have been submitted
    // again: this case does not require one submission per item).
    expectEveryItemCompletedOnce(figures, summary, ITEMS);
  }, 600_000);
});
