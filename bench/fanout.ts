/**
 * Fan-out: N short jobs on an endpoint with 200 workers, at the service's rate limits, run two
 * ways in the same run against the same emulator: (a) a bare loop over `api/` and (b) one job
 * workflow per job through `startJob`. Prints both wall times and their ratio; asserts nothing.
 *
 *   npx tsx bench/fanout.ts [--jobs 500] [--polling-only] [--batch]
 *
 * --jobs          jobs each way (default 500)
 * --polling-only  the library without webhooks (no gateway, no webhook URL)
 * --batch         also (c): the same jobs as the items of one serverlessBatch (inline, a window
 *                 as wide as the jobs, up to 1,000), run by the same worker on an endpoint of its
 *                 own, after (b): its wall time, its ratio to (a) and (b), history events per item
 *
 * The emulator runs at time scale 1 with its rate limits on (the spec's: /run 1,000 per 10 s and
 * 200 at once, /status 2,000 per 10 s and 400 at once, per endpoint) and no cold start. Each way
 * has an endpoint of its own with 200 warm workers (workersMin = workersMax = 200), so neither
 * spends the other's rate budget; the scripted handler sleeps 2 s (`{ sleepMs: 2000 }`), so N jobs
 * take at least ceil(N / 200) x 2 s of service time.
 *
 * (a) bare: createServiceClient with its default rate limiter and 429 retries; every /run sent at
 *     once (the limiter queues them), then /status for every unfinished job, round after round
 *     (250 ms apart), until none is left. Wall time: first /run to the last job seen finished.
 * (b) library: one worker with the SDK's default slots in a process of its own (runWorker, as
 *     `npm run worker` runs it; with the webhook gateway unless --polling-only) and N startJob
 *     calls at once, the async mode's default polling. Wall time: first start to the last result.
 *
 * (a) runs first, then (b), never both at once: they share 2 cores (with other engineers' work:
 * figures are noisy; the ratio, measured in one run, is the figure to keep).
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createServiceClient } from '../api';
import { awaitBatch, startBatch } from '../client/batches';
import { awaitJob, startJob } from '../client/jobs';
import type { JobResult } from '../contracts/job-snapshot';
import { type Emulator, startEmulator } from '../emulator';
import {
  inBatches,
  mb,
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startBenchWorker,
  startDevServer,
  until,
} from './support';
import type { WorkerProcess } from './worker-process';

const JOBS = Math.round(numberArg('jobs', 500));
const WEBHOOKS = !process.argv.includes('--polling-only');
const BATCH = process.argv.includes('--batch');
const WORKERS = 200;
const SERVICE_MS = 2_000;
const ROUND_PAUSE_MS = 250;
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

async function bareLoop(emulator: Emulator, apiKey: string, endpointId: string) {
  const service = createServiceClient({
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  });
  try {
    const began = Date.now();
    const submitted = await Promise.all(
      Array.from({ length: JOBS }, (_, index) =>
        service.jobs.run(endpointId, { input: { sleepMs: SERVICE_MS, output: { index } } }),
      ),
    );
    const submittedAt = Date.now();
    let pending = submitted.map((job) => job.id);
    let statusCalls = 0;
    let rounds = 0;
    const outcomes = new Map<string, number>();
    while (pending.length > 0) {
      rounds += 1;
      const answers = await Promise.all(pending.map((id) => service.jobs.status(endpointId, id)));
      statusCalls += answers.length;
      const left: string[] = [];
      answers.forEach((answer, k) => {
        if (TERMINAL.has(answer.status)) outcomes.set(answer.status, (outcomes.get(answer.status) ?? 0) + 1);
        else left.push(pending[k] as string);
      });
      pending = left;
      if (pending.length > 0) await sleep(ROUND_PAUSE_MS);
    }
    const doneAt = Date.now();
    return { wallMs: doneAt - began, submitMs: submittedAt - began, statusCalls, rounds, outcomes };
  } finally {
    await service.close();
  }
}

async function library(env: TestWorkflowEnvironment, taskQueue: string, run: string, endpointId: string) {
  const began = Date.now();
  const handles = await Promise.all(
    Array.from({ length: JOBS }, (_, index) =>
      startJob(
        env.client,
        { endpointId, request: { input: { sleepMs: SERVICE_MS, output: { index } } } },
        { workflowId: `bench-fanout-${run}-${index}`, taskQueue },
      ),
    ),
  );
  const startedAt = Date.now();
  const results = await Promise.all(
    handles.map((handle) =>
      awaitJob(env.client, { job: handle }).catch((error: unknown) =>
        error instanceof Error ? error : new Error(String(error)),
      ),
    ),
  );
  const doneAt = Date.now();
  const completed = results.filter((result): result is JobResult => !(result instanceof Error));
  const causes = new Map<string, number>();
  for (const result of results) {
    if (result instanceof Error) {
      const chain = causeChain(result);
      causes.set(chain, (causes.get(chain) ?? 0) + 1);
    }
  }
  // History length of a sample of the jobs.
  const sample = await inBatches(Math.min(20, JOBS), 10, async (k) => {
    const history = await (
      handles[Math.floor((k * JOBS) / Math.min(20, JOBS))] as (typeof handles)[number]
    ).fetchHistory();
    return history.events?.length ?? 0;
  });
  return {
    wallMs: doneAt - began,
    startMs: startedAt - began,
    completed: completed.length,
    failed: results.length - completed.length,
    submissionsOk: completed.every((result) => result.submissions === 1),
    // Submissions as each workflow counted them (an uncertain submit that never reached the
    // service counts too): jobs by count.
    submissionCounts: completed.reduce(
      (counts, result) => counts.set(result.submissions, (counts.get(result.submissions) ?? 0) + 1),
      new Map<number, number>(),
    ),
    events: sample,
    causes,
  };
}

/** A failure's chain of causes as one line (names and messages), so failures can be tallied by kind. */
function causeChain(error: Error): string {
  const links: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && links.length < 6) {
    links.push(`${current.name}: ${current.message.slice(0, 160)}`);
    current = current.cause;
  }
  return links.join(' <- ');
}

