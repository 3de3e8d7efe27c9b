/**
 * Plumbing of the reliability suite: the production-shaped Temporal of global-setup.ts, the
 * emulator over HTTP, the webhook gateway and the worker as real processes of the built package
 * (dist/worker/gateway-main.js and dist/worker/main.js with the prebuilt workflow bundle,
 * configured through the environment, as docker-compose.yml and the Dockerfile deploy them), a
 * driver that keeps a fixed number of jobs in flight, the events the cases wait for, and the
 * tally every case prints.
 *
 * Every job runs on an endpoint of its own, so the emulator's submission counter of that endpoint
 * is that job's count of /run requests the service acted on: 1 for a job done right, 2 or more for
 * a job submitted twice. The checks read outcomes only (results, typed failures, those counters),
 * never how the workflow waits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { inject } from 'vitest';
import { type BatchResultLine, type BatchSummary, readBatchResults } from '../../client/batches';
import { awaitJob, type JobFailure, type JobResult, jobFailureOf, startJob } from '../../client/jobs';
import { type Emulator, type JobState, startEmulator } from '../../emulator';
import { freePorts, type ProdTemporalInstance } from '../../scripts/prod-temporal';
import type { JobWorkflowInput } from '../../workflows/job-input';

const repoRoot = path.resolve(__dirname, '../..');

/**
 * Jobs in flight at once: a load choice, not a limit (a waiting job holds no worker slot). On this
 * machine's 2 cores the worker and the server are the bottleneck well before 80.
 */
export const IN_FLIGHT = 80;

export const instance = (): ProdTemporalInstance => inject('prodTemporal');

// ------------------------------------------------------------------------------------------------
// Processes

export interface ManagedProcess {
  child: ChildProcess;
  /** Resolves once the process logged that it runs. */
  running: Promise<void>;
  /** SIGKILL: a crash, nothing drained. */
  kill(): Promise<void>;
  /** SIGTERM: the orderly stop. */
  stop(): Promise<void>;
  output(): string;
}

/**
 * The built package's entry points (global-setup.ts builds it when missing or stale). Built,
 * a worker loads the prebuilt workflow bundle and runs in about a second; from the sources it would
 * bundle the workflows at every start (about 8 s here), which is not how a worker is deployed.
 */
export function builtEntry(name: 'worker/main.js' | 'worker/gateway-main.js'): string {
  const entry = path.join(repoRoot, 'dist', name);
  if (!existsSync(entry) || !existsSync(path.join(repoRoot, 'dist/workflow-bundle.js'))) {
    throw new Error(`${entry} or dist/workflow-bundle.js is missing: run npm run build`);
  }
  return entry;
}

