/**
 * A batch whose endpoint loses its workers half way, with and without a route to fall back on:
 * the same N items (service time each, on warm emulator endpoints), once on one endpoint that is
 * starved for a fixed service time once half the items are done (the batch waits it out), once
 * over a route [a, b] where a is starved the same way (its queue is withdrawn to b). Prints the
 * time to completion of both, the route's split and its moves. Asserts nothing.
 *
 *   npm run bench:batch-route [-- --items 2000] [--workers 100] [--service-ms 10000]
 *                             [--time-scale 10] [--outage-ms 600000] [--concurrency 200]
 *
 * Durations are service time (the emulator's clock, --time-scale times faster than real time);
 * the route's queueDelayLimit (5 s) and recheckAfter (30 s) are workflow (real) time.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { awaitBatch, type BatchInput, getBatchProgress, startBatch } from '../client/batches';
import { startEmulator } from '../emulator';
import {
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startDevServer,
  startInProcessWorker,
  warmEndpoint,
} from './support';

const ITEMS = Math.round(numberArg('items', 2_000));
const WORKERS = Math.round(numberArg('workers', 100));
const SERVICE_MS = Math.round(numberArg('service-ms', 10_000));
const TIME_SCALE = numberArg('time-scale', 10);
const OUTAGE_MS = Math.round(numberArg('outage-ms', 600_000));
const CONCURRENCY = Math.round(numberArg('concurrency', 200));

async function main() {
  quietRuntime();
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: TIME_SCALE, accounts: [{ apiKey }] });
  const env: TestWorkflowEnvironment = await startDevServer();
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-batch-route-'));
  const taskQueue = `bench-batch-route-${randomUUID()}`;
  const worker = await startInProcessWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    resultStoreDir: resultDir,
    webhooks: false,
  });

  const items = Array.from({ length: ITEMS }, (_, i) => ({ input: { sleepMs: SERVICE_MS, output: { i } } }));

  /** Runs the batch; starves `starved` for OUTAGE_MS once half the items are done. */
  async function run(label: string, target: Pick<BatchInput, 'endpointId' | 'route'>, starved: string) {
    const started = performance.now();
    const handle = await startBatch(
      env.client,
      { ...target, items: { inline: items }, maxConcurrency: CONCURRENCY, job: { submitLease: false } },
      { workflowId: `bench-batch-route-${randomUUID()}`, taskQueue },
    );
    for (;;) {
      const progress = await getBatchProgress(env.client, { batch: handle.workflowId }).catch(
        () => undefined,
      );
      if (progress && progress.done >= ITEMS / 2) break;
      await sleep(100);
    }
    const outageAt = performance.now();
    emulator.control.starveEndpoint(starved, { until: emulator.control.now() + OUTAGE_MS });
    const summary = await awaitBatch(env.client, { batch: handle });
    const ms = performance.now() - started;
    const split = Object.entries(summary.endpoints ?? {})
      .map(([id, part]) => `${id.slice(0, 8)} ${part.completed}`)
      .join(', ');
    say(
      `${label}: ${seconds(ms)} to completion (outage from ${seconds(outageAt - started)}); ` +
        `completed ${summary.counts.completed}/${summary.total}; split ${split}; moved ${summary.hops ?? 0}`,
    );
    return ms;
  }

  say(
    `${ITEMS} items of ${SERVICE_MS} ms (service time, scale ${TIME_SCALE}) on endpoints of ${WORKERS} warm ` +
      `workers, maxConcurrency ${CONCURRENCY}; the endpoint loses its workers half way for ${OUTAGE_MS} ms ` +
      `(${seconds(OUTAGE_MS / TIME_SCALE)} real)`,
  );
  const alone = await warmEndpoint(emulator, apiKey, WORKERS);
  const single = await run('one endpoint, no route', { endpointId: alone }, alone);
  const a = await warmEndpoint(emulator, apiKey, WORKERS);
  const b = await warmEndpoint(emulator, apiKey, WORKERS);
  const routed = await run(
    'route [a, b]',
    {
      route: {
        endpoints: [{ endpointId: a }, { endpointId: b }],
        queueDelayLimit: '5 seconds',
        recheckAfter: '30 seconds',
      },
    },
    a,
  );
  say(`ratio (one endpoint / route): ${(single / routed).toFixed(2)}`);

  await worker.stop();
  await env.teardown();
  await emulator.close();
  rmSync(resultDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
