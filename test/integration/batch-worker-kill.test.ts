/**
 * A batch on the dev server while its worker process is SIGKILLed three times (once the service
 * has acted on 25%, 50% and 75% of the items), a new worker process started each time: every item
 * completes with its own output, and the emulator made exactly one job per item (one /run acted on
 * per item, counted per item from the service's jobs, deleted ones too).
 *
 * Nothing is mocked: the emulator over HTTP, the shared dev server, the worker and the webhook
 * gateway as processes of the sources (`npm run worker`, `npm run gateway`), configured through the
 * environment. The gateway is its own process, as in docker-compose.yml, so an orphan's webhook
 * still becomes a signal while no worker runs. The reliability suite runs the same case on the
 * production-shaped server (test/reliability/batch-worker-kill.test.ts, 2,000 items).
 *
 * A kill cuts the submit pages in flight: the jobs their last heartbeat named are kept, the rest of
 * those pages are uncertain submits under the lease. An orphan (a request that reached the service
 * but whose id never reached the workflow) reports itself by webhook and is adopted, then extended;
 * an item with none is sent again only after its lease and the webhook window, when no orphan of it
 * can be live (README "Batches", "Submitting under a lease").
 */
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import { expectEveryItemCompletedOnce, runWorkerKillBatch } from '../support/batch-scenarios';
import { type Stack, startProcessStack } from '../support/process-stack';

const ITEMS = 800;
const WORKERS = 200;
/** The kills, as shares of the items the service has acted on. */
const KILL_AT = [0.25, 0.5, 0.75];

describe('the worker SIGKILLed three times mid-batch (dev server, emulator over HTTP, worker and gateway processes)', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Service time is real time: the lease and the webhook retries (10 s apart) are the spec's.
    stack = await startProcessStack({
      name: 'batch-worker-kill',
      timeScale: 1,
      temporal: { address: inject('temporalAddress'), namespace: 'default' },
      entries: 'sources',
      dirPrefix: 'integration',
    });
  }, 300_000);
  afterAll(async () => {
    await stack?.close();
  }, 120_000);

  it(`${KILL_AT.length} SIGKILLs during a batch of ${ITEMS} items: every item completes, each submitted exactly once`, async () => {
    const { figures, summary } = await runWorkerKillBatch(stack, {
      items: ITEMS,
      workers: WORKERS,
      killAt: KILL_AT,
      job: {
        // The lease as a duration: only then does it apply to the items of a page cut by a kill
        // whose requests never reported ('auto' applies only once a request is known to name a
        // webhook, and a cut page's items would fall back to onUncertainSubmit). It must outlast
        // the time from an orphan's submission to its extension: the cut page noticed (its
        // heartbeat timeout, submitTimeout below), a new worker up (it bundles the workflows
        // from the sources: about 8 s here, several times that on a loaded machine), the orphan's
        // webhook adopted and the extension made. 90 s leaves room for a slow restart and for a
        // kill that cuts an extension (retried after a quarter of the lease); the cost is an item
        // whose request never reached the service, sent again after 90 + 30 s.
        submitLease: '90 seconds',
        submitTimeout: 15_000,
        // Room for an item sent again after one kill and cut by the next (a lapse counts here; a
        // resend after the lease has maxLeaseResubmits of its own).
        maxSubmissions: 5,
      },
      report: { name: 'batch-worker-kill (dev server)', prefix: 'INTEGRATION' },
      killWaitMs: 300_000,
      summaryWaitMs: 420_000,
    });

    // Exactly one submission per item, and so exactly one run; every item completed with its own
    // output, from that one job, one result line each.
    expectEveryItemCompletedOnce(figures, summary, ITEMS, { exactlyOneSubmission: true });
  }, 600_000);
});
