/**
 * The batch against the loop a user would write over api/, in one run, on one emulator (time scale
 * 1, the service's rate limits on), each on an endpoint of its own with the same warm workers.
 *
 * The loop: 64 concurrent submitters send every item with `run`; then rounds of `status` over every
 * job not finished, by 64 concurrent pollers, one second between rounds, until none is left.
 * The batch: startBatch/awaitBatch with the items inline, run by one worker in a process of its own
 * configured as `npm run worker` is (SDK default slots), webhooks on (the gateway beside it).
 *
 * Prints both times and their ratio (loop time / batch time: 1 is the loop's speed), items
 * completed, submissions per item (the emulator's count), history events per item, and where the
 * batch's time went (bench/batch-breakdown.ts). Asserts nothing.
 *
 *   npm run bench:batch-vs-loop                       2,000 items of 2 s, 200 workers, maxConcurrency 400
 *   npm run bench:batch-vs-loop -- --shape 500        500 items of 0.5 s, 100 workers, maxConcurrency 200
 *   npm run bench:batch-vs-loop -- --shape 10000      10,000 items of 2 s, 200 workers, maxConcurrency 400
 *   npm run bench:batch-vs-loop -- --small            200 items of 0.5 s, 50 workers, maxConcurrency 100
 *   ... [--concurrency 400,200,250] [--items N] [--service-ms N] [--workers N] [--no-loop]
 *
 * Several maxConcurrency values run one batch each, one after another, after the one loop.
 * BENCH_DUMP=run.json writes each batch's jobs, result lines, webhook deliveries, activity calls
 * and history events (with their times) to run-1.json, run-2.json, ...: the first batch is the
 * worker's first workflow, as a freshly started worker's is.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServiceClient } from '../api';
import { awaitBatch, readBatchResults, startBatch } from '../client/batches';
import { type Emulator, startEmulator } from '../emulator';
import {
  activityLines,
  historyFigures,
  type JobTimes,
  refillLatencies,
  serviceUse,
  spread,
  watcherLatencies,
} from './batch-breakdown';
import {
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startBenchWorker,
  startDevServer,
  warmEndpoint,
} from './support';

const SHAPES = {
  '2000': { items: 2_000, serviceMs: 2_000, workers: 200, concurrency: [400] },
  '500': { items: 500, serviceMs: 500, workers: 100, concurrency: [200] },
  '10000': { items: 10_000, serviceMs: 2_000, workers: 200, concurrency: [400] },
  small: { items: 200, serviceMs: 500, workers: 50, concurrency: [100] },
} as const;

function shapeArg(): keyof typeof SHAPES {
  if (process.argv.includes('--small')) return 'small';
  const index = process.argv.indexOf('--shape');
  const name = index >= 0 ? process.argv[index + 1] : '2000';
  if (name === undefined || !(name in SHAPES))
    throw new Error(`--shape: must be one of ${Object.keys(SHAPES).join(', ')}`);
  return name as keyof typeof SHAPES;
}

function concurrencyArg(fallback: readonly number[]): number[] {
  const index = process.argv.indexOf('--concurrency');
  if (index < 0) return [...fallback];
  const values = String(process.argv[index + 1])
    .split(',')
    .map(Number);
  if (values.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error('--concurrency: must be positive whole numbers separated by commas');
  return values;
}

const shape = SHAPES[shapeArg()];
const ITEMS = Math.round(numberArg('items', shape.items));
const SERVICE_MS = Math.round(numberArg('service-ms', shape.serviceMs));
const WORKERS = Math.round(numberArg('workers', shape.workers));
const CONCURRENCY = concurrencyArg(shape.concurrency);
const LOOP = !process.argv.includes('--no-loop');
/** The user's loop: how many submit at once, and how many poll at once. */
const SUBMITTERS = 64;
const POLLERS = 64;
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

const request = (i: number) => ({ input: { sleepMs: SERVICE_MS, output: { i } } });

