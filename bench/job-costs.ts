/**
 * What one job costs, and how late the workflow learns that it finished, for a job of 1 minute
 * and one of 1 hour of service time, with webhooks and polling, and with polling only: history
 * events, activity tasks (every attempt of the wait is one), HTTP calls to the service and the
 * delay from the job finishing to the workflow finishing. Prints figures; asserts nothing.
 *
 *   npx tsx bench/job-costs.ts [--jobs 3] [--scale 30]
 *
 * --jobs   jobs per cell, run at the same time (default 3); medians are printed
 * --scale  time scale of the 1-hour jobs (default 30: one service hour in 120 real seconds)
 *
 * How time maps. The workflow's timers and the wait's retry delays run in real time on the dev
 * server; only the emulator's clock can be sped up. So:
 * - the 1-minute jobs run at time scale 1, for real, with the production polling schedule;
 * - the 1-hour jobs run at time scale S with that schedule divided by S (through the workflow's
 *   `polling` option), so that looks fall at the same service times as they would in production.
 *   One difference does not scale: a wait looks inline (within one attempt, for at most 5 s) while
 *   the next interval is under INLINE_MAX_INTERVAL_MS (1 s, contracts/job-wait-policy.ts), and the
 *   scaled schedule is under it while production's is under S seconds. At S = 30 (production's
 *   30 s maximum becomes 1 s) that is only the schedule's growth: its first minute of service time
 *   is one task of several looks, where production makes one task per look. A larger S would make
 *   the scaled waits look inline throughout; the bench says how many tasks production's schedule
 *   makes, to read beside the measured ones.
 * Overheads that do not scale (an activity start, a retry timer's latency, a webhook's trip through
 * the gateway) count S times over in service time on the scaled cells: their real-ms column is the
 * one to read there.
 *
 * One worker (runWorker, with the webhook gateway beside it) serves every cell. It has one
 * SERVERLESS_API_URL, so the emulators (one per cell: the time scale and the webhook loss are per
 * emulator) sit behind a small router that picks the emulator by endpoint id (one endpoint per
 * job) and counts every request per job.
 *
 * Polling only: the cell's emulator loses every webhook (webhookFaults lose 1). The workflow then
 * sees what it sees with a worker that hands out no webhook URL; the requests are the same.
 *
 * Activity tasks: runWorker takes no worker interceptors, so bench/worker-probe.ts wraps
 * Worker.create in this process (the worker runs here) and counts every task an activity
 * interceptor sees, per workflow and activity type: each attempt of waitForJobChange (a look that
 * ends in JobUnchanged and is retried by the server after its nextRetryDelay) is one task. The
 * attempt numbers the history records for the waits that completed are a cross-check.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { POLLING_DEFAULTS } from '../contracts/job-input';
import { INLINE_BUDGET_MS, INLINE_MAX_INTERVAL_MS, intervalAfter } from '../contracts/job-wait-policy';
import { type Emulator, startEmulator } from '../emulator';
import { startJob } from '../index';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import type { serverlessJob } from '../workflows/job/job';
import { startDevServer } from './support';
import { installWorkerProbe, tasksOf } from './worker-probe';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const JOBS = Math.round(arg('jobs', 3));
const HOUR_SCALE = arg('scale', 30);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const say = (line: string) => console.log(line);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Every activity task the worker runs, per workflow and activity type (before runWorker creates it).
const probe = installWorkerProbe();

// ---------------------------------------------------------------------------------------------
// The router: one base URL in front of the cells' emulators, counting requests per endpoint.

interface Call {
  at: number;
  operation: string;
  /** The job status a /status answer carried. */
  answered?: string;
}