function spawnEntry(entry: string, readyLine: string, vars: Record<string, string>): ManagedProcess {
  const child = spawn(process.execPath, [entry], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The last lines only: a worker that lives through a server restart logs a lot.
  let lines: string[] = [];
  let ready = false;
  let markReady!: () => void;
  const readyOnce = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const take = (chunk: Buffer) => {
    const text = chunk.toString();
    if (!ready && text.includes(readyLine)) {
      ready = true;
      markReady();
    }
    lines.push(text);
    if (lines.length > 200) lines = lines.slice(-100);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const output = () => lines.join('');
  const running: Promise<void> = Promise.race([
    readyOnce,
    exited.then(() => {
      if (!ready) throw new Error(`${entry} exited before it ran:\n${output()}`);
    }),
    new Promise<void>((_, reject) =>
      setTimeout(
        () => !ready && reject(new Error(`${entry} not running after 180 s:\n${output()}`)),
        180_000,
      ).unref(),
    ),
  ]);
  // A process stopped before it ran (the run ended first) is no failure of its own: whoever awaits
  // `running` still sees the rejection.
  running.catch(() => undefined);
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    running,
    async kill() {
      if (!gone()) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (gone()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
    output,
  };
}

// ------------------------------------------------------------------------------------------------
// The stack

const FINAL_STATUSES = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);

export interface StackOptions {
  name: string;
  /** Service time runs this many times faster than real time. */
  timeScale: number;
  /** The emulator's dice for fault probabilities. */
  random?: () => number;
}

export interface Stack {
  emulator: Emulator;
  control: Emulator['control'];
  client: Client;
  taskQueue: string;
  /** The standalone webhook gateway (npm run gateway), up for the whole file. */
  gateway: ManagedProcess;
  /** Starts a worker process (npm run worker) on this stack's task queue, stopped by close(). */
  startWorker(): ManagedProcess;
  /** A fresh endpoint on the scripted handler: one per job (one worker), or one per batch (`fields`). */
  endpoint(fields?: { workersMin?: number; workersMax?: number }): string;
  /** The workers' RESULT_STORE_DIR (a batch's results live in its `batches` folder). */
  resultDir: string;
  /** /run requests the service acted on, over all of this stack's endpoints (the emulator's count). */
  submissions(): number;
  /** Jobs the service has and has not finished: queued or running there. */
  runningAtService(): number;
  close(): Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const temporal = instance();
  const apiKey = `sk-rel-${randomUUID()}`;
  // No cold starts: scaling is not what these cases test.
  const emulator = await startEmulator({
    timeScale: options.timeScale,
    accounts: [{ apiKey }],
    coldStartMs: 0,
    ...(options.random ? { random: options.random } : {}),
  });
  const connection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection, namespace: temporal.namespace });
  const taskQueue = `${options.name}-${randomUUID()}`;
  const resultDir = mkdtempSync(path.join(tmpdir(), `reliability-${options.name}-`));
  const secret = randomBytes(32).toString('base64url');
  const [gatewayPort] = await freePorts(1);
  const common = {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    WEBHOOK_SECRET: secret,
    LOG_LEVEL: 'info',
  };
  const gateway = spawnEntry(builtEntry('worker/gateway-main.js'), 'webhook gateway running', {
    ...common,
    WEBHOOK_PORT: String(gatewayPort),
  });
  await gateway.running;
  const workerVars = {
    ...common,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SERVERLESS_API_KEY: apiKey,
    SERVERLESS_API_URL: emulator.apiUrl,
    SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
    SERVERLESS_REST_URL: emulator.restUrl,
    // The gateway is its own process (as in docker-compose.yml): webhooks reach it while a worker is down.
    WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${gatewayPort}`,
    RESULT_STORE_DIR: resultDir,
    WORKER_SHUTDOWN_GRACE_MS: '500',
  };
  const workers: ManagedProcess[] = [];
  const endpointIds: string[] = [];
  return {
    emulator,
    control: emulator.control,
    client,
    taskQueue,
    gateway,
    startWorker() {
      const worker = spawnEntry(builtEntry('worker/main.js'), 'worker running', workerVars);
      workers.push(worker);
      return worker;
    },
    resultDir,
    endpoint(fields = {}) {
      const { id } = emulator.control.createEndpoint(apiKey, {
        name: `${options.name}-${endpointIds.length + 1}`,
        templateId: 'scripted',
        workersMax: 1,
        ...fields,
      });
      endpointIds.push(id);
      return id;
    },
    submissions: () => endpointIds.reduce((sum, id) => sum + emulator.control.submissions(id), 0),
    runningAtService: () => emulator.control.jobs().filter((job) => !FINAL_STATUSES.has(job.status)).length,
    async close() {
      try {
        await Promise.all(workers.map((worker) => worker.stop()));
        await gateway.stop();
      } finally {
        await connection.close();
        await emulator.close();
        rmSync(resultDir, { recursive: true, force: true });
      }
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Outages

export interface Outage {
  /** Jobs started and not settled (the driver's count) when the outage began. */
  inFlight: number;
  /** Jobs queued or running at the service when it began: they all finished during it. */
  runningAtService: number;
  downMs: number;
}

/**
 * An outage mid-run, placed and ended by events: it begins once the service has acted on
 * `afterSubmissions` submissions and has jobs running, and lasts until every job the service has
 * is finished, so their results arrive while nothing can record them (the gateway cannot signal,
 * polls cannot report).
 */
export async function outage(
  stack: Stack,
  run: Pick<JobRun, 'started' | 'settled'>,
  afterSubmissions: number,
  cause: { begin(): Promise<void>; end(): Promise<void> },
): Promise<Outage> {
  await until(
    `${afterSubmissions} submissions and jobs running at the service`,
    () => stack.submissions() >= afterSubmissions && stack.runningAtService() > 0,
  );
  const inFlight = run.started() - run.settled();
  const runningAtService = stack.runningAtService();
  const began = Date.now();
  await cause.begin();
  try {
    await until('every job at the service finished during the outage', () => stack.runningAtService() === 0);
  } finally {
    await cause.end();
  }
  return { inFlight, runningAtService, downMs: Date.now() - began };
}

// ------------------------------------------------------------------------------------------------
// Jobs

export interface JobSpec {
  input: JobWorkflowInput;
  /** The output a correct run returns. */
  expected: unknown;
}

export interface Outcome {
  index: number;
  workflowId: string;
  endpointId: string;
  expected: unknown;
  result?: JobResult;
  failure?: JobFailure;
  /** Neither a result nor a typed failure before the deadline. */
  error?: string;
}

export interface JobRun {
  /** Jobs whose workflow start was asked for so far (the driver's side). */
  started(): number;
  /** Jobs with an outcome so far. */
  settled(): number;
  /** Resolves once `count` jobs have an outcome. */
  whenSettled(count: number, timeoutMs?: number): Promise<void>;
  done: Promise<Outcome[]>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once `reached()` holds: the event a case waits for (a count of the emulator's, which
 * lives in this process). It looks every 20 ms; nothing is assumed about when the event comes,
 * and its absence fails the case after `timeoutMs`.
 */
export async function until(what: string, reached: () => boolean, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!reached()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms: ${what}`);
    await pause(20);
  }
}

