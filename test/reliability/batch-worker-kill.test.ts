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
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishedSummary, startBatch } from '../../client/batches';
import {
  batchItemOutput,
  type ManagedProcess,
  reportBatch,
  type Stack,
  startStack,
  tallyBatch,
  until,
  untilAnswered,
} from './support';

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
    const startedAt = Date.now();
    const workers: ManagedProcess[] = [stack.startWorker()];
    await workers[0]?.running;
    const endpointId = stack.endpoint({ workersMin: WORKERS, workersMax: WORKERS });
    const handle = await startBatch(
      stack.client,
      {
        endpointId,
        items: {
          inline: Array.from({ length: ITEMS }, (_, i) => ({
            input: { sleepMs: 500 + (i % 5) * 250, output: batchItemOutput(i) },
          })),
        },
        job: {
          polling: { initialIntervalMs: 500, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
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
        maxConcurrency: WORKERS,
      },
      { workflowId: `batch-worker-kill-${randomUUID()}`, taskQueue: stack.taskQueue },
    );

    const kills: Array<{ submissions: number; runningAtService: number }> = [];
    for (const share of KILL_AT) {
      const target = ITEMS * share;
      await until(`the service acted on ${target} submissions`, () => stack.submissions() >= target);
      const worker = workers.at(-1) as ManagedProcess;
      kills.push({ submissions: stack.submissions(), runningAtService: stack.runningAtService() });
      await worker.kill();
      expect(worker.child.signalCode).toBe('SIGKILL');
      workers.push(stack.startWorker());
    }
    const killsDoneAt = Date.now();

    const summary = await untilAnswered(() => finishedSummary(stack.client, handle), Date.now() + 300_000);
    const figures = await tallyBatch(stack, endpointId, summary);
    reportBatch(
      'batch-worker-kill',
      figures,
      `${kills.length} SIGKILLs in ${((killsDoneAt - startedAt) / 1000).toFixed(0)} s, at ` +
        `${kills.map((k) => k.submissions).join(', ')} submissions with ` +
        `${kills.map((k) => k.runningAtService).join(', ')} jobs running at the service; ` +
        `${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain submits ` +
        `(${summary.lease.uncertainAdopted} adopted from their webhook), ${summary.lease.leaseLapses} lease lapses; ` +
        `${summary.runs} run(s), ${summary.historyEvents} history events (${(summary.historyEvents / ITEMS).toFixed(3)} per item)`,
      startedAt,
    );

    // Every kill struck mid-batch.
    expect(Math.max(...kills.map((k) => k.submissions))).toBeLessThan(ITEMS);
    // Every job the service made is counted, and names its item.
    expect(figures.serviceJobs).toBe(figures.serviceSubmissions);
    expect(figures.unattributed).toBe(0);
    expect(figures.ranTwice, figures.examples).toBe(0);
    expect(figures.neverReached, figures.examples).toBe(0);
    expect(figures.completed, figures.examples).toBe(ITEMS);
    expect(figures.lost, figures.examples).toBe(0);
    expect(summary).toMatchObject({
      total: ITEMS,
      counts: {
        completed: ITEMS,
        failed: 0,
        timedOut: 0,
        expired: 0,
        cancelled: 0,
        uncertain: 0,
        rejected: 0,
      },
      failures: 0,
      notStarted: 0,
    });
  }, 600_000);
});
