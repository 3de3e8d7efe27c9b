/**
 * The batch engine at scale and across several workers: one serverlessBatch
 * of N items from a manifest, run by one or more real worker processes, once per worker count
 * given. Prints, for each: the wall time, completed items, runs (continue-as-new count), history
 * events in all runs together and per item, the largest history of any run, the activity slots
 * each worker held (most and mean), the 429s the emulator sent and the ones the library counted,
 * and peak RSS (each worker process and this bench process). Asserts nothing.
 *
 *   npm run bench:batch-scale [-- --items 100000] [--time-scale 50] [--service-ms 1000]
 *     [--workers 200] [--concurrency 1000] [--processes 1] [--max-minutes 12]
 *   npm run bench:batch-scale -- --items 2000 --time-scale 1 --processes 1,2   # 429s, 1 vs 2 workers
 *   npm run bench:batch-scale -- --items 1000000 --client-limits scaled --max-minutes 40   # 16 min or so
 *   npm run bench:batch-scale -- --items 20000 --time-scale 1 --processes 1,3 --server prod --kill-one-at 0.5
 *     # scale-out: one worker, then three sharing the batch with one SIGKILLed mid-way (about 10 min)
 *
 * BENCH_WORKER_NODE_ARGS passes node flags to the worker processes only (this process's
 * NODE_OPTIONS does not reach them), e.g. --heapsnapshot-signal=SIGUSR2 to look at a worker's heap
 * mid-batch (a snapshot holds the process for seconds and raises its peak RSS).
 *
 * --items        items in the manifest (written with writeBatchManifest, read a page at a time)
 * --time-scale   the emulator's: service time runs this many times faster than real time (its
 *                rate windows of 10 s of service time too; the library's limiter stays in real time)
 * --service-ms   service time of each item (the scripted handler's sleepMs)
 * --workers      the endpoint's warm emulator workers (workersMin = workersMax)
 * --processes    worker processes, a comma-separated list: one batch per entry, one after the other,
 *                each on an endpoint and task queue of its own
 * --server prod  the production-shaped Temporal (PostgreSQL, several history shards) instead of the
 *                dev server (bench/support.ts startBenchTemporal)
 * --kill-one-at  with more than one worker process: SIGKILL one of them once the service has acted
 *                on this share of the items (the others finish the batch); the batch then runs
 *                under a 60 s submit lease with webhooks to a gateway in a process of its own, as
 *                the reliability suite's kills do (time scale 1 only)
 * --store s3     the manifest and the results in a bucket of SeaweedFS (started here; `npm run
 *                provision` builds it), each worker process with a RESULT_STORE_DIR of its own: workers
 *                on several machines, sharing no directory
 * --max-minutes  a batch not done by then is reported with its progress (done, rate) and cancelled
 * --client-limits spec (default): the workers' client paces at the spec's rates in real time;
 *                scaled: at the spec's rates times the time scale (SERVERLESS_RATE_LIMITS), as the
 *                emulator counts its windows in service time: the engine, not the limiter, sets the
 *                pace (for the 100,000-item run)
 *
 * The stack: the Temporal CLI dev server, the emulator in this process (rate limits on, no cold
 * start), and each worker as `npm run worker` runs it (runWorker from the environment, the SDK's
 * default slots, polling only: no webhook gateway) in a process of its own (bench/worker-child.ts),
 * each with its own API client and rate limiter, and the library's /metrics on a port of its own.
 * The emulator has no counter of the 429s it sends: this process counts its HTTP answers by status
 * through node:diagnostics_channel ('http.server.response.finish'; the emulator is the only HTTP
 * server here). Figures on a shared 2-core machine are noisy.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_RATE_LIMITS } from '../api/rate-limit';
import {
  awaitBatch,
  type BatchSummary,
  cancelBatch,
  getBatchProgress,
  startBatch,
  writeBatchManifest,
} from '../client/batches';
import { type Emulator, startEmulator } from '../emulator';
import { type ManagedProcess, spawnEntry } from '../test/support/process-stack';
import { type S3TestServer, startS3Server } from '../test/support/s3-server';
import { METRIC_PREFIX } from '../worker/metrics';
import {
  type BenchTemporal,
  mb,
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startBenchTemporal,
  until,
} from './support';
import { type ChildFigures, startWorkerProcess, type WorkerProcess } from './worker-process';

const ITEMS = Math.round(numberArg('items', 100_000));
const TIME_SCALE = numberArg('time-scale', 50);
const SERVICE_MS = Math.round(numberArg('service-ms', 1_000));
const WORKERS = Math.round(numberArg('workers', 200));
const CONCURRENCY = Math.round(numberArg('concurrency', 1_000));
const MAX_MS = numberArg('max-minutes', 12) * 60_000;
const PROCESSES = (() => {
  const index = process.argv.indexOf('--processes');
  const list = (index >= 0 ? (process.argv[index + 1] ?? '') : '1')
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
  return list.length > 0 ? list : [1];
})();
const PROGRESS_EVERY_MS = 15_000;
const KILL_ONE_AT = (() => {
  const index = process.argv.indexOf('--kill-one-at');
  if (index < 0) return undefined;
  const share = Number(process.argv[index + 1]);
  if (!(share > 0 && share < 1)) throw new Error('--kill-one-at: must be a share between 0 and 1');
  return share;
})();
const STORE_KIND = (() => {
  const index = process.argv.indexOf('--store');
  const value = index >= 0 ? process.argv[index + 1] : 'local';
  if (value !== 'local' && value !== 's3') throw new Error("--store: must be 'local' or 's3'");
  return value;
})();
const CLIENT_LIMITS = (() => {
  const index = process.argv.indexOf('--client-limits');
  const value = index >= 0 ? process.argv[index + 1] : 'spec';
  if (value !== 'spec' && value !== 'scaled') throw new Error("--client-limits: must be 'spec' or 'scaled'");
  return value;
})();
/** The workers' SERVERLESS_RATE_LIMITS under --client-limits scaled: the spec's rates, sped up. */
const SCALED_LIMITS = JSON.stringify(
  Object.fromEntries(
    Object.entries(DEFAULT_RATE_LIMITS).map(([operation, limit]) => [
      operation,
      { ...limit, perTenSeconds: Math.min(1_000_000, Math.round((limit?.perTenSeconds ?? 1) * TIME_SCALE)) },
    ]),
  ),
);

