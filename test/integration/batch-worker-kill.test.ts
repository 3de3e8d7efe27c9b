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
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { finishedSummary, startBatch } from '../../client/batches';
import { batchItemOutput, reportBatch, tallyBatch } from '../support/batch-tally';
import {
  type ManagedProcess,
  type Stack,
  startProcessStack,
  until,
  untilAnswered,
} from '../support/process-stack';

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
        maxConcurrency: WORKERS,
      },
      { workflowId: `batch-worker-kill-${randomUUID()}`, taskQueue: stack.taskQueue },
    );

    const kills: Array<{ submissions: number; runningAtService: number }> = [];
    for (const share of KILL_AT) {
      const target = ITEMS * share;
      // The service's count: only a live worker submits, so reaching it means the last one runs.
      await until(`the service acted on ${target} submissions`, () => stack.submissions() >= target, 300_000);
      const worker = workers.at(-1) as ManagedProcess;
      kills.push({ submissions: stack.submissions(), runningAtService: stack.runningAtService() });
      await worker.kill();
      expect(worker.child.signalCode).toBe('SIGKILL');
      workers.push(stack.startWorker());
    }
    const killsDoneAt = Date.now();

    const summary = await untilAnswered(() => finishedSummary(stack.client, handle), Date.now() + 420_000);
    const figures = await tallyBatch(stack, endpointId, summary);
    reportBatch(
      'batch-worker-kill (dev server)',
      figures,
      `${kills.length} SIGKILLs in ${((killsDoneAt - startedAt) / 1000).toFixed(0)} s, at ` +
        `${kills.map((k) => k.submissions).join(', ')} submissions with ` +
        `${kills.map((k) => k.runningAtService).join(', ')} jobs running at the service; ` +
        `${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain submits ` +
        `(${summary.lease.uncertainAdopted} adopted from their webhook, ${summary.lease.resubmittedAfterLease} ` +
        `sent again after the lease), ${summary.lease.leaseLapses} lease lapses; ` +
        `${summary.runs} run(s), ${summary.historyEvents} history events`,
      startedAt,
      'INTEGRATION',
    );

    // Every kill struck mid-batch.
    expect(Math.max(...kills.map((k) => k.submissions))).toBeLessThan(ITEMS);
    // Every job the service made is counted and names its item: the per-item counts see them all.
    expect(figures.serviceJobs).toBe(figures.serviceSubmissions);
    expect(figures.unattributed).toBe(0);
    // Exactly one submission per item, and so exactly one run.
    expect(figures.submittedTimes, figures.examples).toEqual({ 1: ITEMS });
    expect(figures.serviceSubmissions).toBe(ITEMS);
    expect(figures.ranTwice, figures.examples).toBe(0);
    // Every item completed with its own output, from that one job, one result line each.
    expect(figures.completed, figures.examples).toBe(ITEMS);
    expect(figures.missing).toBe(0);
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
      lease: { leaseLapses: 0 },
    });
  }, 600_000);
});