/**
 * Calls `attempt` until it gives an answer: while the server (or its database) is down, the client
 * gets connection errors, which a caller of the library would retry the same way. A workflow's own
 * failure is an answer.
 */
export async function untilAnswered<T>(attempt: () => Promise<T>, deadline: number): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof WorkflowFailedError || Date.now() > deadline) throw error;
      await pause(500);
    }
  }
}

/**
 * Starts `count` jobs, at most `inFlight` at a time, each on an endpoint of its own, and collects
 * every outcome. Starts are idempotent (the workflow id is fixed before the first try), so a start
 * retried across a server restart is one job.
 */
export function runJobs(
  stack: Stack,
  options: {
    name: string;
    count: number;
    inFlight?: number;
    spec: (index: number, endpointId: string) => JobSpec;
    timeoutMs: number;
  },
): JobRun {
  const deadline = Date.now() + options.timeoutMs;
  const outcomes: Outcome[] = [];
  let started = 0;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const settle = (outcome: Outcome) => {
    outcomes.push(outcome);
    for (const waiter of waiters.filter((w) => outcomes.length >= w.count)) waiter.resolve();
  };

  const one = async (index: number): Promise<void> => {
    started += 1;
    const endpointId = stack.endpoint();
    const { input, expected } = options.spec(index, endpointId);
    const workflowId = `${options.name}-${index}-${randomUUID()}`;
    const outcome: Outcome = { index, workflowId, endpointId, expected };
    try {
      const handle = await untilAnswered(
        () => startJob(stack.client, input, { workflowId, taskQueue: stack.taskQueue }),
        deadline,
      );
      outcome.result = await untilAnswered(() => awaitJob(stack.client, handle), deadline);
    } catch (error) {
      const failure = error instanceof WorkflowFailedError ? jobFailureOf(error) : undefined;
      if (failure) outcome.failure = failure;
      else outcome.error = error instanceof Error ? error.message : String(error);
    }
    settle(outcome);
  };

  const done = (async () => {
    let next = 0;
    const lane = async () => {
      while (next < options.count) await one(next++);
    };
    await Promise.all(Array.from({ length: Math.min(options.inFlight ?? IN_FLIGHT, options.count) }, lane));
    return outcomes.sort((a, b) => a.index - b.index);
  })();

  return {
    started: () => started,
    settled: () => outcomes.length,
    whenSettled(count, timeoutMs = options.timeoutMs) {
      if (outcomes.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${outcomes.length} of ${count} jobs settled within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    done,
  };
}

/** The scripted handler's input for job `index`: a short run whose output names the job. */
export function scriptedJob(
  index: number,
  endpointId: string,
  options: {
    sleepMs: number;
    /** Fail the first run (the workflow then calls /retry). */
    failOnce?: boolean;
    polling: { initialIntervalMs: number; maxIntervalMs: number; backoffCoefficient: number };
    /** How long an uncertain submit waits for its orphan's webhook (which the gateway turns into a signal). */
    uncertainSubmitWaitMs: number;
    /**
     * 'resubmit' after that wait: a job whose orphan did not report itself within a wait much
     * longer than its run and the webhook's retries was never created. 'fail' is the default.
     */
    onUncertainSubmit?: 'fail' | 'resubmit';
    /**
     * A submit whose answer never came (a worker killed mid-call) is uncertain after this long;
     * the library's default (2 minutes) when absent. Short only where a kill makes it matter: on
     * a loaded machine a live worker's submit can take seconds.
     */
    submitTimeoutMs?: number;
    /** Fresh submissions allowed in total; the library's default (3) when absent. */
    maxSubmissions?: number;
    /**
     * false: no submit lease. The emulator counts a lease in service time while the workflow's
     * timers run in real time, so at a time scale above 1 a 60 s lease lasts 6 s (at x10) and
     * lapses before its extension; the lease is tested at time scale 1 (test/integration/*-lease).
     */
    submitLease?: false | string;
  },
): JobSpec {
  const expected = { job: index, tag: `out-${index}` };
  return {
    expected,
    input: {
      endpointId,
      request: {
        input: { sleepMs: options.sleepMs, output: expected, ...(options.failOnce ? { failTimes: 1 } : {}) },
      },
      ...(options.failOnce ? { retry: { maxRetries: 2, initialInterval: 200 } } : {}),
      polling: options.polling,
      ...(options.submitTimeoutMs ? { submitTimeout: options.submitTimeoutMs } : {}),
      ...(options.maxSubmissions ? { maxSubmissions: options.maxSubmissions } : {}),
      uncertainSubmitWait: options.uncertainSubmitWaitMs,
      ...(options.onUncertainSubmit ? { onUncertainSubmit: options.onUncertainSubmit } : {}),
      ...(options.submitLease === undefined ? {} : { submitLease: options.submitLease }),
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Figures

export interface Tally {
  jobs: number;
  /** The right output, from the one job of its request that ran on the service. */
  completed: number;
  /** A result with the wrong output or more than one job behind it. */
  wrong: number;
  /** Typed failures by type. */
  failures: Record<string, number>;
  /** Neither result nor typed failure within the deadline. */
  noOutcome: number;
  /** Requests of which two or more jobs started running on the service. */
  ranTwice: number;
  /**
   * Requests the service acted on more than once whose extra jobs never ran: an uncertain submit
   * or a lapsed lease, sent again after the service had deleted the first job at its lease.
   */
  sentAgain: number;
  /** Jobs not completed and not ending with one of the accepted failure types. */
  lost: number;
  /** Completed jobs that went through an uncertain submit (adopted from a webhook, or sent again). */
  recoveredUncertain: number;
}

/** The jobs of one request (each request has its own endpoint) that started running on the service. */
function ranJobs(stack: Stack, endpointId: string): string[] {
  return stack.control
    .jobs(endpointId, { removed: true })
    .filter((job) => job.startedAt !== undefined)
    .map((job) => job.id);
}

export function tally(stack: Stack, outcomes: Outcome[], accepted: string[] = []): Tally {
  const failures: Record<string, number> = {};
  let completed = 0;
  let wrong = 0;
  let noOutcome = 0;
  let ranTwice = 0;
  let sentAgain = 0;
  let acceptedFailures = 0;
  let recoveredUncertain = 0;
  for (const outcome of outcomes) {
    const ran = ranJobs(stack, outcome.endpointId);
    if (ran.length > 1) ranTwice += 1;
    else if (stack.control.submissions(outcome.endpointId) > 1) sentAgain += 1;
    if (outcome.result) {
      const right =
        isDeepStrictEqual(outcome.result.output, outcome.expected) &&
        ran.length === 1 &&
        ran[0] === outcome.result.jobId;
      if (right) completed += 1;
      else wrong += 1;
      if (right && outcome.result.uncertainSubmits > 0) recoveredUncertain += 1;
    } else if (outcome.failure) {
      failures[outcome.failure.type] = (failures[outcome.failure.type] ?? 0) + 1;
      if (accepted.includes(outcome.failure.type)) acceptedFailures += 1;
    } else {
      noOutcome += 1;
    }
  }
  return {
    jobs: outcomes.length,
    completed,
    wrong,
    failures,
    noOutcome,
    ranTwice,
    sentAgain,
    lost: outcomes.length - completed - acceptedFailures,
    recoveredUncertain,
  };
}

/** The one-line figure of a case, printed for the log and the README's table. */
export function report(name: string, figures: Tally, extra: string, startedAt: number): string {
  const failures = Object.entries(figures.failures)
    .map(([type, count]) => `${count} ${type}`)
    .join(', ');
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(0);
  const line =
    `RELIABILITY ${name}: ${figures.jobs} jobs, ${figures.lost} lost, ${figures.ranTwice} run twice, ` +
    `${seconds} s (${figures.completed} completed with the right output from the one job that ran` +
    (figures.sentAgain
      ? `; ${figures.sentAgain} sent again after a lease, the first job deleted unrun`
      : '') +
    (failures ? `; failures: ${failures}` : '') +
    (figures.recoveredUncertain
      ? `; ${figures.recoveredUncertain} completed after an uncertain submit`
      : '') +
    (figures.wrong ? `; ${figures.wrong} wrong results` : '') +
    (figures.noOutcome ? `; ${figures.noOutcome} without outcome` : '') +
    (extra ? `; ${extra}` : '') +
    ')';
  console.log(line);
  return line;
}

/** The outcomes that went wrong (the worst kinds first), for an assertion's message. */
export function examples(outcomes: Outcome[], stack: Stack, accepted: string[] = []): string {
  const rank = (o: Outcome): number => {
    const ran = ranJobs(stack, o.endpointId);
    if (ran.length > 1) return 0;
    if (o.result) return isDeepStrictEqual(o.result.output, o.expected) && ran[0] === o.result.jobId ? 9 : 1;
    if (o.error) return 2;
    return o.failure && accepted.includes(o.failure.type) ? 4 : 3;
  };
  return outcomes
    .filter((o) => rank(o) < 9)
    .sort((a, b) => rank(a) - rank(b))
    .slice(0, 5)
    .map((o) =>
      JSON.stringify({
        workflowId: o.workflowId,
        submissions: stack.control.submissions(o.endpointId),
        // Every job the service had for this request: whether it ran, how it ended, why it went.
        service: stack.control.jobs(o.endpointId, { removed: true }).map((job) => ({
          id: job.id,
          status: job.status,
          ran: job.startedAt !== undefined,
          removed: job.removedReason,
          ttl: job.policy.ttl,
        })),
        failure: o.failure && { type: o.failure.type, message: o.failure.message.slice(0, 400) },
        error: o.error,
        output: o.result?.output,
        jobIds: o.result?.jobIds,
        counts: o.result && {
          uncertainSubmits: o.result.uncertainSubmits,
          uncertainAdopted: o.result.uncertainAdopted,
          resubmittedAfterLease: o.result.resubmittedAfterLease,
          leaseLapses: o.result.leaseLapses,
        },
      }),
    )
    .join('\n');
}

// ------------------------------------------------------------------------------------------------
// Batches

/**
 * Seeded dice (mulberry32) for the emulator that also count what they decide. They assume every
 * faultable request meets `rulesPerRequest` matching rules of probability `perRule` each, matched
 * synchronously in turn (emulator/faults.ts): a request is a run of rolls ending at the first pass
 * (that rule's fault) or after one failed roll per rule (no fault). Rules of another operation or
 * endpoint are skipped without a roll.
 */
export function countingDice(seed: number, rulesPerRequest: number, perRule: number) {
  let state = seed >>> 0;
  const counts = { requests: 0, faulted: 0, byRule: Array.from({ length: rulesPerRequest }, () => 0) };
  let position = 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random = () => {
    const value = next();
    if (value < perRule) {
      counts.requests += 1;
      counts.faulted += 1;
      counts.byRule[position] = (counts.byRule[position] ?? 0) + 1;
      position = 0;
    } else if (++position === rulesPerRequest) {
      counts.requests += 1;
      position = 0;
    }
    return value;
  };
  return { random, counts };
}

/** A batch item's scripted input: its output names the item, so the service's jobs say whose they are. */
export const batchItemOutput = (index: number) => ({ item: index, tag: `out-${index}` });

/**
 * The item a service job belongs to: its webhook URL names it (`&item=`, activities/batch.ts), and
 * the emulator keeps that URL for the jobs it deleted, whose input it drops; else its input's output.
 */
const itemOfJob = (job: JobState): number | undefined => {
  const fromUrl = job.webhook ? new URL(job.webhook).searchParams.get('item') : null;
  if (fromUrl !== null && /^\d+$/.test(fromUrl)) return Number(fromUrl);
  const item = (job.input?.output as { item?: unknown } | undefined)?.item;
  return typeof item === 'number' ? item : undefined;
};

export interface BatchTally {
  items: number;
  /** A COMPLETED line with the item's own output, from the one job of the item that ran. */
  completed: number;
  /** Lines by any other status (UNCERTAIN, FAILED, EXPIRED...). */
  statuses: Record<string, number>;
  /** A COMPLETED line with the wrong output, or not from the one job of its item that ran. */
  wrong: number;
  /** Items without a line in the results file. */
  missing: number;
  /** Items neither completed right nor ending with one of the accepted statuses. */
  lost: number;
  /** Items of which two or more jobs started running on the service. */
  ranTwice: number;
  /**
   * Of those, items whose other runs all COMPLETED and were then deleted by the service at their
   * unextended submit lease (ttl counted from submission): the batch took that 404 for a lapse,
   * the job deleted unrun, and sent the item again (a bug of workflows/batch.ts, issue 11).
   */
  ranTwiceAfterLeaseDeletion: number;
  /**
   * Items the service acted on more than once whose extra jobs never ran: sent again after the
   * first was deleted unrun at its lease (or an orphan of an uncertain submit that never ran).
   */
  sentAgain: number;
  /** Items the service never acted on. */
  neverReached: number;
  /** UNCERTAIN items of which the service has one job (an orphan that was never adopted). */
  uncertainWithOrphan: number;
  /** /run requests the service acted on for the batch's endpoint (the emulator's count). */
  serviceSubmissions: number;
  /** The service's jobs on the endpoint, deleted ones too: serviceSubmissions when none was forgotten. */
  serviceJobs: number;
  /** Of those, jobs that name no item (a blind spot of the other counts if not 0). */
  unattributed: number;
  /** The worst items (ran twice, wrong, lost), for an assertion's message. */
  examples: string;
}

/**
 * A finished batch's outcome per item, from its results file (readBatchResults) and the service's
 * jobs on its endpoint, with those deleted (each job's input names its item: batchItemOutput).
 */
export async function tallyBatch(
  stack: Stack,
  endpointId: string,
  summary: BatchSummary,
  accepted: string[] = [],
): Promise<BatchTally> {
  const jobsOf = new Map<number, JobState[]>();
  let unattributed = 0;
  const serviceJobs = stack.control.jobs(endpointId, { removed: true });
  for (const job of serviceJobs) {
    const item = itemOfJob(job);
    if (item === undefined) {
      unattributed += 1;
      continue;
    }
    const list = jobsOf.get(item) ?? [];
    list.push(job);
    jobsOf.set(item, list);
  }
  const lines = new Map<number, BatchResultLine>();
  for await (const line of readBatchResults(summary, { store: stack.resultDir })) lines.set(line.index, line);

  const statuses: Record<string, number> = {};
  let completed = 0;
  let wrong = 0;
  let missing = 0;
  let acceptedCount = 0;
  let ranTwice = 0;
  let ranTwiceAfterLeaseDeletion = 0;
  let sentAgain = 0;
  let neverReached = 0;
  let uncertainWithOrphan = 0;
  const bad: Array<{ rank: number; item: number; why: string }> = [];
  for (let item = 0; item < summary.total; item++) {
    const jobs = jobsOf.get(item) ?? [];
    const ran = jobs.filter((job) => job.startedAt !== undefined);
    const line = lines.get(item);
    if (jobs.length === 0) neverReached += 1;
    if (ran.length > 1) {
      ranTwice += 1;
      const others = ran.filter((job) => job.id !== line?.jobId);
      if (others.every((job) => job.status === 'COMPLETED' && job.removedReason === 'ttl'))
        ranTwiceAfterLeaseDeletion += 1;
      bad.push({ rank: 0, item, why: 'ran twice' });
    } else if (jobs.length > 1) sentAgain += 1;
    if (!line) {
      missing += 1;
      bad.push({ rank: 2, item, why: 'no line' });
    } else if (line.status === 'COMPLETED') {
      const right =
        isDeepStrictEqual(line.output, batchItemOutput(item)) &&
        ran.length === 1 &&
        ran[0]?.id === line.jobId;
      if (right) completed += 1;
      else {
        wrong += 1;
        bad.push({ rank: 1, item, why: 'wrong result' });
      }
    } else {
      statuses[line.status] = (statuses[line.status] ?? 0) + 1;
      if (accepted.includes(line.status)) acceptedCount += 1;
      else bad.push({ rank: 3, item, why: `ended ${line.status}` });
      if (line.status === 'UNCERTAIN' && jobs.length === 1) uncertainWithOrphan += 1;
    }
  }
  const examples = bad
    .sort((a, b) => a.rank - b.rank)
    .slice(0, 5)
    .map(({ item, why }) =>
      JSON.stringify({
        item,
        why,
        line: lines.get(item),
        service: (jobsOf.get(item) ?? []).map((job) => ({
          id: job.id,
          status: job.status,
          ran: job.startedAt !== undefined,
          removed: job.removedReason,
          ttl: job.policy.ttl,
        })),
      }),
    )
    .join('\n');
  return {
    items: summary.total,
    completed,
    statuses,
    wrong,
    missing,
    lost: summary.total - completed - acceptedCount,
    ranTwice,
    ranTwiceAfterLeaseDeletion,
    sentAgain,
    neverReached,
    uncertainWithOrphan,
    serviceSubmissions: stack.control.submissions(endpointId),
    serviceJobs: serviceJobs.length,
    unattributed,
    examples,
  };
}

/** The one-line figure of a batch case, printed for the log and the README's table. */
export function reportBatch(name: string, figures: BatchTally, extra: string, startedAt: number): string {
  const statuses = Object.entries(figures.statuses)
    .map(([status, count]) => `${count} ${status}`)
    .join(', ');
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(0);
  const line =
    `RELIABILITY ${name}: ${figures.items.toLocaleString('en-US')} items, ${figures.lost} lost, ` +
    `${figures.ranTwice} run twice, ${seconds} s (` +
    (figures.ranTwiceAfterLeaseDeletion
      ? `the ${figures.ranTwiceAfterLeaseDeletion} run twice: completed, deleted at their unextended lease, taken for a lapse and sent again; `
      : '') +
    `${figures.completed} completed with the right output ` +
    `from the one job that ran; ${figures.serviceSubmissions} /run acted on` +
    (figures.sentAgain ? `, ${figures.sentAgain} items sent again after a job deleted unrun` : '') +
    (statuses ? `; ${statuses}` : '') +
    (figures.uncertainWithOrphan ? ` (${figures.uncertainWithOrphan} UNCERTAIN with one orphan job)` : '') +
    (figures.wrong ? `; ${figures.wrong} wrong results` : '') +
    (figures.missing ? `; ${figures.missing} without a line` : '; one result line per item') +
    (figures.unattributed ? `; ${figures.unattributed} service jobs naming no item` : '') +
    (extra ? `; ${extra}` : '') +
    ')';
  console.log(line);
  return line;
}
