/**
 * Many jobs in progress on one worker with the SDK's default slots: N hour-long jobs
 * waiting at once, and beside them a short job, a cancel, the activity slots in use and the
 * worker's memory; then the hour passes and every job completes, each submitted once. Prints
 * figures; asserts nothing.
 *
 *   npx tsx bench/job-slots.ts [--jobs 2000] [--polling-only] [--cache 500] [--server prod]
 *
 * --jobs          jobs in progress at once (default 2,000)
 * --cache         the worker's workflow cache (WORKER_MAX_CACHED_WORKFLOWS; default the SDK's):
 *                 below --jobs, workflows are evicted and replayed as they wake
 * --server prod   the production-shaped Temporal on PostgreSQL (bench/support.ts) instead of the
 *                 dev server, whose one history shard holds every workflow
 * --polling-only  no webhooks (no gateway, no webhook URL): every job ends by a look at /status
 *
 * The stack: the Temporal CLI dev server (or --server prod), the emulator in this process (time scale 1, rate limits
 * on, no cold starts), and one real worker (runWorker, configured from the environment as
 * `npm run worker` is, with no WORKER_MAX_* setting, so the SDK's default slots: 100 activity
 * slots) in a process of its own (bench/worker-child.ts), so that its memory and CPU are its own.
 * With webhooks the gateway runs in the worker's process, as `npm run worker` runs it.
 *
 * The jobs: the scripted handler with `{ sleepMs: 1 hour, output: { index } }`, policy
 * executionTimeout and ttl one week, spread over endpoints of at most 1,000 workers (the emulator's
 * bound per endpoint) with one worker per job, and a polling schedule of 10 s growing to 30 s, so
 * that N jobs stay well within the /status limit (2,000 per 10 s per endpoint). The emulator's
 * clock runs in real time, so nothing finishes until the bench moves it by an hour.
 *
 * The short job and the cancel are also measured before the N jobs start, in the same run: the
 * ratio of the two is the cost of the N waiting jobs. Figures on a shared 2-core machine are noisy.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { awaitJob, cancelJob, getJobSnapshot, type JobHandle, jobFailureOf, startJob } from '../client/jobs';
import type { JobResult } from '../contracts/job-snapshot';
import { type Emulator, startEmulator } from '../emulator';
import { MAX_WORKERS, RATE_LIMITS } from '../emulator/limits';
import {
  type BenchTemporal,
  inBatches,
  mb,
  median,
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  spreadMs,
  startBenchTemporal,
  startBenchWorker,
  until,
} from './support';
import type { ChildFigures, WorkerProcess } from './worker-process';

const JOBS = Math.round(numberArg('jobs', 2_000));
const WEBHOOKS = !process.argv.includes('--polling-only');
const CACHE = process.argv.includes('--cache') ? Math.round(numberArg('cache', 0)) : undefined;

const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
const POLLING = { initialInterval: 10_000, maxInterval: 30_000, backoffCoefficient: 1.5 };
/** How many short jobs (and baseline cancels) make a median. */
const SAMPLES = 5;
/** How long the waiting-only window lasts, in which slots and /status calls are counted. */
const WINDOW_MS = 30_000;

interface Scene {
  client: Client;
  emulator: Emulator;
  taskQueue: string;
  run: string;
  shortEndpoint: string;
  cancelEndpoint: string;
}

/** Start -> result of a short job on its own endpoint, one after the other. */
async function shortJobLatencies(scene: Scene, label: string, timelines = false): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const began = Date.now();
    const handle = await startJob(
      scene.client,
      { endpointId: scene.shortEndpoint, request: { input: { output: { quick: i } } } },
      { workflowId: `bench-slots-${scene.run}-short-${label}-${i}`, taskQueue: scene.taskQueue },
    );
    await awaitJob(scene.client, { job: handle });
    latencies.push(Date.now() - began);
    if (timelines) say(`    ${label} ${i}: ${await timeline(handle)}`);
  }
  return latencies;
}

/** Where a workflow's time went: each history event's type, at its ms from the first event. */
async function timeline(handle: JobHandle): Promise<string> {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const millis = (event: (typeof events)[number]) =>
    Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6);
  const first = events[0] ? millis(events[0]) : 0;
  return events
    .map((event) => {
      const name = temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType);
      return `${name.replace('EVENT_TYPE_', '').toLowerCase()} ${millis(event) - first}`;
    })
    .join(', ');
}

