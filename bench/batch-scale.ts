/**
 * The batch engine at scale and across several workers: one serverlessBatch
 * of N items from a manifest (or several batches started together on one endpoint), run by one or
 * more real worker processes, once per worker count given. Prints, for each: the wall time,
 * completed items, runs (continue-as-new count), history events in all runs together and per item,
 * the largest history of any run, the activity slots each worker held (most and mean), the 429s
 * the emulator sent and the ones the library counted, and peak RSS (each worker process and this
 * bench process); with several batches, each batch's outcome and the submissions at the service
 * against the jobs asked for. Asserts nothing.
 *
 *   npm run bench:batch-scale [-- --items 100000] [--time-scale 50] [--service-ms 1000]
 *     [--workers 200] [--concurrency 1000] [--processes 1] [--max-minutes 12]
 *   npm run bench:batch-scale -- --items 2000 --time-scale 1 --processes 1,2   # 429s, 1 vs 2 workers
 *   npm run bench:batch-scale -- --items 1000000 --client-limits scaled --max-minutes 40   # 16 min or so
 *   npm run bench:batch-scale -- --items 20000 --time-scale 1 --processes 1,3 --server prod --kill-one-at 0.5
 *     # scale-out: one worker, then three sharing the batch with one SIGKILLed mid-way (about 10 min)
 *   npm run bench:batch-scale -- --items 1000 --time-scale 1 --service-ms 1000 --workers 100 --batches 3
 *     --single-jobs --processes 3 --server prod --kill-one-at 0.5
 *     # many workloads on one endpoint: three batches and a job a second, one worker SIGKILLed
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
 * --processes    worker processes, a comma-separated list: one run per entry, one after the other,
 *                each on an endpoint and task queue of its own
 * --batches      batches of --items each (a manifest each), started together on the same endpoint
 *                and task queue: they share the endpoint's limits (default 1)
 * --single-jobs  also start a single job of --service-ms every second on that endpoint while the
 *                batches run (startJob, awaitJob), and print their latency (median, max)
 * --server prod  the production-shaped Temporal (PostgreSQL, several history shards) instead of the
 *                dev server (bench/support.ts startBenchTemporal)
 * --kill-one-at  with more than one worker process: SIGKILL one of them once the service has acted
 *                on this share of all the batches' items (the others finish them); the batches and
 *                the single jobs then run
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
  type BatchHandle,
  type BatchSummary,
  cancelBatch,
  getBatchProgress,
  startBatch,
  writeBatchManifest,
} from '../client/batches';
import { awaitJob, startJob } from '../client/jobs';
import { type Emulator, startEmulator } from '../emulator';
import { type ManagedProcess, spawnEntry } from '../test/support/process-stack';
import { type S3TestServer, startS3Server } from '../test/support/s3-server';
import { METRIC_PREFIX } from '../worker/metrics';
import {
  type BenchTemporal,
  mb,
  median,
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
const BATCHES = Math.round(numberArg('batches', 1));
if (!(BATCHES >= 1)) throw new Error('--batches: must be a whole number of at least 1');
const SINGLE_JOBS = process.argv.includes('--single-jobs');
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
/** When the emulator refused a /status, and a /run (ms since the epoch): the timeline of the report. */
const statusRefusedAt: number[] = [];
const runRefusedAt: number[] = [];
function countAnswers(): void {
  diagnostics.subscribe('http.server.response.finish', (message) => {
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    const segments = (request.url ?? '').split('?')[0]?.split('/') ?? [];
    // /v2/<endpoint>/<operation>[/<job id>]
    const operation = segments[1] === 'v2' ? (segments[3] ?? '?') : (segments[1] ?? '?');
    const key = `${operation} ${response.statusCode}`;
    answers.set(key, (answers.get(key) ?? 0) + 1);
    if (operation === 'status' && response.statusCode === 429) statusRefusedAt.push(Date.now());
    if (operation === 'run' && response.statusCode === 429) runRefusedAt.push(Date.now());
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

/** One of the batches started together: its outcome and its runs as visibility lists them. */
interface BatchRow {
  summary?: BatchSummary;
  /** Items done by the last look at its progress (a batch not completed). */
  done: number;
  runHistories: number[];
  /** When, from the batches' start, each of its runs started. */
  runStarts: number[];
}

/** The single jobs started one a second beside the batches (--single-jobs). */
interface SingleJobs {
  started: number;
  completed: number;
  failed: number;
  /** Start to result, in ms, of each completed one. */
  latenciesMs: number[];
  /** The first failure's message, if any failed. */
  firstFailure?: string;
  /** When each completed one was started and its result seen (ms since the epoch), by its number. */
  spans: Map<number, { startedAt: number; resultAt: number }>;
}

/**
 * Where the single jobs' time went, from the service's record of each (time scale 1 only, where
 * service time is real time): started to submitted (waiting in the worker), submitted to running
 * (queued at the service), finished to result seen (the notice of its end).
 */
function singleJobPhases(
  singles: SingleJobs,
  jobs: ReturnType<Emulator['control']['jobs']>,
): Record<'toSubmit' | 'queued' | 'toResult', number[]> {
  const phases = { toSubmit: [] as number[], queued: [] as number[], toResult: [] as number[] };
  for (const job of jobs) {
    const single = (job.input as { output?: { single?: unknown } } | undefined)?.output?.single;
    const span = typeof single === 'number' ? singles.spans.get(single) : undefined;
    if (!span || job.startedAt === undefined || job.finishedAt === undefined) continue;
    phases.toSubmit.push(job.submittedAt - span.startedAt);
    phases.queued.push(job.startedAt - job.submittedAt);
    phases.toResult.push(span.resultAt - job.finishedAt);
  }
  return phases;
}

interface Row {
  processes: number;
  finished: boolean;
  wallMs: number;
  batches: BatchRow[];
  singleJobs?: SingleJobs & { phases?: ReturnType<typeof singleJobPhases> };
  emulator429: (readonly [string, number])[];
  library429: Map<string, number>;
  libraryRetries: number;
  emulatorSubmissions: number;
  workers: ChildFigures[];
  /** The service's count of submissions when one worker was SIGKILLed (--kill-one-at). */
  killedAt?: number;
  /** Items (and single jobs) more than one of whose jobs ran, of the jobs the emulator remembers. */
  ranTwice: number;
  /** When, from the batches' start, the /status refusals came and the kill fell. */
  timeline: {
    refusedBySecond: Map<number, number>;
    runRefusedBySecond: Map<number, number>;
    killedAtMs?: number;
  };
  /** The emulator's refusals by the limit that refused them (rate or requests at once). */
  refusedBy: Record<string, Partial<Record<string, number>>>;
}

/** Each batch's job policy, and the single jobs': with a kill, a page it cuts waits out a lease. */
const killPolicy = { submitLease: '60 seconds', submitTimeout: 15_000 } as const;

/** Waits for every batch, printing their progress together; cancels them all past --max-minutes. */
async function awaitBatches(
  env: BenchTemporal,
  handles: BatchHandle[],
  began: number,
): Promise<{ summaries: (BatchSummary | undefined)[]; done: number[] }> {
  const outcomes = Promise.all(
    handles.map((handle) =>
      awaitBatch(env.client, { batch: handle }).then(
        (summary) => ({ summary }),
        (error: unknown) => ({ error }),
      ),
    ),
  );
  const done = handles.map(() => 0);
  let finished: { summary?: BatchSummary; error?: unknown }[] | undefined;
  while (!finished) {
    finished = await Promise.race([outcomes, sleep(PROGRESS_EVERY_MS).then(() => undefined)]);
    if (finished) break;
    const looks = await Promise.all(
      handles.map((handle) => getBatchProgress(env.client, { batch: handle }).catch(() => undefined)),
    );
    const progress = looks.filter((look) => look !== undefined);
    looks.forEach((look, k) => {
      if (look) done[k] = look.done;
    });
    if (progress.length > 0) {
      const sum = (field: (look: (typeof progress)[number]) => number) =>
        progress.reduce((total, look) => total + field(look), 0);
      say(
        `  ... ${seconds(Date.now() - began, 0)}: ${sum((look) => look.done)}/${sum((look) => look.total)} done, ` +
          `${sum((look) => look.inFlight)} in flight, ${sum((look) => look.ratePerSecond).toFixed(1)}/s, ` +
          `run ${sum((look) => look.runs)}, ${sum((look) => look.historyEvents)} events`,
      );
    }
    if (Date.now() - began > MAX_MS) {
      say(`  not done after ${seconds(MAX_MS, 0)}: cancelling the batch${handles.length > 1 ? 'es' : ''}`);
      await Promise.all(
        handles.map((handle) => cancelBatch(env.client, { batch: handle }).catch(() => undefined)),
      );
      finished = await outcomes;
    }
  }
  const failed = finished.find((outcome) => outcome.error !== undefined);
  if (failed) throw failed.error;
  return { summaries: finished.map((outcome) => outcome.summary), done };
}

/** Every run of a batch, each with its own history length (visibility lags a little). */
async function batchRuns(
  env: BenchTemporal,
  workflowId: string,
  runs: number,
  began: number,
): Promise<{ runHistories: number[]; runStarts: number[] }> {
  let runHistories: number[] = [];
  let runStarts: number[] = [];
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
  return { runHistories, runStarts: runStarts.sort((a, b) => a - b) };
}

/** A job of --service-ms started every second on the endpoint until `running` turns false. */
async function singleJobsWhile(
  env: BenchTemporal,
  endpointId: string,
  taskQueue: string,
  killing: boolean,
  running: () => boolean,
): Promise<SingleJobs> {
  const jobs: SingleJobs = { started: 0, completed: 0, failed: 0, latenciesMs: [], spans: new Map() };
  const pending: Promise<void>[] = [];
  const began = performance.now();
  while (running()) {
    const at = performance.now();
    const startedAt = Date.now();
    const single = jobs.started++;
    pending.push(
      startJob(
        env.client,
        {
          endpointId,
          request: { input: { sleepMs: SERVICE_MS, output: { single } } },
          ...(killing ? killPolicy : {}),
        },
        { workflowId: `bench-batch-scale-single-${randomUUID()}`, taskQueue },
      )
        .then((job) => awaitJob(env.client, { job }))
        .then(
          () => {
            jobs.completed++;
            jobs.latenciesMs.push(performance.now() - at);
            jobs.spans.set(single, { startedAt, resultAt: Date.now() });
          },
          (error: unknown) => {
            jobs.failed++;
            jobs.firstFailure ??= error instanceof Error ? error.message : String(error);
          },
        ),
    );
    // On a one-second grid from the first, however long a start took.
    await sleep(Math.max(0, began + jobs.started * 1_000 - performance.now()));
  }
  await Promise.all(pending);
  return jobs;
}

async function runBatches(
  env: BenchTemporal,
  emulator: Emulator,
  apiKey: string,
  resultDir: string,
  manifestKeys: string[],
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
    const workflowIds = manifestKeys.map(() => `bench-batch-scale-${randomUUID()}`);
    const began = Date.now();
    // All batches on the one endpoint and task queue, started together.
    const handles = await Promise.all(
      manifestKeys.map((key, k) =>
        startBatch(
          env.client,
          {
            endpointId,
            items: { manifest: { key } },
            maxConcurrency: CONCURRENCY,
            // A page cut by the kill: its unreported items wait out the lease, then go out again.
            ...(kill === undefined ? {} : { job: killPolicy }),
          },
          { workflowId: workflowIds[k] as string, taskQueue },
        ),
      ),
    );
    let running = true;
    const singleJobs = SINGLE_JOBS
      ? singleJobsWhile(env, endpointId, taskQueue, kill !== undefined, () => running)
      : undefined;
    let killedAt: number | undefined;
    let killedAtMs: number | undefined;
    statusRefusedAt.length = 0;
    runRefusedAt.length = 0;
    const items = ITEMS * manifestKeys.length;
    const killed =
      kill === undefined
        ? undefined
        : until(() => control.submissions(endpointId) >= items * kill, MAX_MS, 50).then(async (reached) => {
            if (!reached) return;
            killedAt = control.submissions(endpointId);
            killedAtMs = Date.now() - began;
            await workers.at(-1)?.kill();
            say(`  SIGKILLed worker #${workers.length} at ${killedAt} submissions`);
          });
    const awaited = await awaitBatches(env, handles, began).finally(() => {
      running = false;
    });
    const wallMs = Date.now() - began;
    await killed;
    const singles = await singleJobs;
    const held = control.jobs(endpointId, { removed: true });
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
    const batches: BatchRow[] = [];
    for (const [k, summary] of awaited.summaries.entries()) {
      const runs = await batchRuns(env, workflowIds[k] as string, summary?.runs ?? 0, began);
      batches.push({
        ...(summary ? { summary } : {}),
        done: summary ? summary.total - summary.notStarted : (awaited.done[k] ?? 0),
        ...runs,
      });
    }
    return {
      processes,
      finished: batches.every((batch) => batch.summary !== undefined),
      wallMs,
      batches,
      ...(singles
        ? { singleJobs: TIME_SCALE === 1 ? { ...singles, phases: singleJobPhases(singles, held) } : singles }
        : {}),
      emulator429,
      library429,
      libraryRetries,
      emulatorSubmissions: control.submissions(endpointId),
      workers: figures,
      ...(killedAt === undefined ? {} : { killedAt }),
      ranTwice: itemsRunTwice(held),
      timeline: {
        refusedBySecond: bySecond(statusRefusedAt, began),
        runRefusedBySecond: bySecond(runRefusedAt, began),
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

/**
 * Items (and single jobs) more than one of whose jobs started running: each job's input names its
 * batch and item, or its single job.
 */
function itemsRunTwice(jobs: ReturnType<Emulator['control']['jobs']>): number {
  const runs = new Map<string, number>();
  for (const job of jobs) {
    const output = (job.input as { output?: unknown } | undefined)?.output;
    if (output === undefined || !(job.attempts > 0)) continue;
    const key = JSON.stringify(output);
    runs.set(key, (runs.get(key) ?? 0) + 1);
  }
  return [...runs.values()].filter((count) => count > 1).length;
}

const runsStarted = (batch: BatchRow) => batch.runStarts.map((ms) => seconds(ms, 1)).join(', ');

function report(row: Row): void {
  const { batches } = row;
  const perWorker = row.workers
    .map(
      (w, k) =>
        `#${k + 1}: slots most ${w.inFlightMax} (mean ${w.inFlightMean.toFixed(2)}, tasks at once ${w.runningPeak}), ` +
        `peak RSS ${mb(w.maxRssBytes)}, tasks ${Object.values(w.tasksByType).reduce((a, b) => a + b, 0)}`,
    )
    .join('; ');
  say('');
  say(
    `${row.processes} worker process(es)${batches.length > 1 ? `, ${batches.length} batches on one endpoint` : ''}: ` +
      `${row.finished ? 'completed' : 'NOT completed'} in ${seconds(row.wallMs)}` +
      (row.killedAt === undefined ? '' : `, one SIGKILLed at ${row.killedAt} submissions`),
  );
  const only = batches.length === 1 ? batches[0] : undefined;
  if (only?.summary) {
    const { summary } = only;
    say(
      `  items ${summary.total}: completed ${summary.counts.completed}, failures ${summary.failures}, ` +
        `submissions ${summary.submissions} (the emulator's count ${row.emulatorSubmissions}), items run twice ${row.ranTwice}; ` +
        `${(summary.total / (row.wallMs / 1000)).toFixed(1)} items/s`,
    );
    say(
      `  history: ${summary.historyEvents} events in ${summary.runs} run(s) = ${(summary.historyEvents / summary.total).toFixed(3)} ` +
        `per item; largest run ${Math.max(0, ...only.runHistories)} events (runs seen: ${only.runHistories.length})`,
    );
  } else if (only) {
    say(
      `  ${only.done} items done in ${seconds(row.wallMs)} = ${(only.done / (row.wallMs / 1000)).toFixed(1)} items/s`,
    );
  } else {
    reportBatches(row);
  }
  if (row.singleJobs) {
    const { started, completed, failed, latenciesMs, firstFailure, phases } = row.singleJobs;
    say(
      `  single jobs (one a second while the batches ran): ${started} started, ${completed} completed, ${failed} failed; ` +
        `latency median ${seconds(latenciesMs.length > 0 ? median(latenciesMs) : 0, 2)}, ` +
        `max ${seconds(Math.max(0, ...latenciesMs), 2)}` +
        (firstFailure === undefined ? '' : `; the first failure: ${firstFailure}`),
    );
    if (phases) {
      const spread = (values: number[]) =>
        values.length > 0
          ? `median ${seconds(median(values), 2)}, max ${seconds(Math.max(...values), 2)}`
          : 'none';
      say(
        `    of which waiting to submit ${spread(phases.toSubmit)}; queued at the service ${spread(phases.queued)}; ` +
          `from its end to its result ${spread(phases.toResult)}`,
      );
    }
  }
  const fmt = (pairs: Iterable<readonly [string, number]>) =>
    [...pairs].map(([op, n]) => `${op} ${n}`).join(', ') || 'none';
  say(
    `  429s: the emulator sent ${fmt(row.emulator429)}; the library counted ${fmt(row.library429)} ` +
      `(retried after waiting ${row.libraryRetries}); refused by ${JSON.stringify(row.refusedBy)}`,
  );
  const { timeline } = row;
  for (const [operation, refused] of [
    ['/status', timeline.refusedBySecond],
    ['/run', timeline.runRefusedBySecond],
  ] as const) {
    if (refused.size === 0) continue;
    const spans = [...refused].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}s:${n}`);
    say(`  ${operation} refused, by second from the start: ${spans.join(' ')}`);
  }
  const killAt =
    timeline.killedAtMs === undefined ? undefined : `the kill at ${seconds(timeline.killedAtMs, 1)}`;
  if (only) say(`  runs started at ${runsStarted(only)}${killAt ? `; ${killAt}` : ''}`);
  else if (killAt) say(`  ${killAt}`);
  say(`  workers: ${perWorker}`);
}

/** Several batches on one endpoint: each one's outcome, then everything against what was expected. */
function reportBatches(row: Row): void {
  const { batches } = row;
  for (const [k, batch] of batches.entries()) {
    const { summary } = batch;
    say(
      summary
        ? `  batch #${k + 1}: completed ${summary.counts.completed} of ${summary.total}, failures ${summary.failures}, ` +
            `submissions ${summary.submissions}; history ${summary.historyEvents} events in ${summary.runs} run(s), ` +
            `largest run ${Math.max(0, ...batch.runHistories)}; runs started at ${runsStarted(batch)}`
        : `  batch #${k + 1}: NOT completed, ${batch.done} items done`,
    );
  }
  const expected = ITEMS * batches.length;
  const completed = batches.reduce((total, batch) => total + (batch.summary?.counts.completed ?? 0), 0);
  const failures = batches.reduce((total, batch) => total + (batch.summary?.failures ?? 0), 0);
  const submitted = batches.reduce((total, batch) => total + (batch.summary?.submissions ?? 0), 0);
  // Every job the service was asked for: the batches' items and the single jobs.
  const jobs = expected + (row.singleJobs?.started ?? 0);
  say(
    `  all ${batches.length} batches: completed ${completed} of ${expected} items expected, failures ${failures}; ` +
      `${(completed / (row.wallMs / 1000)).toFixed(1)} items/s`,
  );
  say(
    `  submissions: the emulator's count ${row.emulatorSubmissions} for ${jobs} jobs ` +
      `(${expected} items${row.singleJobs ? ` + ${row.singleJobs.started} single jobs` : ''}): ` +
      `${row.emulatorSubmissions - jobs} beyond one each, ${(row.emulatorSubmissions / jobs).toFixed(3)} per job; ` +
      `the batches counted ${submitted}; items run twice ${row.ranTwice}`,
  );
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
    const manifestKeys = Array.from({ length: BATCHES }, (_, batch) => `bench-scale-${ITEMS}-${batch}.jsonl`);
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
    // Each item's output names its batch and its index: a job run twice is found by its input.
    for (const [batch, key] of manifestKeys.entries()) {
      await writeBatchManifest(
        Array.from({ length: ITEMS }, (_, i) => ({ input: { sleepMs: SERVICE_MS, output: { batch, i } } })),
        { store: storeVars.RESULT_STORE_URL ?? resultDir, key },
      );
    }
    const floorS = Math.max(0, ITEMS * BATCHES - 1_000) / 100 / (CLIENT_LIMITS === 'scaled' ? TIME_SCALE : 1);
    say(
      `batch at scale: ${BATCHES > 1 ? `${BATCHES} batches of ` : ''}${ITEMS.toLocaleString('en')} items from a manifest ` +
        `(written in ${seconds(Date.now() - written)}), ${SERVICE_MS} ms of service time each, on ${WORKERS} warm emulator workers` +
        (BATCHES > 1 ? ', all on one endpoint and task queue, started together' : '') +
        (SINGLE_JOBS ? `; a single job of ${SERVICE_MS} ms started every second while they run` : ''),
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
      const row = await runBatches(env, emulator, apiKey, resultDir, manifestKeys, processes, storeVars);
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
