/**
 * What one job costs, and how late the workflow learns that it finished, for a job of 1 minute
 * and one of 1 hour of service time, with webhooks and polling, and with polling only: history
 * events, heartbeats, HTTP calls to the service and the delay from the job finishing to the
 * workflow finishing. Prints figures; asserts nothing.
 *
 *   npx tsx bench/job-costs.ts [--jobs 3] [--scale 50]
 *
 * --jobs   jobs per cell, run at the same time (default 3); medians are printed
 * --scale  time scale of the 1-hour jobs (default 50: one service hour in 72 real seconds); it
 *          should divide 1000, so that the scaled polling schedule is exact
 *
 * How time maps. The workflow's timers and the poller's sleeps run in real time on the dev server;
 * only the emulator's clock can be sped up. So:
 * - the 1-minute jobs run at time scale 1, for real, with the production polling schedule;
 * - the 1-hour jobs run at time scale S with that schedule divided by S (through the workflow's
 *   `polling` option), so that polls fall at the same service times as they would in production.
 * Overheads that do not scale (an activity start, a webhook's trip through the gateway) count S
 * times over in service time on the scaled cells: their real-ms column is the one to read there.
 *
 * One worker (runWorker, with the webhook gateway beside it) serves every cell. It has one
 * SERVERLESS_API_URL, so the emulators (one per cell: the time scale and the webhook loss are per
 * emulator) sit behind a small router that picks the emulator by endpoint id (one endpoint per
 * job) and counts every request per job.
 *
 * Polling only: the cell's emulator loses every webhook (webhookFaults lose 1). The workflow then
 * sees what it sees with a worker that hands out no webhook URL; the requests are the same.
 *
 * Heartbeats: runWorker takes no worker interceptors, so every Context.heartbeat() call is counted
 * by wrapping the activity Context in this process (the worker runs activities here). Those are the
 * heartbeats the activity sends; the SDK throttles how many of them reach the server (at most one
 * per min(80% of the heartbeat timeout, 60 s) per activity).
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { startJob } from '../client';
import { type Emulator, startEmulator } from '../emulator';
import { provisionedServers } from '../scripts/servers';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import type { serverlessJob } from '../workflows/job';
import { POLLING_DEFAULTS } from '../workflows/job-input';
import { searchAttributeKeys } from '../workflows/search-attributes';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const JOBS = Math.round(arg('jobs', 3));
const HOUR_SCALE = arg('scale', 50);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const say = (line: string) => console.log(line);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Heartbeats: every Context.heartbeat() call, per workflow.

interface BeatLog {
  count: number;
  /** When the last heartbeat was sent and the sleep the poller announced with it (the next poll). */
  lastAt: number;
  nextPollAt: number;
}
const beats = new Map<string, BeatLog>();
const wrapped = new WeakSet<Context>();
const currentContext = Context.current.bind(Context);
Context.current = () => {
  const context = currentContext();
  if (!wrapped.has(context)) {
    wrapped.add(context);
    const send = context.heartbeat;
    const workflowId = context.info.workflowExecution?.workflowId ?? '(none)';
    Object.defineProperty(context, 'heartbeat', {
      value: (details?: unknown) => {
        const log = beats.get(workflowId) ?? { count: 0, lastAt: 0, nextPollAt: 0 };
        log.count += 1;
        log.lastAt = Date.now();
        const interval = (details as { intervalMs?: unknown } | undefined)?.intervalMs;
        log.nextPollAt = log.lastAt + (typeof interval === 'number' ? interval : 0);
        beats.set(workflowId, log);
        send(details);
      },
    });
  }
  return context;
};

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
  heartbeats: number;
  /** Heartbeats implied by the poll counters of the pollers that completed (history). */
  heartbeatsFromHistory?: number;
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
  `${p.initialIntervalMs} ms x${p.backoffCoefficient} up to ${p.maxIntervalMs} ms`;