/** The task queue's backlog as the server reports it, for workflow and activity tasks. */
async function backlog(scene: Scene): Promise<string> {
  const parts: string[] = [];
  for (const [name, taskQueueType] of [
    ['workflow', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
    ['activity', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
  ] as const) {
    const described = await scene.client.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: scene.taskQueue },
      taskQueueType,
      reportStats: true,
    });
    const stats = described.stats;
    const age = stats?.approximateBacklogAge;
    const ageMs = age ? Number(age.seconds ?? 0) * 1000 + Math.round((age.nanos ?? 0) / 1e6) : 0;
    parts.push(
      `${name} backlog ${Number(stats?.approximateBacklogCount ?? 0)} (oldest ${ageMs} ms, ` +
        `in ${(stats?.tasksAddRate ?? 0).toFixed(0)}/s, out ${(stats?.tasksDispatchRate ?? 0).toFixed(0)}/s)`,
    );
  }
  return parts.join('; ');
}

/** Cancel request -> the emulator shows the remote job CANCELLED. */
async function cancelLatency(scene: Scene, workflowId: string): Promise<number> {
  const { control } = scene.emulator;
  const snapshot = await getJobSnapshot(scene.client, { workflowId });
  const jobId = snapshot.jobId;
  if (!jobId) throw new Error(`${workflowId} has no job id yet`);
  const began = Date.now();
  await cancelJob(scene.client, { workflowId });
  if (!(await until(() => control.job(jobId)?.status === 'CANCELLED', 300_000, 10))) {
    throw new Error(`the cancel of ${workflowId} did not reach the service within 300 s`);
  }
  return Date.now() - began;
}

function slotLine(figures: ChildFigures): string {
  return (
    `in flight (getStatus, sampled every 100 ms) max ${figures.inFlightMax}, mean ` +
    `${figures.inFlightMean.toFixed(2)}; most running at once (interceptor) ${figures.runningPeak}`
  );
}