/** The emulator's answers, by operation (the path's last known segment) and status. */
const answers = new Map<string, number>();
/** When the emulator refused a /status (ms since the epoch): the timeline of the report. */
const statusRefusedAt: number[] = [];
function countAnswers(): void {
  diagnostics.subscribe('http.server.response.finish', (message) => {
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    const segments = (request.url ?? '').split('?')[0]?.split('/') ?? [];
    // /v2/<endpoint>/<operation>[/<job id>]
    const operation = segments[1] === 'v2' ? (segments[3] ?? '?') : (segments[1] ?? '?');
    const key = `${operation} ${response.statusCode}`;
    answers.set(key, (answers.get(key) ?? 0) + 1);
    if (operation === 'status' && response.statusCode === 429) statusRefusedAt.push(Date.now());
  });
}
const throttledBy = (counts: Map<string, number>) =>
  [...counts.entries()]
    .filter(([key]) => key.endsWith(' 429'))
    .map(([key, n]) => [key.split(' ')[0] ?? '?', n] as const);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The library's own 429 counts from a worker's /metrics: attempts answered 429, and retries. */
async function libraryThrottled(url: string): Promise<{ answered: Map<string, number>; retried: number }> {
  const text = await (await fetch(url)).text();
  const answered = new Map<string, number>();
  let retried = 0;
  for (const line of text.split('\n')) {
    const call = line.match(
      new RegExp(`^${METRIC_PREFIX}http_calls_total\\{operation="([^"]+)",outcome="429"\\} (\\S+)`),
    );
    if (call) answered.set(call[1] as string, Number(call[2]));
    const retry = line.match(new RegExp(`^${METRIC_PREFIX}rate_limit_retries_total\\{[^}]*\\} (\\S+)`));
    if (retry) retried += Number(retry[1]);
  }
  return { answered, retried };
}

interface Row {
  processes: number;
  finished: boolean;
  wallMs: number;
  summary?: BatchSummary;
  done: number;
  runHistories: number[];
  emulator429: (readonly [string, number])[];
  library429: Map<string, number>;
  libraryRetries: number;
  emulatorSubmissions: number;
  workers: ChildFigures[];
  /** The service's count of submissions when one worker was SIGKILLed (--kill-one-at). */
  killedAt?: number;
  /** Items more than one of whose jobs ran, of the jobs the emulator still holds with their input. */
  ranTwice: number;
  /** When, from the batch's start, the /status refusals came, each run started and the kill fell. */
  timeline: { refusedBySecond: Map<number, number>; runStarts: number[]; killedAtMs?: number };
  /** The emulator's refusals by the limit that refused them (rate or requests at once). */
  refusedBy: Record<string, Partial<Record<string, number>>>;
}

