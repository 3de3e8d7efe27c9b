/**
 * The worker's throughput (jobs per second) with the library's metrics off, on, and on with
 * tracing (spans to an in-memory exporter), in the same run, on one dev server and one emulator.
 * Rounds alternate the modes so that a machine getting busier or quieter shows in every mode
 * alike. Prints figures; asserts nothing.
 *
 *   npx tsx bench/metrics-overhead.ts [--jobs 50] [--rounds 2]
 *
 * Each round of a mode starts its own worker (runWorker, bundling the workflows at start in every
 * mode, since tracing needs that) on a fresh task queue, starts --jobs jobs at once and times from
 * the first start to the last result. The jobs take no service time (the emulator's scripted
 * handler with sleepMs 0, and service time runs 50 times faster, so cold starts are short while a result still outlives a
 * loaded machine's slowest poll) and
 * are polled fast, so the figure is the worker's and Temporal's work per job, not the jobs'.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Runtime } from '@temporalio/worker';
import { startEmulator } from '../emulator';
import { awaitJob, startJob } from '../index';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { startDevServer } from './support';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? Math.round(value) : fallback;
};
const JOBS = arg('jobs', 50);
const ROUNDS = arg('rounds', 2);
const POLLING = { initialInterval: 50, maxInterval: 100, backoffCoefficient: 1.5 };

type Mode = 'metrics off' | 'metrics on' | 'metrics + traces';
const MODES: Mode[] = ['metrics off', 'metrics on', 'metrics + traces'];

async function main(): Promise<void> {
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-metrics-${run}`);
  const env = await startDevServer();
  const emulator = await startEmulator({ timeScale: 50, accounts: [{ apiKey }] });
  const endpointId = emulator.control.createEndpoint(apiKey, {
    name: 'bench-metrics',
    templateId: 'scripted',
    gpuIds: 'AMPERE_16',
    workersMax: 1000,
  }).id;
  const results = new Map<Mode, number[]>();
  try {
    console.log(
      `worker throughput, metrics off / on / on + traces: ${JOBS} jobs per round, ${ROUNDS} rounds`,
    );
    console.log(`  cores: ${os.cpus().length}, node ${process.version}`);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const mode of MODES) {
        const taskQueue = `bench-metrics-${run}-${round}-${mode.replace(/\W+/g, '-')}`;
        const config = loadWorkerConfig({
          TEMPORAL_ADDRESS: env.address,
          TEMPORAL_TASK_QUEUE: taskQueue,
          SERVERLESS_API_KEY: apiKey,
          SERVERLESS_API_URL: emulator.apiUrl,
          SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
          SERVERLESS_REST_URL: emulator.restUrl,
          RESULT_STORE_DIR: path.join(workdir, 'results'),
          ...(mode === 'metrics off'
            ? {}
            : { WORKER_METRICS_PORT: '0', SERVERLESS_PRICES: '{"perSecond":{"AMPERE_16":0.0002}}' }),
        });
        const exporter = new InMemorySpanExporter();
        const stop = new AbortController();
        let ready!: () => void;
        const isReady = new Promise<void>((resolve) => {
          ready = resolve;
        });
        const worker = runWorker(config, {
          signal: stop.signal,
          logger: createLogger({ level: 'error', secrets: [apiKey] }),
          workflowBundlePath: false,
          ...(mode === 'metrics + traces'
            ? { tracing: { spanProcessor: new SimpleSpanProcessor(exporter) } }
            : {}),
          onReady: () => ready(),
        });
        await Promise.race([isReady, worker]);
        const started = performance.now();
        const handles = await Promise.all(
          Array.from({ length: JOBS }, (_, i) =>
            startJob(
              env.client,
              { endpointId, request: { input: { sleepMs: 0, output: i } }, polling: POLLING },
              { workflowId: `${taskQueue}-${i}`, taskQueue },
            ),
          ),
        );
        const settled = await Promise.allSettled(
          handles.map((handle) => awaitJob(env.client, { job: handle })),
        );
        const failed = settled.filter((r) => r.status === 'rejected').length;
        const seconds = (performance.now() - started) / 1000;
        // Read before the worker stops: its shutdown shuts the exporter, which empties it.
        const spanCount = exporter.getFinishedSpans().length;
        stop.abort();
        await worker;
        const rate = JOBS / seconds;
        results.set(mode, [...(results.get(mode) ?? []), rate]);
        const spans = `${mode === 'metrics + traces' ? `, ${spanCount} spans` : ''}${failed ? `, ${failed} FAILED` : ''}`;
        console.log(
          `  round ${round}, ${mode.padEnd(16)} ${rate.toFixed(1)} jobs/s (${seconds.toFixed(2)} s)${spans}`,
        );
      }
    }
    // On a shared machine a round can stall for reasons of its own: the best round of each mode
    // is the figure to compare, the median the one to doubt it with.
    const best = (values: number[]) => Math.max(...values);
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
    const base = results.get('metrics off') ?? [];
    for (const mode of MODES) {
      const rates = results.get(mode) ?? [];
      const change =
        mode === 'metrics off' ? '' : ` (best ${((best(rates) / best(base) - 1) * 100).toFixed(1)}% vs off)`;
      console.log(
        `${mode.padEnd(16)} best ${best(rates).toFixed(1)} jobs/s, median ${median(rates).toFixed(1)} over ${rates.length} rounds${change}`,
      );
    }
    console.log(
      `load average at the end: ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    );
  } finally {
    await emulator.close();
    await env.teardown();
    await rm(workdir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
