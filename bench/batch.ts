/**
 * The batch engine against a bare loop over api/, in the same run, on the same emulator: N items of
 * 1 s service time on an endpoint of 200 warm workers, the service's rate limits on (the client's
 * limiter paces both). Prints the wall times, their ratio, the batch's history events per item and
 * its number of runs, and the activity slots it held at once (the worker's getStatus() sampled every
 * 100 ms while the batch runs: most and mean; and the most activity tasks running at once, counted
 * by an interceptor). Asserts nothing.
 *
 *   npm run bench:batch [-- --items 2000] [--concurrency 1000] [--workers 200] [--service-ms 1000]
 *   npm run bench:batch -- --faults [--items 2000] [--lease-s 60]
 *
 * The bare loop: submit every item at once (the limiter queues them), then look at every job not
 * finished yet, once a second, until all are. The batch: one serverlessBatch with the items inline,
 * run by the library's worker (runWorker) in this process, on a dev server of its own.
 *
 * --faults: the batch alone (no bare loop: it has no answer to faults) under the fault mix
 * (emulator/fault-mix.ts), webhooks armed, submitting under a lease (--lease-s, default the
 * library's 60 s): completed / uncertain resolved / failed, submissions per item, and the
 * emulator's check that no item's job ran to completion twice.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Runtime } from '@temporalio/worker';
import { createServiceClient } from '../api';
import { awaitBatch, startBatch } from '../client/batches';
import { startEmulator } from '../emulator';
import { injectLeaseFaultMix } from '../emulator/fault-mix';
import { createLogger } from '../worker/logger';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { historyByKind, startDevServer, startInProcessWorker, warmEndpoint } from './support';
import { installWorkerProbe } from './worker-probe';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const ITEMS = Math.round(arg('items', 2_000));
const CONCURRENCY = Math.round(arg('concurrency', 1_000));
const WORKERS = Math.round(arg('workers', 200));
const SERVICE_MS = Math.round(arg('service-ms', 1_000));
const FAULTS = process.argv.includes('--faults');
const LEASE_S = arg('lease-s', 60);
const say = (line: string) => console.log(line);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

async function main() {
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
  const env = await startDevServer();
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-batch-'));
  const service = {
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  };

  const request = (i: number) => ({ input: { sleepMs: SERVICE_MS, output: { i } } });

  say(`${ITEMS} items of ${SERVICE_MS} ms on ${WORKERS} emulator workers, rate limits on`);

  // --- the bare loop over api/
  let bareMs = Number.NaN;
  if (!FAULTS) bareMs = await bareLoop();
  async function bareLoop(): Promise<number> {
    const bareEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
    const client = createServiceClient(service);
    const bareStart = performance.now();
    const ids = await Promise.all(
      Array.from({ length: ITEMS }, (_, i) =>
        client.jobs.run(bareEndpoint, request(i)).then((job) => job.id),
      ),
    );
    let pending = ids;
    let statusCalls = 0;
    while (pending.length > 0) {
      const statuses = await Promise.all(
        pending.map((id) => client.jobs.status(bareEndpoint, id).then((status) => status.status)),
      );
      statusCalls += pending.length;
      pending = pending.filter((_, k) => !TERMINAL.has(statuses[k] as string));
      if (pending.length > 0) await sleep(1_000);
    }
    const ms = performance.now() - bareStart;
    await client.close();
    say(`bare loop: ${(ms / 1000).toFixed(1)} s (${statusCalls} status calls)`);
    return ms;
  }

  // --- the batch engine
  const batchEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
  const taskQueue = `bench-batch-${randomUUID()}`;
  // Before runWorker creates its Worker: the probe wraps Worker.create.
  const probe = installWorkerProbe();
  const worker = await startInProcessWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    resultStoreDir: resultDir,
    webhooks: FAULTS,
    run: { publicUrlFromGateway: FAULTS },
  });
  const removeFaults = FAULTS ? injectLeaseFaultMix(emulator.control, batchEndpoint) : () => undefined;
  const rssBefore = process.memoryUsage().rss;
  const slots = { max: 0, sum: 0, samples: 0 };
  const sampler = setInterval(() => {
    const inFlight = probe.worker()?.getStatus().numInFlightActivities ?? 0;
    slots.max = Math.max(slots.max, inFlight);
    slots.sum += inFlight;
    slots.samples += 1;
  }, 100);
  probe.resetPeak();
  const batchStart = performance.now();
  const handle = await startBatch(
    env.client,
    {
      endpointId: batchEndpoint,
      items: { inline: Array.from({ length: ITEMS }, (_, i) => request(i)) },
      maxConcurrency: CONCURRENCY,
      // Under the faults: the lease (webhooks are armed), and room for uncertain submits in a row.
      ...(FAULTS ? { job: { submitLease: LEASE_S * 1000, maxSubmissions: 6 } } : {}),
    },
    { workflowId: `bench-batch-${randomUUID()}`, taskQueue },
  );
  const summary = await awaitBatch(env.client, { batch: handle }).finally(removeFaults);
  const batchMs = performance.now() - batchStart;
  clearInterval(sampler);
  say(
    `batch: ${(batchMs / 1000).toFixed(1)} s; completed ${summary.counts.completed}/${summary.total}, ` +
      `submissions ${summary.submissions}, emulator submissions ${emulator.control.submissions(batchEndpoint)}`,
  );
  say(
    `history: ${summary.historyEvents} events in ${summary.runs} run(s) = ` +
      `${(summary.historyEvents / ITEMS).toFixed(3)} per item; worker RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB ` +
      `(${(rssBefore / 2 ** 20).toFixed(0)} MiB before)`,
  );
  say(
    `activity slots held by the batch: most at once ${slots.max} (getStatus, every 100 ms), mean ` +
      `${(slots.sum / Math.max(1, slots.samples)).toFixed(2)} over ${slots.samples} samples; most tasks running at ` +
      `once (interceptor) ${probe.peak()}; tasks: ${[...probe.tasksByType.entries()].map(([type, n]) => `${type} ${n}`).join(', ')}`,
  );
  say(`history by kind, all runs: ${await historyByKind(env.client, handle.workflowId)}`);
  if (FAULTS) {
    const { uncertainAdopted, resubmittedAfterLease, leaseLapses } = summary.lease;
    const live = emulator.control.jobs(batchEndpoint);
    const perItem = new Map<string, number>();
    for (const job of live)
      if (job.status === 'COMPLETED')
        perItem.set(job.webhook ?? job.id, (perItem.get(job.webhook ?? job.id) ?? 0) + 1);
    say(
      `fault mix, lease ${LEASE_S} s: completed ${summary.counts.completed}, failed ${summary.failures}; ` +
        `uncertain submits ${summary.uncertainSubmits}, resolved ${uncertainAdopted + resubmittedAfterLease} ` +
        `(adopted ${uncertainAdopted}, submitted again after the lease ${resubmittedAfterLease}); ` +
        `lease lapses ${leaseLapses}; submissions per item ${(summary.submissions / ITEMS).toFixed(3)}`,
    );
    say(
      `emulator: items with a completed job ${perItem.size}, items completed twice ` +
        `${[...perItem.values()].filter((n) => n > 1).length}, jobs still live and unfinished ` +
        `${live.filter((job) => job.status !== 'COMPLETED').length}`,
    );
  } else say(`ratio (bare loop time / batch time): ${(bareMs / batchMs).toFixed(2)}`);

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