/** Runs `work` for every index 0..count-1 on `lanes` concurrent lanes. */
async function lanes(count: number, width: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

function jobTimes(emulator: Emulator, endpointId: string): JobTimes[] {
  return emulator.control.jobs(endpointId, { removed: true }).map((job) => ({
    id: job.id,
    submittedAt: job.submittedAt,
    ...(job.startedAt === undefined ? {} : { startedAt: job.startedAt }),
    ...(job.finishedAt === undefined ? {} : { finishedAt: job.finishedAt }),
  }));
}

async function main() {
  quietRuntime();
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
  const env = await startDevServer();
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-batch-vs-loop-'));
  const service = {
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  };
  say(
    `${ITEMS} items of ${seconds(SERVICE_MS)} on ${WORKERS} emulator workers, time scale 1, rate limits on, ` +
      `webhooks on for the batch; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'})`,
  );

  let loopMs = Number.NaN;
  if (LOOP) {
    const endpointId = await warmEndpoint(emulator, apiKey, WORKERS);
    const client = createServiceClient(service);
    const started = performance.now();
    const ids: string[] = new Array(ITEMS);
    await lanes(ITEMS, SUBMITTERS, async (i) => {
      ids[i] = (await client.jobs.run(endpointId, request(i))).id;
    });
    const submittedMs = performance.now() - started;
    let pending = ids;
    let rounds = 0;
    let completed = 0;
    while (pending.length > 0) {
      const still: string[] = [];
      const round = pending;
      await lanes(round.length, POLLERS, async (k) => {
        const id = round[k] as string;
        const { status } = await client.jobs.status(endpointId, id);
        if (!TERMINAL.has(status)) still.push(id);
        else if (status === 'COMPLETED') completed++;
      });
      rounds++;
      pending = still;
      if (pending.length > 0) await sleep(1_000);
    }
    loopMs = performance.now() - started;
    await client.close();
    say(
      `loop: ${seconds(loopMs)} (every item sent after ${seconds(submittedMs)}, ${rounds} rounds of status); ` +
        `completed ${completed}/${ITEMS}; submissions per item ${(emulator.control.submissions(endpointId) / ITEMS).toFixed(3)}`,
    );
  }

  const taskQueue = `bench-batch-vs-loop-${randomUUID()}`;
  const worker = await startBenchWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    webhooks: true,
    resultStoreDir: resultDir,
  });
  let dumps = 0;
  for (const maxConcurrency of CONCURRENCY) {
    const endpointId = await warmEndpoint(emulator, apiKey, WORKERS);
    worker.reset();
    const started = performance.now();
    const startedAt = Date.now();
    const handle = await startBatch(
      env.client,
      { endpointId, items: { inline: Array.from({ length: ITEMS }, (_, i) => request(i)) }, maxConcurrency },
      { workflowId: `bench-batch-vs-loop-${randomUUID()}`, taskQueue },
    );
    const summary = await awaitBatch(env.client, { batch: handle });
    const batchMs = performance.now() - started;
    const endedAt = Date.now();
    const figures = await worker.figures();
    say(
      `batch, maxConcurrency ${maxConcurrency}: ${seconds(batchMs)}` +
        (LOOP ? `; ratio loop/batch ${(loopMs / batchMs).toFixed(2)}` : '') +
        `; completed ${summary.counts.completed}/${summary.total}; submissions per item ` +
        `${(emulator.control.submissions(endpointId) / ITEMS).toFixed(3)} (emulator), ` +
        `${(summary.submissions / ITEMS).toFixed(3)} (batch); history ${summary.historyEvents} events in ` +
        `${summary.runs} run(s) = ${(summary.historyEvents / ITEMS).toFixed(3)} per item`,
    );

    // Where the time went.
    const jobs = jobTimes(emulator, endpointId);
    const use = serviceUse(jobs, WORKERS);
    const lines: Array<{ jobId?: string; finishedAt?: number }> = [];
    for await (const line of readBatchResults(env.client, { batch: summary, store: resultDir }))
      lines.push(line);
    const byId = new Map(jobs.map((job) => [job.id, job]));
    const events: Parameters<typeof historyFigures>[0] = [];
    for await (const run of env.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
      const history = await env.client.workflow.getHandle(handle.workflowId, run.runId).fetchHistory();
      events.push(...(history.events ?? []));
    }
    const history = historyFigures(events);
    if (process.env.BENCH_DUMP)
      (await import('node:fs')).writeFileSync(
        process.env.BENCH_DUMP.replace(/\.json$/, `-${++dumps}.json`),
        JSON.stringify({
          jobs,
          lines,
          deliveries: emulator.control.webhookDeliveries(),
          activities: history.activities,
          startedAt,
          events: events.map((event) => ({
            type: event.eventType,
            at:
              Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6),
          })),
        }),
      );
    const webhookLag = emulator.control
      .webhookDeliveries()
      .map((delivery) => {
        const end = byId.get(delivery.jobId)?.finishedAt;
        return end === undefined ? undefined : delivery.at - end;
      })
      .filter((ms): ms is number => ms !== undefined);
    say(
      `  service: workers busy ${(use.busyShare * 100).toFixed(0)}% of ${seconds(use.spanMs)}; last submit at ` +
        `${seconds(use.lastSubmitMs)} (${use.submitsPerSecond.toFixed(0)} submits/s); queue wait ${spread(use.queueWaits)}`,
    );
    // The batch's own latency at both ends, where the loop's submit and last look have none to hide.
    const firstSubmit = Math.min(...jobs.map((job) => job.submittedAt));
    const lastEnd = Math.max(...jobs.map((job) => job.finishedAt ?? 0));
    say(
      `  ends: first submit ${Math.round(firstSubmit - startedAt)} ms after the start; the last job's end to the ` +
        `batch's result ${Math.round(endedAt - lastEnd)} ms`,
    );
    say(
      `  refill (a job's end to the submit into its place): ${spread(refillLatencies(jobs, maxConcurrency))}`,
    );
    say(`  watcher (a job's end to its watcher's look): ${spread(watcherLatencies(byId, lines))}`);
    say(
      `  webhook (a job's end to its delivery): ${spread(webhookLag)} over ${webhookLag.length} deliveries`,
    );
    // The watcher's own part: the first delivery of a job's webhook to the look that saw the job.
    const delivered = new Map<string, number>();
    for (const delivery of emulator.control.webhookDeliveries())
      if (!delivered.has(delivery.jobId)) delivered.set(delivery.jobId, delivery.at);
    const afterDelivery = lines
      .map((line) => {
        const at = line.jobId === undefined ? undefined : delivered.get(line.jobId);
        return at === undefined || line.finishedAt === undefined ? undefined : line.finishedAt - at;
      })
      .filter((ms): ms is number => ms !== undefined);
    say(`  watcher after the webhook (its delivery to the look that saw the job): ${spread(afterDelivery)}`);
    say(`  watcher answer to the next submit page scheduled: ${spread(history.completionToSubmit)}`);
    say(
      `  workflow tasks: ${history.taskPickup.length}; scheduled to started ${spread(history.taskPickup)}; ` +
        `started to completed ${spread(history.taskRun)}`,
    );
    for (const line of activityLines(history.activities)) say(`  ${line}`);
    say(
      `  worker: activity slots ${figures.activitySlots ?? '?'}, most in flight ${figures.inFlightMax}, mean ` +
        `${figures.inFlightMean.toFixed(1)}; tasks ${Object.entries(figures.tasksByType)
          .map(([type, n]) => `${type} ${n}`)
          .join(', ')}`,
    );
  }

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