async function main(): Promise<void> {
  const started = Date.now();
  quietRuntime();

  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const taskQueue = `bench-job-slots-${run}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-${run}`);
  const endpointCount = Math.ceil(JOBS / MAX_WORKERS);
  let env: BenchTemporal | undefined;
  let emulator: Emulator | undefined;
  let worker: WorkerProcess | undefined;

  try {
    env = await startBenchTemporal();
    emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 1, coldStartMs: 0, flashBootMs: 0 });
    const { control } = emulator;
    const longEndpoints = Array.from({ length: endpointCount }, (_, e) => {
      const size = Math.ceil(JOBS / endpointCount);
      return control.createEndpoint(apiKey, {
        name: `bench-slots-long-${e}`,
        templateId: 'scripted',
        workersMin: 0,
        workersMax: size,
        executionTimeoutMs: WEEK,
      }).id;
    });
    const quick = (name: string) =>
      control.createEndpoint(apiKey, { name, templateId: 'scripted', workersMin: 1, workersMax: 2 }).id;
    const scene: Scene = {
      client: env.client,
      emulator,
      taskQueue,
      run,
      shortEndpoint: quick('bench-slots-short'),
      cancelEndpoint: quick('bench-slots-cancel'),
    };

    worker = await startBenchWorker({
      address: env.address,
      taskQueue,
      emulator,
      apiKey,
      webhooks: WEBHOOKS,
      resultStoreDir: path.join(workdir, 'results'),
      ...(CACHE === undefined ? {} : { maxCachedWorkflows: CACHE }),
    });
    await until(() => control.endpoints().every((e) => e.workers.idle >= (e.workersMin > 0 ? 1 : 0)), 10_000);
    const idle = await worker.figures({ gc: true });

    say(`job slots: ${JOBS.toLocaleString('en')} hour-long jobs in progress at once on one worker`);
    say(`  server: ${env.name}`);
    say(
      `  worker: runWorker in its own process, SDK defaults: ${idle.activitySlots ?? '?'} activity slots, ` +
        `workflow cache ${idle.maxCachedWorkflows ?? '?'}; ${WEBHOOKS ? 'webhooks (gateway in the worker process) and polling' : 'polling only'}`,
    );
    say(
      `  emulator: time scale 1, rate limits on, no cold start; ${endpointCount} endpoint(s) of ` +
        `${Math.ceil(JOBS / endpointCount)} workers; polling ${POLLING.initialInterval / 1000} s growing to ` +
        `${POLLING.maxInterval / 1000} s (x${POLLING.backoffCoefficient}); /status limit ` +
        `${RATE_LIMITS.status.perWindow} per 10 s per endpoint`,
    );
    say(`  set up in ${seconds(Date.now() - started)}; worker RSS idle ${mb(idle.rssBytes)}`);

    // --- Before: the same short job and cancel with nothing else running.
    const shortBefore = await shortJobLatencies(scene, 'before');
    const cancelBefore: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const workflowId = `bench-slots-${run}-cancel-before-${i}`;
      await startJob(
        scene.client,
        {
          endpointId: scene.cancelEndpoint,
          request: { input: { sleepMs: HOUR }, policy: { executionTimeout: WEEK, ttl: WEEK } },
          polling: POLLING,
        },
        { workflowId, taskQueue },
      );
      await until(
        () => control.jobs(scene.cancelEndpoint).some((job) => job.status === 'IN_PROGRESS'),
        60_000,
        20,
      );
      // The workflow knows the job id once its submit returned.
      for (let k = 0; k < 100; k++) {
        const snapshot = await getJobSnapshot(scene.client, { workflowId }).catch(() => undefined);
        if (snapshot?.jobId) break;
        await sleep(50);
      }
      cancelBefore.push(await cancelLatency(scene, workflowId));
    }
    say('');
    say(`before the ${JOBS.toLocaleString('en')} jobs (same run, nothing else in progress):`);
    say(`  short job, start -> result (${SAMPLES}, one after the other): ${spreadMs(shortBefore)}`);
    say(`  cancel request -> emulator shows CANCELLED (${SAMPLES}): ${spreadMs(cancelBefore)}`);

    // --- N jobs in progress.
    worker.reset();
    const jobsStarted = Date.now();
    const handles: JobHandle[] = await inBatches(JOBS, 50, (index) =>
      startJob(
        scene.client,
        {
          endpointId: longEndpoints[index % endpointCount] as string,
          request: {
            input: { sleepMs: HOUR, output: { index } },
            policy: { executionTimeout: WEEK, ttl: WEEK },
          },
          polling: POLLING,
        },
        { workflowId: `bench-slots-${run}-long-${index}`, taskQueue },
      ),
    );
    const startCallsDone = Date.now();
    const inProgress = () =>
      longEndpoints.reduce(
        (sum, endpointId) =>
          sum + control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS').length,
        0,
      );
    let lastReport = Date.now();
    const allRunning = await until(
      () => {
        const count = inProgress();
        if (Date.now() - lastReport > 15_000) {
          lastReport = Date.now();
          say(`  ... ${count} IN_PROGRESS after ${seconds(Date.now() - jobsStarted, 0)}`);
        }
        return count === JOBS;
      },
      30 * 60_000,
      250,
    );
    const allRunningAt = Date.now();
    const starting = await worker.figures();
    say('');
    say(`${JOBS.toLocaleString('en')} jobs started (${endpointCount} endpoint(s)):`);
    say(`  ${JOBS} startJob calls (50 at a time): ${seconds(startCallsDone - jobsStarted)}`);
    say(
      allRunning
        ? `  all ${JOBS.toLocaleString('en')} IN_PROGRESS at the emulator after ${seconds(allRunningAt - jobsStarted)} ` +
            `(${(JOBS / ((allRunningAt - jobsStarted) / 1000)).toFixed(1)} jobs/s)`
        : `  only ${inProgress()} of ${JOBS} IN_PROGRESS after 30 min`,
    );
    say(`  activity slots while starting: ${slotLine(starting)}`);

    // --- Waiting only: slots in use, /status calls.
    await sleep(POLLING.initialInterval);
    worker.reset();
    await sleep(WINDOW_MS);
    const waiting = await worker.figures({ gc: true });
    const looks = waiting.tasksByType.waitForJobChange ?? 0;
    const perSecond = looks / (waiting.windowMs / 1000);
    say('');
    say(`waiting (${seconds(waiting.windowMs, 0)} window, nothing else running):`);
    say(`  activity slots in use (of ${waiting.activitySlots ?? '?'}): ${slotLine(waiting)}`);
    say(
      `  waitForJobChange tasks (one /status look each): ${looks} = ${perSecond.toFixed(1)}/s ` +
        `(${(perSecond / endpointCount).toFixed(1)}/s per endpoint; limit ${RATE_LIMITS.status.perWindow / 10}/s)`,
    );
    say(
      `  worker RSS ${mb(waiting.rssBytes)} (idle ${mb(idle.rssBytes)}: +${((waiting.rssBytes - idle.rssBytes) / 1024 / JOBS).toFixed(0)} kB a job), ` +
        `heap ${mb(waiting.heapUsedBytes)} after GC; workflows cached ${waiting.cachedWorkflows}`,
    );

    // --- Beside them: a short job and a cancel.
    worker.reset();
    say(`  ${await backlog(scene)}`);
    const shortBeside = await shortJobLatencies(scene, 'beside', true);
    say(`  ${await backlog(scene)}`);
    const victim = handles[0] as JobHandle;
    const cancelBeside = await cancelLatency(scene, victim.workflowId);
    const beside = await worker.figures();
    const still = inProgress();
    say('');
    say(`beside the ${JOBS.toLocaleString('en')} waiting jobs:`);
    say(
      `  short job on another endpoint, start -> result (${SAMPLES}): ${spreadMs(shortBeside)}; ` +
        `${(median(shortBeside) / median(shortBefore)).toFixed(2)}x the median before`,
    );
    say(
      `  cancel of one of them, request -> emulator shows CANCELLED: ${cancelBeside} ms; ` +
        `${(cancelBeside / median(cancelBefore)).toFixed(2)}x the median before`,
    );
    say(`  activity slots meanwhile: ${slotLine(beside)}`);
    say(`  still IN_PROGRESS at the emulator: ${still} of ${JOBS}`);

    // --- The hour passes: the clock moves to the hour's end for the last job to start (all were
    // running by allRunningAt), not by a whole hour from now. The service keeps a job's results
    // 30 minutes after its end, and jobs that started that long before the last one would have
    // ended, and lost their results, in the emulator's past.
    worker.reset();
    const advancedAt = Date.now();
    control.advance(Math.max(0, HOUR - (advancedAt - allRunningAt)) + 1_000);
    const rest = handles.slice(1);
    const results = await inBatches(rest.length, 200, async (k) => {
      try {
        return await awaitJob(scene.client, { job: rest[k] as JobHandle });
      } catch (error) {
        return error instanceof Error ? error : new Error(String(error));
      }
    });
    const awaitedAt = Date.now();
    const closeTimes = await inBatches(rest.length, 100, async (k) => {
      const description = await (rest[k] as JobHandle).describe();
      return description.closeTime?.getTime() ?? Number.NaN;
    });
    const ending = await worker.figures({ gc: true });
    const completed = results.filter((r): r is JobResult => !(r instanceof Error));
    const failed = results.length - completed.length;
    const failureTypes = new Map<string, number>();
    for (const result of results) {
      if (!(result instanceof Error)) continue;
      const type = jobFailureOf(result)?.type ?? result.message.slice(0, 80);
      failureTypes.set(type, (failureTypes.get(type) ?? 0) + 1);
    }
    const lastClose = Math.max(...closeTimes);
    const sorted = [...closeTimes].sort((a, b) => a - b);
    const at = (q: number) =>
      (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) - advancedAt;
    const submissions = new Map<number, number>();
    for (const result of completed)
      submissions.set(result.submissions, (submissions.get(result.submissions) ?? 0) + 1);
    const atEmulator = longEndpoints.reduce((sum, endpointId) => sum + control.submissions(endpointId), 0);
    const outputsRight = results.filter(
      (result, k) => !(result instanceof Error) && (result.output as { index?: number })?.index === k + 1,
    ).length;
    say('');
    say(
      `the emulator's clock moved to an hour after all ${JOBS.toLocaleString('en')} were running ` +
        `(they started over ${seconds(allRunningAt - jobsStarted)}): ${rest.length} jobs complete at the service at once`,
    );
    say(
      `  all ${rest.length} workflows closed ${seconds(lastClose - advancedAt)} after the move ` +
        `(half by ${seconds(at(0.5))}, 90% by ${seconds(at(0.9))}; ${(rest.length / ((lastClose - advancedAt) / 1000)).toFixed(1)} jobs/s); ` +
        `results read by ${seconds(awaitedAt - advancedAt)}`,
    );
    say(
      `  completed ${completed.length}, failed ${failed}${failed ? ` (${[...failureTypes].map(([type, count]) => `${type} ${count}`).join(', ')})` : ''}; with their own output ${outputsRight}; submissions per job: ` +
        `${[...submissions.entries()].map(([count, jobs]) => `${count} (${jobs} jobs)`).join(', ')}; ` +
        `/run calls the emulator counted for the ${JOBS}: ${atEmulator}`,
    );
    say(`  activity slots meanwhile: ${slotLine(ending)}`);
    say(`  worker RSS ${mb(ending.rssBytes)}, heap ${mb(ending.heapUsedBytes)} after GC`);
    const allTasks = Object.entries(ending.tasksByType)
      .map(([type, count]) => `${type} ${count}`)
      .join(', ');
    say(`  activity tasks meanwhile: ${allTasks}`);
    say('');
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