/** Poller activities in the history, and the heartbeats their poll counters imply when all completed. */
function pollersOf(events: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']) {
  const typeOf = new Map<string, string>();
  let pollers = 0;
  let completed = 0;
  let implied = 0;
  for (const event of events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name ?? '';
      typeOf.set(String(event.eventId), type);
      if (type === 'waitForJobChange') pollers += 1;
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done && typeOf.get(String(done.scheduledEventId)) === 'waitForJobChange') {
      const payload = done.result?.payloads?.[0];
      const result = payload
        ? defaultPayloadConverter.fromPayload<{ polls: number; reason: string }>(payload)
        : undefined;
      if (result) {
        completed += 1;
        // Every poll heartbeats except the one that saw the change.
        implied += result.polls - (result.reason === 'changed' ? 1 : 0);
      }
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
 * What the polling schedule alone predicts for a job of `durationMs`, the poller starting as the job
 * starts and each poll taking no time: polls that see it running (each heartbeats), and the wait
 * from its end to the first poll that sees it finished.
 */
function scheduleModel(
  polling: { initialIntervalMs: number; maxIntervalMs: number; backoffCoefficient: number },
  durationMs: number,
) {
  let at = 0;
  let interval = polling.initialIntervalMs;
  let heartbeats = 0;
  while (at < durationMs) {
    heartbeats += 1;
    at += interval;
    // As activities/job-wait.ts grows it.
    interval = Math.min(Math.round(interval * polling.backoffCoefficient), polling.maxIntervalMs);
  }
  return { heartbeats, delayMs: at - durationMs };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const { temporalCli } = provisionedServers();
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
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
        ip: '127.0.0.1',
        ui: false,
        searchAttributes: searchAttributeKeys,
        extraArgs: ['--log-level', 'error'],
      },
    });

    say('job costs: history events, heartbeats, HTTP calls and finish-to-close delay per job');
    say(
      `  ${JOBS} jobs per cell, all cells at once, on one worker; medians, with the range when the jobs differ`,
    );
    say(
      `  1-minute jobs: time scale 1 (real time), production polling schedule (async: ${schedule(POLLING_DEFAULTS.async)})`,
    );
    say(
      `  1-hour jobs: time scale ${HOUR_SCALE} (1 service hour = ${(HOUR / HOUR_SCALE / 1000).toFixed(0)} real s), ` +
        `polling schedule divided by ${HOUR_SCALE} (${schedule(hourPolling)}): polls at the production service times`,
    );
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
              ...(cell.polling ? { polling: cell.polling } : {}),
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

    // A poller cancelled by a webhook learns of it at its next heartbeat at the earliest, so it may
    // poll once more after its workflow has closed: wait for those polls, then count.
    const settleBy = Math.max(...[...beats.values()].map((log) => log.nextPollAt)) + 1_000;
    if (settleBy > Date.now()) await sleep(Math.min(settleBy - Date.now(), 40_000));
    await sleep(300);

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
        // /run answers IN_QUEUE; the first poller's first poll sees IN_PROGRESS and returns; the second
        // poller (the one that waits for the end) starts its schedule with the second /status call.
        const scheduleStartAt = calls.filter((call) => call.operation === 'status')[1]?.at ?? Number.NaN;
        const seenAt = calls.find((call) => call.operation === 'status' && call.answered === 'COMPLETED')?.at;
        const mine = deliveries.filter((delivery) => delivery.jobId === job.jobId);
        figures.push({
          events: events.length,
          heartbeats: beats.get(job.workflowId)?.count ?? 0,
          ...(pollers.implied !== undefined ? { heartbeatsFromHistory: pollers.implied } : {}),
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
      `jobs ran ${((jobsDone - jobsStarted) / 1000).toFixed(1)} s real; counted once every poller cancelled by a webhook had made its last poll`,
    );
    say('');
    const columns: Array<[string, number]> = [
      ['cell', 26],
      ['history events', 15],
      ['heartbeats', 11],
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
          spread(pick('heartbeats')),
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
      'delay, broken down (real ms): the end-waiting poller began polling after the job started; the job finished',
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
    for (const mode of ['webhooks + polling', 'polling only']) {
      const minute = byLabel(`1 min, ${mode}`);
      const hour = byLabel(`1 h, ${mode}`);
      if (minute.length === 0 || hour.length === 0) continue;
      const events = (figures: Figures[]) => figures.map((f) => f.events);
      // The same event sequences at both lengths; a job whose poller and webhook see the end at the
      // same moment has a few more events, at either length.
      const grows = Math.min(...events(hour)) > Math.max(...events(minute));
      const verdict = grows ? 'the 1-hour history is LONGER' : 'the history does not grow with running time';
      say(
        `history events, ${mode}: 1-minute job ${spread(events(minute))} ` +
          `(${spread(minute.map((f) => f.heartbeats))} heartbeats), 1-hour job ${spread(events(hour))} ` +
          `(${spread(hour.map((f) => f.heartbeats))} heartbeats): ${verdict}`,
      );
    }
    for (const [name, durationMs] of [
      ['1-minute', MINUTE],
      ['1-hour', HOUR],
    ] as const) {
      const model = scheduleModel(POLLING_DEFAULTS.async, durationMs);
      say(
        `production schedule alone, ${name} job: ${model.heartbeats} heartbeats, ${model.heartbeats + 3} HTTP calls ` +
          `with polling only, first poll after the end at +${(model.delayMs / 1_000).toFixed(1)} s ` +
          `(~${Math.ceil(durationMs / 60_000) + 1} heartbeats reach the server: one per 60 s)`,
      );
    }
    const checks = rows.flatMap(({ figures }) =>
      figures
        .filter((f) => f.heartbeatsFromHistory !== undefined)
        .map((f) => f.heartbeatsFromHistory === f.heartbeats),
    );
    say(
      'heartbeats counted = heartbeats implied by the poll counters the pollers returned (history), ' +
        `for jobs whose pollers all completed: ${checks.filter(Boolean).length} of ${checks.length}`,
    );
    const submissions = rows.flatMap(({ figures }) => figures.map((f) => f.submissions === f.runCalls));
    say(
      `/run calls counted = the emulator's submissions: ${submissions.filter(Boolean).length} of ${submissions.length} jobs`,
    );
    const raceNote = [
      "(with webhooks: 4 more events, and a close one workflow task later, when the poller's own poll sees the end",
      "  while the webhook's /status look is under way: the poller completes instead of being cancelled. The odds",
      "  are about the look's latency over the polling interval: far higher on the scaled cell than in production)",
    ];
    for (const note of raceNote) say(note);
    const pollerCounts = rows.map(
      ({ cell, figures }) => `${cell.label} ${spread(figures.map((f) => f.pollers))}`,
    );
    say(`poller activities per job: ${pollerCounts.join(', ')}`);
    say('');
    const S = HOUR_SCALE;
    const alone = [MINUTE, HOUR].map((d) =>
      (scheduleModel(POLLING_DEFAULTS.async, d).delayMs / 1_000).toFixed(1),
    );
    const notes = [
      'reading the table:',
      '- heartbeats: Context.heartbeat() calls, one per poll that saw no change. The SDK forwards at most one per',
      '  min(80% of the heartbeat timeout, 60 s) per activity, so in production about one a minute reaches the',
      '  server; on the scaled cells that throttle runs in real time: count the calls there, not the RPCs.',
      '- HTTP calls: every request the service received for the job: /run, /status (the polls and the look that',
      '  confirms a webhook) and any other. "after close": made after the workflow had closed. A poller cancelled',
      '  by the webhook hears of it with its next heartbeat RPC, so it may poll once more (at most one interval',
      '  later), then stops.',
      '- webhooks: delivered / sent or lost, per job.',
      "- delay: from the job finishing (the emulator's finish time, converted to real time) to the workflow's close",
      `  time; service time = real x time scale. * (1-hour cells, x${S}): overheads that do not scale (activity`,
      `  starts, the webhook's trip through the gateway) count x${S} there, so with webhooks read the real ms.`,
      '  With polling only the delay is the wait for the next poll after the end: anywhere from 0 to the maximum',
      '  interval (30 s service time), set by where the schedule happens to stand when the job ends. The schedule',
      `  alone puts it at ${alone[0]} s (1 min) and ${alone[1]} s (1 h) after the end. Here the schedule starts when`,
      '  the second poller first polls ("began" above: task and activity latency on this machine), and each poll',
      `  adds its own HTTP time to the spacing; on the scaled cell both count x${S}, which moves the phase from run`,
      '  to run (and costs a poll or two over the hour).',
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
