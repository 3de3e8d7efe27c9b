/**
 * A batch while its Temporal dev server is SIGKILLed mid-batch and started again on its database
 * file (`temporal server start-dev --db-filename`): every item completes with its own output, and
 * the emulator made exactly one job per item (one /run acted on per item, counted per item from
 * the service's jobs, deleted ones too).
 *
 * The file starts a dev server of its own (test/support/dev-server-process.ts: the shared one of
 * global-setup.ts keeps its state in memory and serves every other file), and the emulator over
 * HTTP, the worker and the webhook gateway as processes of the sources, configured through the
 * environment; nothing is mocked. The reliability suite runs the same case on the
 * production-shaped server (test/reliability/batch-restart.test.ts, 2,000 items).
 *
 * The server goes down once the service has acted on a quarter of the items and has jobs running,
 * and stays down until every job the service has is finished, so their results arrive while nothing
 * can record them: the watchers' looks, the activities' completions and the gateway's signals wait
 * for the restart (README "Reliability").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBatch } from '../../client/batches';
import { expectEveryItemCompletedOnce, startScriptedBatch } from '../support/batch-scenarios';
import { reportBatch, tallyBatch } from '../support/batch-tally';
import { type DevServerProcess, startDevServerProcess } from '../support/dev-server-process';
import { outage, type Stack, startProcessStack, untilAnswered } from '../support/process-stack';

const ITEMS = 800;
const STRIKE_AFTER_SUBMISSIONS = ITEMS / 4;
const WORKERS = 200;

describe('the dev server SIGKILLed and restarted on its database file mid-batch (emulator over HTTP, worker and gateway processes)', () => {
  let server: DevServerProcess | undefined;
  let stack: Stack | undefined;
  beforeAll(async () => {
    server = await startDevServerProcess('batch-restart');
    // Service time is real time: the lease and the webhook retries (10 s apart) are the spec's.
    stack = await startProcessStack({
      name: 'batch-dev-server-restart',
      timeScale: 1,
      temporal: { address: server.address, namespace: 'default' },
      entries: 'sources',
      dirPrefix: 'integration',
    });
  }, 300_000);
  afterAll(async () => {
    try {
      await stack?.close();
    } finally {
      await server?.close();
    }
  }, 120_000);

  it(`a batch of ${ITEMS} items through the restart: every item completes, each submitted exactly once`, async () => {
    const live = stack as Stack;
    const temporal = server as DevServerProcess;
    const startedAt = Date.now();
    const worker = live.startWorker();
    await worker.running;
    const { endpointId, handle } = await startScriptedBatch(live, {
      name: 'batch-dev-server-restart',
      items: ITEMS,
      workers: WORKERS,
      sleepMs: 1_000,
      job: {
        // The worker lives through the restart, so a submit page normally answers once the server
        // is back. If one does not (the server down past its heartbeat timeout, submitTimeout
        // below), its items not named by its last heartbeat are uncertain: under a lease given as
        // a duration an orphan reports itself by webhook and is adopted, and an item is sent again
        // only after its lease and the webhook window. The reliability case's
        // `uncertainSubmitWait: 30 s` with `onUncertainSubmit: 'resubmit'` would instead send
        // again after 30 s whether or not an orphan exists ('auto' gives a cut page's items no
        // lease), which could make a second job of an item whose webhook is late.
        submitLease: '90 seconds',
        submitTimeout: 15_000,
        maxSubmissions: 5,
      },
    });

    // Mid-batch, chosen by the service's count; down until every job the service has is finished.
    const killed: Array<{ signal: NodeJS.Signals | null; submissions: number }> = [];
    const down = await outage(
      live,
      { started: () => live.submissions(), settled: () => live.submissions() - live.runningAtService() },
      STRIKE_AFTER_SUBMISSIONS,
      {
        begin: async () => {
          const submissions = live.submissions();
          const child = temporal.child();
          await temporal.kill();
          killed.push({ signal: child?.signalCode ?? null, submissions });
        },
        end: () => temporal.start(),
      },
    );

    const summary = await untilAnswered(
      () => awaitBatch(live.client, { batch: handle }),
      Date.now() + 420_000,
    );
    const figures = await tallyBatch(live, endpointId, summary);
    reportBatch(
      'batch-dev-server-restart',
      figures,
      `dev server SIGKILLed at ${killed.map((k) => k.submissions).join(', ')} submissions, down ` +
        `${(down.downMs / 1000).toFixed(1)} s (restart included) while the ${down.runningAtService} running at the ` +
        `service finished; ${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain ` +
        `submits (${summary.lease.uncertainAdopted} adopted from their webhook), ${summary.lease.leaseLapses} lease ` +
        `lapses; ${summary.runs} run(s), ${summary.historyEvents} history events`,
      startedAt,
      'INTEGRATION',
    );

    // The server really crashed mid-batch, with jobs running at the service.
    expect(killed.map((k) => k.signal)).toEqual(['SIGKILL']);
    expect(down.runningAtService).toBeGreaterThan(0);
    expect(killed[0]?.submissions).toBeLessThan(ITEMS);
    // Exactly one submission per item, and so exactly one run; every item completed with its own
    // output, from that one job, one result line each.
    expectEveryItemCompletedOnce(figures, summary, ITEMS, { exactlyOneSubmission: true });
  }, 600_000);
});