async function batch(env: TestWorkflowEnvironment, taskQueue: string, run: string, endpointId: string) {
  const began = Date.now();
  const handle = await startBatch(
    env.client,
    {
      endpointId,
      items: {
        inline: Array.from({ length: JOBS }, (_, index) => ({
          input: { sleepMs: SERVICE_MS, output: { index } },
        })),
      },
      maxConcurrency: Math.min(JOBS, 1_000),
    },
    { workflowId: `bench-fanout-${run}-batch`, taskQueue },
  );
  const summary = await awaitBatch(env.client, { batch: handle });
  return { wallMs: Date.now() - began, summary };
}

async function main(): Promise<void> {
  const started = Date.now();
  quietRuntime();
  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const taskQueue = `bench-fanout-${run}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-${run}`);
  let env: TestWorkflowEnvironment | undefined;
  let emulator: Emulator | undefined;
  let worker: WorkerProcess | undefined;

  try {
    env = await startDevServer();
    emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 1, coldStartMs: 0, flashBootMs: 0 });
    const { control } = emulator;
    const endpoint = (name: string) =>
      control.createEndpoint(apiKey, {
        name,
        templateId: 'scripted',
        workersMin: WORKERS,
        workersMax: WORKERS,
      }).id;
    const bareEndpoint = endpoint('bench-fanout-bare');
    const libraryEndpoint = endpoint('bench-fanout-library');
    const batchEndpoint = BATCH ? endpoint('bench-fanout-batch') : undefined;
    worker = await startBenchWorker({
      address: env.address,
      taskQueue,
      emulator,
      apiKey,
      webhooks: WEBHOOKS,
      resultStoreDir: path.join(workdir, 'results'),
    });
    await until(() => control.endpoints().every((e) => e.workers.idle >= WORKERS), 30_000);

    const floor = Math.ceil(JOBS / WORKERS) * SERVICE_MS;
    say(
      `fan-out: ${JOBS} jobs of ${SERVICE_MS / 1000} s service time on an endpoint with ${WORKERS} workers`,
    );
    say(
      `  emulator: time scale 1, rate limits on, warm workers; one endpoint each way; the floor is ` +
        `ceil(${JOBS}/${WORKERS}) x ${SERVICE_MS / 1000} s = ${seconds(floor)}`,
    );
    say(
      `  library: one worker (own process, SDK default slots), ${WEBHOOKS ? 'webhooks and polling' : 'polling only'}, ` +
        `async mode's default polling; set up in ${seconds(Date.now() - started)}`,
    );

    const bare = await bareLoop(emulator, apiKey, bareEndpoint);
    const outcomes = [...bare.outcomes.entries()].map(([status, count]) => `${status} ${count}`).join(', ');
    say('');
    say(
      `(a) bare loop over api/: ${seconds(bare.wallMs)} (all /run answered after ${seconds(bare.submitMs)}; ` +
        `${bare.statusCalls} /status calls in ${bare.rounds} rounds; ${outcomes}; ` +
        `/run calls the emulator counted: ${control.submissions(bareEndpoint)})`,
    );

    worker.reset();
    const lib = await library(env, taskQueue, run, libraryEndpoint);
    const figures = await worker.figures();
    const tasks = Object.values(figures.tasksByType).reduce((sum, count) => sum + count, 0);
    const byType = Object.entries(figures.tasksByType)
      .map(([type, count]) => `${type} ${(count / JOBS).toFixed(1)}`)
      .join(', ');
    const events = lib.events;
    say(
      `(b) library, ${JOBS} job workflows through startJob: ${seconds(lib.wallMs)} (all started after ` +
        `${seconds(lib.startMs)}; completed ${lib.completed}, failed ${lib.failed}; each submitted once: ` +
        `${lib.submissionsOk ? 'yes' : 'NO'} (jobs by submissions the workflow made: ${[
          ...lib.submissionCounts.entries(),
        ]
          .sort((a, b) => a[0] - b[0])
          .map(([n, jobs]) => `${n}: ${jobs}`)
          .join(', ')}); /run calls the emulator counted: ${control.submissions(libraryEndpoint)})`,
    );
    for (const [chain, count] of [...lib.causes.entries()].sort((x, y) => y[1] - x[1]).slice(0, 10)) {
      say(`    failed x${count}: ${chain}`);
    }
    say(
      `    per job: ${(tasks / JOBS).toFixed(1)} activity tasks (${byType}); history events ` +
        `${Math.min(...events)}-${Math.max(...events)} (${events.length} sampled); ` +
        `most activity tasks at once ${figures.runningPeak}; worker RSS ${mb(figures.rssBytes)}`,
    );
    if (batchEndpoint) {
      worker.reset();
      const b = await batch(env, taskQueue, run, batchEndpoint);
      const bFigures = await worker.figures();
      const { summary } = b;
      say(
        `(c) library, the ${JOBS} jobs as one serverlessBatch: ${seconds(b.wallMs)} (completed ` +
          `${summary.counts.completed}, failures ${summary.failures}; submissions ${summary.submissions}, ` +
          `/run calls the emulator counted: ${control.submissions(batchEndpoint)})`,
      );
      say(
        `    history events ${summary.historyEvents} in ${summary.runs} run(s) = ` +
          `${(summary.historyEvents / JOBS).toFixed(3)} per item (job workflows: ` +
          `${Math.min(...lib.events)}-${Math.max(...lib.events)} per job); activity tasks ` +
          `${Object.values(bFigures.tasksByType).reduce((sum, count) => sum + count, 0)}; slots most ` +
          `${bFigures.inFlightMax} (mean ${bFigures.inFlightMean.toFixed(2)}); worker RSS ${mb(bFigures.rssBytes)}`,
      );
      say(
        `ratio bare/batch: ${(bare.wallMs / b.wallMs).toFixed(2)}; job workflows' time / batch time: ` +
          `${(lib.wallMs / b.wallMs).toFixed(2)}`,
      );
    }
    say('');
    say(
      `ratio bare/library: ${(bare.wallMs / lib.wallMs).toFixed(2)} (bare ${seconds(bare.wallMs)}, ` +
        `library ${seconds(lib.wallMs)}; floor ${seconds(floor)})`,
    );
    say(`total ${seconds(Date.now() - started, 0)} real (shared 2-core machine: figures are noisy)`);
  } finally {
    await worker?.stop();
    await emulator?.close();
    await env?.teardown();
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