async function runBatch(
  env: BenchTemporal,
  emulator: Emulator,
  apiKey: string,
  resultDir: string,
  manifestKey: string,
  processes: number,
  storeVars: Record<string, string>,
): Promise<Row> {
  const { control } = emulator;
  const endpointId = control.createEndpoint(apiKey, {
    name: `bench-scale-${processes}-${randomUUID().slice(0, 8)}`,
    templateId: 'scripted',
    workersMin: WORKERS,
    workersMax: WORKERS,
  }).id;
  if (!(await until(() => control.health(endpointId).workers.idle >= WORKERS, 60_000, 100))) {
    throw new Error(`the endpoint's ${WORKERS} workers were not idle within 60 s`);
  }
  const taskQueue = `bench-batch-scale-${randomUUID()}`;
  const workers: WorkerProcess[] = [];
  const metricsUrls: string[] = [];
  const kill = KILL_ONE_AT !== undefined && processes > 1 ? KILL_ONE_AT : undefined;
  // With a kill, webhooks go to a gateway of their own (as in docker-compose.yml): the orphans of
  // the pages the kill cut report themselves there and are adopted, where polling alone could
  // not tell an orphan that ran from an item never sent.
  let gateway: ManagedProcess | undefined;
  const webhookVars: Record<string, string> = {};
  if (kill !== undefined) {
    const port = await freePort();
    webhookVars.WEBHOOK_SECRET = randomBytes(32).toString('base64url');
    webhookVars.WEBHOOK_PUBLIC_URL = `http://127.0.0.1:${port}`;
    gateway = spawnEntry(['--import', 'tsx', 'worker/gateway-main.ts'], 'webhook gateway running', {
      TEMPORAL_ADDRESS: env.address,
      WEBHOOK_SECRET: webhookVars.WEBHOOK_SECRET,
      WEBHOOK_PORT: String(port),
      // Its readiness line is an info line.
      LOG_LEVEL: 'info',
    });
    await gateway.running;
  }
  try {
    for (let k = 0; k < processes; k++) {
      const port = await freePort();
      metricsUrls.push(`http://127.0.0.1:${port}/metrics`);
      workers.push(
        await startWorkerProcess({
          TEMPORAL_ADDRESS: env.address,
          TEMPORAL_TASK_QUEUE: taskQueue,
          SERVERLESS_API_KEY: apiKey,
          SERVERLESS_API_URL: emulator.apiUrl,
          SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
          SERVERLESS_REST_URL: emulator.restUrl,
          // A bucket: a directory of each worker's own, shared with no other.
          RESULT_STORE_DIR: STORE_KIND === 's3' ? path.join(resultDir, `worker-${k}`) : resultDir,
          ...storeVars,
          WORKER_METRICS_PORT: String(port),
          LOG_LEVEL: 'error',
          ...webhookVars,
          ...(CLIENT_LIMITS === 'scaled' ? { SERVERLESS_RATE_LIMITS: SCALED_LIMITS } : {}),
        }),
      );
    }
    for (const worker of workers) worker.reset();
    answers.clear();
    const workflowId = `bench-batch-scale-${randomUUID()}`;
    const began = Date.now();
    const handle = await startBatch(
      env.client,
      {
        endpointId,
        items: { manifest: { key: manifestKey } },
        maxConcurrency: CONCURRENCY,
        // A page cut by the kill: its unreported items wait out the lease, then go out again.
        ...(kill === undefined ? {} : { job: { submitLease: '60 seconds', submitTimeout: 15_000 } }),
      },
      { workflowId, taskQueue },
    );
    let killedAt: number | undefined;
    let killedAtMs: number | undefined;
    statusRefusedAt.length = 0;
    const killed =
      kill === undefined
        ? undefined
        : until(() => control.submissions(endpointId) >= ITEMS * kill, MAX_MS, 50).then(async (reached) => {
            if (!reached) return;
            killedAt = control.submissions(endpointId);
            killedAtMs = Date.now() - began;
            await workers.at(-1)?.kill();
            say(`  SIGKILLed worker #${workers.length} at ${killedAt} submissions`);
          });
    const outcome = awaitBatch(env.client, { batch: handle }).then(
      (summary) => ({ summary }),
      (error: unknown) => ({ error }),
    );
    let done = 0;
    let finished: { summary?: BatchSummary; error?: unknown } | undefined;
    while (!finished) {
      finished = await Promise.race([outcome, sleep(PROGRESS_EVERY_MS).then(() => undefined)]);
      if (finished) break;
      const progress = await getBatchProgress(env.client, { batch: handle }).catch(() => undefined);
      if (progress) {
        done = progress.done;
        say(
          `  ... ${seconds(Date.now() - began, 0)}: ${progress.done}/${progress.total} done, ${progress.inFlight} in flight, ` +
            `${progress.ratePerSecond.toFixed(1)}/s, run ${progress.runs}, ${progress.historyEvents} events`,
        );
      }
      if (Date.now() - began > MAX_MS) {
        say(`  not done after ${seconds(MAX_MS, 0)}: cancelling the batch`);
        await cancelBatch(env.client, { batch: handle }).catch(() => undefined);
        await outcome;
        break;
      }
    }
    const wallMs = Date.now() - began;
    await killed;
    if (finished?.error) throw finished.error;
    const summary = finished?.summary;
    const emulator429 = throttledBy(answers);
    const library429 = new Map<string, number>();
    let libraryRetries = 0;
    for (const url of killedAt === undefined ? metricsUrls : metricsUrls.slice(0, -1)) {
      const counted = await libraryThrottled(url);
      for (const [op, n] of counted.answered) library429.set(op, (library429.get(op) ?? 0) + n);
      libraryRetries += counted.retried;
    }
    const alive = killedAt === undefined ? workers : workers.slice(0, -1);
    const figures = await Promise.all(alive.map((worker) => worker.figures()));
    // Every run of the batch, each with its own history length (visibility lags a little).
    let runHistories: number[] = [];
    let runStarts: number[] = [];
    const runs = summary?.runs ?? 0;
    for (let tries = 0; tries < 40; tries++) {
      runHistories = [];
      runStarts = [];
      for await (const run of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        runHistories.push(run.historyLength);
        runStarts.push(run.startTime.getTime() - began);
      }
      if (runHistories.length >= runs && runHistories.every((n) => n > 0)) break;
      await sleep(250);
    }
    return {
      processes,
      finished: summary !== undefined,
      wallMs,
      ...(summary ? { summary } : {}),
      done: summary ? summary.total - summary.notStarted : done,
      runHistories,
      emulator429,
      library429,
      libraryRetries,
      emulatorSubmissions: control.submissions(endpointId),
      workers: figures,
      ...(killedAt === undefined ? {} : { killedAt }),
      ranTwice: itemsRunTwice(control.jobs(endpointId)),
      timeline: {
        refusedBySecond: bySecond(statusRefusedAt, began),
        runStarts: runStarts.sort((a, b) => a - b),
        ...(killedAtMs === undefined ? {} : { killedAtMs }),
      },
      refusedBy: control.throttledBy(endpointId),
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await gateway?.stop();
  }
}

/** Counts of these times by whole second since `began`. */
function bySecond(times: readonly number[], began: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (const at of times) {
    const second = Math.floor((at - began) / 1_000);
    counts.set(second, (counts.get(second) ?? 0) + 1);
  }
  return counts;
}

/** Items more than one of whose jobs started running (each job's input names its item). */
function itemsRunTwice(jobs: ReturnType<Emulator['control']['jobs']>): number {
  const runs = new Map<number, number>();
  for (const job of jobs) {
    const item = (job.input as { output?: { i?: unknown } } | undefined)?.output?.i;
    if (typeof item === 'number' && job.attempts > 0) runs.set(item, (runs.get(item) ?? 0) + 1);
  }
  return [...runs.values()].filter((count) => count > 1).length;
}

function report(row: Row): void {
  const { summary } = row;
  const perWorker = row.workers
    .map(
      (w, k) =>
        `#${k + 1}: slots most ${w.inFlightMax} (mean ${w.inFlightMean.toFixed(2)}, tasks at once ${w.runningPeak}), ` +
        `peak RSS ${mb(w.maxRssBytes)}, tasks ${Object.values(w.tasksByType).reduce((a, b) => a + b, 0)}`,
    )
    .join('; ');
  say('');
  say(
    `${row.processes} worker process(es): ${row.finished ? 'completed' : 'NOT completed'} in ${seconds(row.wallMs)}` +
      (row.killedAt === undefined ? '' : `, one SIGKILLed at ${row.killedAt} submissions`),
  );
  if (summary) {
    say(
      `  items ${summary.total}: completed ${summary.counts.completed}, failures ${summary.failures}, ` +
        `submissions ${summary.submissions} (the emulator's count ${row.emulatorSubmissions}), items run twice ${row.ranTwice}; ` +
        `${(summary.total / (row.wallMs / 1000)).toFixed(1)} items/s`,
    );
    say(
      `  history: ${summary.historyEvents} events in ${summary.runs} run(s) = ${(summary.historyEvents / summary.total).toFixed(3)} ` +
        `per item; largest run ${Math.max(0, ...row.runHistories)} events (runs seen: ${row.runHistories.length})`,
    );
  } else {
    say(
      `  ${row.done} items done in ${seconds(row.wallMs)} = ${(row.done / (row.wallMs / 1000)).toFixed(1)} items/s`,
    );
  }
  const fmt = (pairs: Iterable<readonly [string, number]>) =>
    [...pairs].map(([op, n]) => `${op} ${n}`).join(', ') || 'none';
  say(
    `  429s: the emulator sent ${fmt(row.emulator429)}; the library counted ${fmt(row.library429)} ` +
      `(retried after waiting ${row.libraryRetries}); refused by ${JSON.stringify(row.refusedBy)}`,
  );
  const { timeline } = row;
  if (timeline.refusedBySecond.size > 0) {
    const spans = [...timeline.refusedBySecond].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}s:${n}`);
    say(`  /status refused, by second from the start: ${spans.join(' ')}`);
  }
  say(
    `  runs started at ${timeline.runStarts.map((ms) => seconds(ms, 1)).join(', ')}` +
      (timeline.killedAtMs === undefined ? '' : `; the kill at ${seconds(timeline.killedAtMs, 1)}`),
  );
  say(`  workers: ${perWorker}`);
}

async function main(): Promise<void> {
  const started = Date.now();
  quietRuntime();
  countAnswers();
  const apiKey = randomBytes(24).toString('base64url');
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-scale-${process.pid}-${Date.now()}`);
  let env: BenchTemporal | undefined;
  let emulator: Emulator | undefined;
  let s3: S3TestServer | undefined;
  try {
    env = await startBenchTemporal();
    say(`Temporal: ${env.name}`);
    emulator = await startEmulator({
      accounts: [{ apiKey }],
      timeScale: TIME_SCALE,
      coldStartMs: 0,
      flashBootMs: 0,
    });
    const resultDir = path.join(workdir, 'results');
    const manifestKey = `bench-scale-${ITEMS}.jsonl`;
    let storeVars: Record<string, string> = {};
    if (STORE_KIND === 's3') {
      s3 = await startS3Server('bench-scale');
      await s3.createBucket('bench');
      storeVars = {
        ...s3.env,
        RESULT_STORE_URL: 's3://bench/scale',
        RESULT_STORE_ENDPOINT: s3.endpoint,
        RESULT_STORE_PATH_STYLE: 'true',
      };
      // This process writes the manifest as a client would: the same variables as the workers.
      Object.assign(process.env, storeVars);
      say(`store: s3://bench/scale on SeaweedFS at ${s3.endpoint}; each worker with a directory of its own`);
    }
    const written = Date.now();
    await writeBatchManifest(
      Array.from({ length: ITEMS }, (_, i) => ({ input: { sleepMs: SERVICE_MS, output: { i } } })),
      { store: storeVars.RESULT_STORE_URL ?? resultDir, key: manifestKey },
    );
    const floorS = Math.max(0, ITEMS - 1_000) / 100 / (CLIENT_LIMITS === 'scaled' ? TIME_SCALE : 1);
    say(
      `batch at scale: ${ITEMS.toLocaleString('en')} items from a manifest (written in ${seconds(Date.now() - written)}), ` +
        `${SERVICE_MS} ms of service time each, on ${WORKERS} warm emulator workers`,
    );
    say(
      `  emulator: time scale ${TIME_SCALE}, rate limits on; maxConcurrency ${CONCURRENCY}; worker processes: ` +
        `${PROCESSES.join(', then ')} (SDK default slots, polling only); the library's /run limiter ` +
        (CLIENT_LIMITS === 'scaled'
          ? `(scaled ${TIME_SCALE}x: ${SCALED_LIMITS}) `
          : '(1,000 per 10 s of real time, per worker) ') +
        `puts one worker's floor near ${floorS.toFixed(0)} s`,
    );
    for (const processes of PROCESSES) {
      const row = await runBatch(env, emulator, apiKey, resultDir, manifestKey, processes, storeVars);
      report(row);
    }
    say('');
    say(
      `bench process peak RSS ${mb(process.resourceUsage().maxRSS * 1024)} (emulator, dev-server client, manifest); ` +
        `total ${seconds(Date.now() - started, 0)} real (shared 2-core machine: figures are noisy)`,
    );
  } finally {
    await emulator?.close();
    await env?.teardown();
    await s3?.close();
    await rm(workdir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('[bench] failed:', error);
    process.exit(1);
  },
);