async function startRouter(route: Map<string, Emulator>) {
  const calls = new Map<string, Call[]>();
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    // /v2/<endpointId>/<operation>[/<jobId>]
    const [, , endpointId = '', operation = ''] = (req.url ?? '').split('?')[0]?.split('/') ?? [];
    const target = route.get(endpointId);
    if (!target) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no such endpoint"}');
      return;
    }
    const call: Call = { at: Date.now(), operation };
    const list = calls.get(endpointId) ?? [];
    list.push(call);
    calls.set(endpointId, list);
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (operation === 'status') {
          // Status bodies are small: keep a copy to see which answer first showed the job finished.
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            try {
              call.answered = (JSON.parse(Buffer.concat(chunks).toString()) as { status?: string }).status;
            } catch {}
          });
        }
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2`,
    calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Cells and measurements

interface Cell {
  label: string;
  durationMs: number;
  scale: number;
  webhooks: boolean;
  polling?: { initialIntervalMs: number; maxIntervalMs: number; backoffCoefficient: number };
  emulator?: Emulator;
  jobs: JobRun[];
}

interface JobRun {
  workflowId: string;
  endpointId: string;
  handle?: WorkflowHandle<typeof serverlessJob>;
  jobId?: string;
  /** Real and service time read together when the result arrived: converts service times to real. */
  sample?: { real: number; service: number };
  error?: string;
}

interface Figures {
  events: number;
  /** Activity tasks the worker ran for the workflow (every attempt counts), and those of the wait. */
  tasks: number;
  waitTasks: number;
  /** Wait tasks by the attempt numbers of the waits' ActivityTaskStarted events, when every wait completed. */
  waitTasksFromHistory?: number;
  /** Wait activities the workflow scheduled. */
  pollers: number;
  calls: number;
  runCalls: number;
  statusCalls: number;
  callsAfterClose: number;
  submissions: number;
  webhooksDelivered: number;
  webhooksLost: number;
  delayRealMs: number;
  /** Real ms from the job starting to the first poll of the poller that waits for its end. */
  scheduleStartMs: number;
  /** Real ms from the job finishing to the first /status call answered COMPLETED. */
  seenAfterMs: number;
  /** Real ms from that call to the workflow's close. */
  closedAfterSeenMs: number;
}

const schedule = (p: { initialIntervalMs: number; maxIntervalMs: number; backoffCoefficient: number }) =>
  `${p.initialIntervalMs} ms + ${(p.backoffCoefficient - 1).toFixed(2)} x elapsed, up to ${p.maxIntervalMs} ms`;

/**
 * Wait activities in the history and, when every one completed, the tasks their attempt numbers
 * imply: a retried activity's ActivityTaskStarted event is written once, for its last attempt.
 */
function pollersOf(events: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']) {
  const waits = new Set<string>();
  const attemptOf = new Map<string, number>();
  let pollers = 0;
  let completed = 0;
  let implied = 0;
  for (const event of events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'waitForJobChange') {
      pollers += 1;
      waits.add(String(event.eventId));
    }
    const started = event.activityTaskStartedEventAttributes;
    if (started && waits.has(String(started.scheduledEventId))) {
      attemptOf.set(String(started.scheduledEventId), started.attempt ?? 1);
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done && waits.has(String(done.scheduledEventId))) {
      completed += 1;
      implied += attemptOf.get(String(done.scheduledEventId)) ?? Number.NaN;
    }
  }
  return { pollers, implied: completed === pollers ? implied : undefined };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The median, with the range when the jobs differ: `123 (66-137) ms`. */
function spread(values: number[], digits = 0, unit = ''): string {
  const format = (value: number) => value.toFixed(digits);
  const med = format(median(values));
  const low = format(Math.min(...values));
  const high = format(Math.max(...values));
  const suffix = unit ? ` ${unit}` : '';
  return low === high ? `${med}${suffix}` : `${med} (${low}-${high})${suffix}`;
}

/**
 * What the polling schedule alone predicts for a job of `durationMs`, the wait starting as the job
 * starts and each look taking no time: the looks that see it running, the tasks they and the look
 * that sees the end take, and the wait from its end to that look. The interval grows as activities/job-wait.ts grows it
 * (intervalAfter: initial + elapsed x (coefficient - 1), capped at the maximum, elapsed counted
 * from the wait's first scheduling); each look is one task unless it is looked inline.
 */
function scheduleModel(
  polling: { initialIntervalMs: number; maxIntervalMs: number; backoffCoefficient: number },
  durationMs: number,
) {
  let at = 0;
  let looks = 0;
  let tasks = 0;
  let attemptStart: number | undefined;
  while (at < durationMs) {
    if (attemptStart === undefined) {
      tasks += 1;
      attemptStart = at;
    }
    looks += 1;
    const delay = intervalAfter(at, polling);
    // As lookForChange decides: a short interval is waited inline, within the attempt's budget.
    if (!(delay < INLINE_MAX_INTERVAL_MS && at + delay - attemptStart <= INLINE_BUDGET_MS)) {
      attemptStart = undefined;
    }
    at += delay;
  }
  // The look that sees the end: a task of its own unless an inline attempt was still under way.
  return { looks, tasks: tasks + (attemptStart === undefined ? 1 : 0), delayMs: at - durationMs };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });

  const hourPolling = {
    initialIntervalMs: Math.max(10, Math.round(POLLING_DEFAULTS.async.initialIntervalMs / HOUR_SCALE)),
    maxIntervalMs: Math.max(10, Math.round(POLLING_DEFAULTS.async.maxIntervalMs / HOUR_SCALE)),
    backoffCoefficient: POLLING_DEFAULTS.async.backoffCoefficient,
  };
  const cells: Cell[] = [
    { label: '1 min, webhooks + polling', durationMs: MINUTE, scale: 1, webhooks: true, jobs: [] },
    { label: '1 min, polling only', durationMs: MINUTE, scale: 1, webhooks: false, jobs: [] },
    {
      label: '1 h, webhooks + polling',
      durationMs: HOUR,
      scale: HOUR_SCALE,
      webhooks: true,
      polling: hourPolling,
      jobs: [],
    },
    {
      label: '1 h, polling only',
      durationMs: HOUR,
      scale: HOUR_SCALE,
      webhooks: false,
      polling: hourPolling,
      jobs: [],
    },
  ];

  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const taskQueue = `bench-job-costs-${run}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-${run}`);
  const stop = new AbortController();
  const route = new Map<string, Emulator>();
  let env: TestWorkflowEnvironment | undefined;
  let router: Awaited<ReturnType<typeof startRouter>> | undefined;
  let worker: Promise<void> | undefined;

  try {
    env = await startDevServer();

    say('job costs: history events, activity tasks, HTTP calls and finish-to-close delay per job');
    say(
      `  ${JOBS} jobs per cell, all cells at once, on one worker; medians, with the range when the jobs differ`,
    );
    say(
      `  1-minute jobs: time scale 1 (real time), production polling schedule (async: ${schedule(POLLING_DEFAULTS.async)})`,
    );
    say(
      `  1-hour jobs: time scale ${HOUR_SCALE} (1 service hour = ${(HOUR / HOUR_SCALE / 1000).toFixed(0)} real s), ` +
        `polling schedule divided by ${HOUR_SCALE} (${schedule(hourPolling)}): looks at the production service times`,
    );
    if (hourPolling.maxIntervalMs < INLINE_MAX_INTERVAL_MS) {
      say(
        `  (scale ${HOUR_SCALE}: the scaled maximum interval is under ${INLINE_MAX_INTERVAL_MS} ms, so the 1-hour waits ` +
          'look inline within attempts of up to 5 s: far fewer tasks than production; use --scale 30 or less)',
      );
    }
    say('  polling only: the emulator loses every webhook; webhooks + polling: every webhook is delivered');
    say(
      '  emulator: scripted handler { sleepMs }, one warm worker per endpoint (no cold start), one endpoint per job',
    );

    for (const [c, cell] of cells.entries()) {
      const emulator = await startEmulator({
        accounts: [{ apiKey }],
        timeScale: cell.scale,
        coldStartMs: 0,
        flashBootMs: 0,
      });
      cell.emulator = emulator;
      if (!cell.webhooks) emulator.control.webhookFaults({ lose: 1 });
      for (let i = 0; i < JOBS; i++) {
        const endpoint = emulator.control.createEndpoint(apiKey, {
          name: `bench-${c}-${i}`,
          templateId: 'scripted',
          workersMin: 1,
          workersMax: 1,
          executionTimeoutMs: 2 * HOUR,
        });
        route.set(endpoint.id, emulator);
        cell.jobs.push({ workflowId: `bench-job-costs-${run}-${c}-${i}`, endpointId: endpoint.id });
      }
    }
    router = await startRouter(route);

    const first = cells[0]?.emulator as Emulator;
    const config = loadWorkerConfig(
      {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        SERVERLESS_API_KEY: apiKey,
        SERVERLESS_API_URL: router.url,
        SERVERLESS_GRAPHQL_URL: first.graphqlUrl,
        SERVERLESS_REST_URL: first.restUrl,
        // Any free port; the worker hands out webhook URLs on the port the gateway got.
        WEBHOOK_PORT: '0',
        WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
        RESULT_STORE_DIR: path.join(workdir, 'results'),
        LOG_LEVEL: 'error',
      },
      workdir,
    );
    const ready = new Promise<void>((resolve) => {
      worker = runWorker(config, {
        signal: stop.signal,
        logger: createLogger({ level: 'error', secrets: [apiKey] }),
        publicUrlFromGateway: true,
        onReady: () => resolve(),
      });
    });
    await Promise.race([ready, worker]);

    // Every endpoint's worker is up before any job is submitted.
    for (let i = 0; i < 500; i++) {
      const warm = cells.every((cell) =>
        (cell.emulator as Emulator).control.endpoints().every((endpoint) => endpoint.workers.idle >= 1),
      );
      if (warm) break;
      await sleep(10);
    }
    say(
      `  set up in ${((Date.now() - started) / 1000).toFixed(1)} s (dev server, ${cells.length} emulators, worker, gateway)`,
    );

    const client = env.client;
    const jobsStarted = Date.now();
    await Promise.all(
      cells.flatMap((cell) =>
        cell.jobs.map(async (job) => {
          job.handle = await startJob(
            client,
            {
              endpointId: job.endpointId,
              request: { input: { sleepMs: cell.durationMs, output: { done: true } } },
              ...(cell.polling
                ? {
                    polling: {
                      initialInterval: cell.polling.initialIntervalMs,
                      maxInterval: cell.polling.maxIntervalMs,
                      backoffCoefficient: cell.polling.backoffCoefficient,
                    },
                  }
                : {}),
            },
            { workflowId: job.workflowId, taskQueue },
          );
        }),
      ),
    );
    await Promise.all(
      cells.flatMap((cell) =>
        cell.jobs.map(async (job) => {
          try {
            const result = await (job.handle as WorkflowHandle<typeof serverlessJob>).result();
            job.jobId = result.jobId;
          } catch (error) {
            job.error = error instanceof Error ? error.message : String(error);
          }
          job.sample = { real: Date.now(), service: (cell.emulator as Emulator).control.now() };
        }),
      ),
    );
    const jobsDone = Date.now();

    // A wait cancelled by a webhook between two looks is cancelled by the server at once (nothing
    // runs); one cancelled mid-look finishes that look. Let any such look end, then count.
    for (let i = 0; i < 400 && probe.running() > 0; i++) await sleep(50);
    await sleep(1_000);

    const rows: Array<{ cell: Cell; figures: Figures[] }> = [];
    for (const cell of cells) {
      const emulator = cell.emulator as Emulator;
      const deliveries = emulator.control.webhookDeliveries();
      const figures: Figures[] = [];
      for (const job of cell.jobs) {
        const handle = job.handle as WorkflowHandle<typeof serverlessJob>;
        if (job.error || !job.jobId || !job.sample) {
          say(`  ${cell.label}: ${job.workflowId} did not complete: ${job.error ?? 'no result'}`);
          continue;
        }
        const [history, description] = await Promise.all([handle.fetchHistory(), handle.describe()]);
        const events = history.events ?? [];
        const closedAt = description.closeTime?.getTime() ?? Number.NaN;
        const remote = emulator.control.job(job.jobId);
        const finishedAtService = remote?.finishedAt ?? Number.NaN;
        const finishedAtReal = job.sample.real - (job.sample.service - finishedAtService) / cell.scale;
        const calls = router.calls.get(job.endpointId) ?? [];
        const pollers = pollersOf(events);
        const startedAtReal =
          job.sample.real - (job.sample.service - (remote?.startedAt ?? Number.NaN)) / cell.scale;
        // /run answers IN_QUEUE; the first wait's first look sees IN_PROGRESS and returns; the second
        // wait (the one that waits for the end) starts its schedule with the second /status call.
        const scheduleStartAt = calls.filter((call) => call.operation === 'status')[1]?.at ?? Number.NaN;
        const seenAt = calls.find((call) => call.operation === 'status' && call.answered === 'COMPLETED')?.at;
        const mine = deliveries.filter((delivery) => delivery.jobId === job.jobId);
        figures.push({
          events: events.length,
          tasks: tasksOf(probe, job.workflowId),
          waitTasks: tasksOf(probe, job.workflowId, 'waitForJobChange'),
          ...(pollers.implied !== undefined ? { waitTasksFromHistory: pollers.implied } : {}),
          pollers: pollers.pollers,
          calls: calls.length,
          runCalls: calls.filter((call) => call.operation === 'run').length,
          statusCalls: calls.filter((call) => call.operation === 'status').length,
          callsAfterClose: calls.filter((call) => call.at > closedAt).length,
          submissions: emulator.control.submissions(job.endpointId),
          webhooksDelivered: mine.filter((delivery) => delivery.httpStatus === 200).length,
          webhooksLost: mine.filter((delivery) => delivery.httpStatus !== 200).length,
          delayRealMs: closedAt - finishedAtReal,
          scheduleStartMs: scheduleStartAt - startedAtReal,
          seenAfterMs: (seenAt ?? Number.NaN) - finishedAtReal,
          closedAfterSeenMs: closedAt - (seenAt ?? Number.NaN),
        });
      }
      rows.push({ cell, figures });
    }

    say('');
    say(
      `jobs ran ${((jobsDone - jobsStarted) / 1000).toFixed(1)} s real; counted once every wait cancelled by a webhook had ended its look`,
    );
    say('');
    const columns: Array<[string, number]> = [
      ['cell', 26],
      ['history events', 15],
      ['activity tasks (wait)', 22],
      ['HTTP calls', 11],
      ['/run + /status', 15],
      ['after close', 12],
      ['webhooks', 9],
      ['delay, real', 18],
      ['delay, service time', 22],
    ];
    const line = (cells: string[]) =>
      cells
        .map((text, i) => (i === 0 ? text.padEnd(columns[0]?.[1] ?? 0) : text.padStart(columns[i]?.[1] ?? 0)))
        .join(' ');
    const header = line(columns.map(([title]) => title));
    say(header);
    say('-'.repeat(header.length));
    for (const { cell, figures } of rows) {
      if (figures.length === 0) {
        say(`${cell.label.padEnd(26)} (no job completed)`);
        continue;
      }
      const pick = (key: keyof Figures) => figures.map((f) => f[key] as number);
      const sent = figures.map((f) => f.webhooksDelivered + f.webhooksLost);
      const scaled = cell.scale === 1 ? '' : ' *';
      say(
        line([
          cell.label,
          spread(pick('events')),
          `${spread(pick('tasks'))} (${spread(pick('waitTasks'))})`,
          spread(pick('calls')),
          `${spread(pick('runCalls'))} + ${spread(pick('statusCalls'))}`,
          spread(pick('callsAfterClose')),
          `${spread(pick('webhooksDelivered'))}/${spread(sent)}`,
          spread(pick('delayRealMs'), 0, 'ms'),
          `${spread(
            pick('delayRealMs').map((d) => (d * cell.scale) / 1_000),
            2,
            's',
          )}${scaled}`,
        ]),
      );
    }

    say('');
    say(
      'delay, broken down (real ms): the end-waiting wait began looking after the job started; the job finished',
    );
    say('  -> the first /status call answered COMPLETED reached the service -> the workflow closed');
    for (const { cell, figures } of rows) {
      if (figures.length === 0) continue;
      const part = (key: keyof Figures) =>
        spread(
          figures.map((f) => f[key] as number),
          0,
          'ms',
        );
      say(
        `  ${cell.label.padEnd(26)} began ${part('scheduleStartMs').padStart(18)};  finished -> ${part('seenAfterMs').padStart(22)} -> ${part('closedAfterSeenMs').padStart(15)}`,
      );
    }
    say('');
    const byLabel = (label: string) => rows.find((row) => row.cell.label === label)?.figures ?? [];
    const production = (durationMs: number) => scheduleModel(POLLING_DEFAULTS.async, durationMs);
    const scaledHour = scheduleModel(hourPolling, HOUR / HOUR_SCALE);
    for (const mode of ['webhooks + polling', 'polling only']) {
      const minute = byLabel(`1 min, ${mode}`);
      const hour = byLabel(`1 h, ${mode}`);
      if (minute.length === 0 || hour.length === 0) continue;
      const events = (figures: Figures[]) => figures.map((f) => f.events);
      // The same event sequences at both lengths; a job whose wait and webhook see the end at the
      // same moment has a few more events, at either length.
      const grows = Math.min(...events(hour)) > Math.max(...events(minute));
      const verdict = grows ? 'the 1-hour history is LONGER' : 'the history does not grow with running time';
      say(
        `history events, ${mode}: 1-minute job ${spread(events(minute))}, 1-hour job ${spread(events(hour))}: ${verdict}`,
      );
      say(
        `  wait tasks: 1-minute job ${spread(minute.map((f) => f.waitTasks))} (the schedule: ` +
          `${production(MINUTE).tasks + 1}), 1-hour job ${spread(hour.map((f) => f.waitTasks))} (the scaled ` +
          `schedule: ${scaledHour.tasks + 1}; production's: ${production(HOUR).tasks + 1}); the schedule's ` +
          'figures count the look that sees IN_PROGRESS and, as with polling only, the look that sees the end',
      );
    }
    for (const [name, durationMs] of [
      ['1-minute', MINUTE],
      ['1-hour', HOUR],
    ] as const) {
      const model = production(durationMs);
      say(
        `production schedule alone, ${name} job: ${model.looks} looks while it runs, each one task; ` +
          `${model.tasks + 2} activity tasks and HTTP calls with polling only (/run, the look that sees ` +
          `IN_PROGRESS, the looks, the look that sees the end); first look after the end at +${(model.delayMs / 1_000).toFixed(1)} s`,
      );
    }
    const checks = rows.flatMap(({ figures }) =>
      figures
        .filter((f) => f.waitTasksFromHistory !== undefined)
        .map((f) => f.waitTasksFromHistory === f.waitTasks),
    );
    say(
      'wait tasks counted = the attempt numbers in the history, for jobs whose waits all completed: ' +
        `${checks.filter(Boolean).length} of ${checks.length}`,
    );
    const submissions = rows.flatMap(({ figures }) => figures.map((f) => f.submissions === f.runCalls));
    say(
      `/run calls counted = the emulator's submissions: ${submissions.filter(Boolean).length} of ${submissions.length} jobs`,
    );
    const raceNote = [
      "(with webhooks: a few more events, and a close one workflow task later, when the wait's own look sees the end",
      "  while the webhook's /status look is under way: the wait completes instead of being cancelled. The odds",
      "  are about the look's latency over the polling interval: far higher on the scaled cell than in production)",
    ];
    for (const note of raceNote) say(note);
    const pollerCounts = rows.map(
      ({ cell, figures }) => `${cell.label} ${spread(figures.map((f) => f.pollers))}`,
    );
    say(`wait activities per job: ${pollerCounts.join(', ')}`);
    say('');
    const S = HOUR_SCALE;
    const alone = [MINUTE, HOUR].map((d) => (production(d).delayMs / 1_000).toFixed(1));
    const notes = [
      'reading the table:',
      '- activity tasks: every task the worker ran for the job (submitJob, each attempt of waitForJobChange,',
      "  fetchJobStatus for a webhook, ...); in brackets the waits' attempts. An attempt that finds nothing new",
      '  fails with JobUnchanged and the server starts the next one after its nextRetryDelay: no history event,',
      "  no worker slot in between. Nothing heartbeats (sync mode's inline looks aside, and the scaled cells'",
      `  first second: see the header).`,
      '- HTTP calls: every request the service received for the job: /run, /status (the looks and the look that',
      '  confirms a webhook) and any other. "after close": made after the workflow had closed. A wait cancelled',
      '  between two looks is cancelled by the server at once; one cancelled mid-look finishes that look.',
      '- webhooks: delivered / sent or lost, per job.',
      "- delay: from the job finishing (the emulator's finish time, converted to real time) to the workflow's close",
      `  time; service time = real x time scale. * (1-hour cells, x${S}): overheads that do not scale (activity`,
      `  starts, retry timers, the webhook's trip through the gateway) count x${S} there, so with webhooks read the`,
      '  real ms. With polling only the delay is the wait for the next look after the end: anywhere from 0 to the',
      '  maximum interval (30 s service time), set by where the schedule happens to stand when the job ends. The',
      `  schedule alone puts it at ${alone[0]} s (1 min) and ${alone[1]} s (1 h) after the end. Here the schedule`,
      '  starts when the second wait is first scheduled ("began" above: task and activity latency on this machine),',
      `  and each look adds its own task and HTTP time to the spacing; on the scaled cell both count x${S}, which`,
      '  moves the phase from run to run (and costs a look or a few over the hour).',
    ];
    for (const note of notes) say(note);
    say(`total ${((Date.now() - started) / 1000).toFixed(0)} s real`);
  } finally {
    stop.abort();
    await worker?.catch(() => undefined);
    await router?.close();
    for (const cell of cells) await cell.emulator?.close();
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
