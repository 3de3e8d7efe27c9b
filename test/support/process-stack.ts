/**
 * A deployment-shaped stack for the suites that kill things: the emulator over HTTP, the webhook
 * gateway and the workers as real processes (worker/gateway-main and worker/main, configured
 * through the environment, as docker-compose.yml and the Dockerfile deploy them), on a Temporal
 * server the caller names, and the waits those suites synchronise on (the emulator's counts).
 *
 * Shared by the reliability suite (test/reliability/support.ts: the production-shaped server on
 * PostgreSQL, the built package) and the integration suite's kill and restart cases
 * (test/integration/batch-*: a dev server, the TypeScript sources through tsx).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { type Emulator, startEmulator } from '../../emulator';
import { freePorts } from '../../scripts/prod-temporal';

const repoRoot = path.resolve(__dirname, '../..');

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
 * The built package's entry points (the reliability suite's global setup builds it when missing or
 * stale). Built, a worker loads the prebuilt workflow bundle and runs in about a second; from the
 * sources it would bundle the workflows at every start (about 8 s here), which is not how a worker
 * is deployed.
 */
export function builtEntry(name: 'worker/main.js' | 'worker/gateway-main.js'): string {
  const entry = path.join(repoRoot, 'dist', name);
  if (!existsSync(entry) || !existsSync(path.join(repoRoot, 'dist/workflow-bundle.js'))) {
    throw new Error(`${entry} or dist/workflow-bundle.js is missing: run npm run build`);
  }
  return entry;
}

/**
 * How the entry points run: `built` from dist/ (as installed), `sources` from the TypeScript
 * sources through tsx (as `npm run worker` and `npm run gateway` do; the worker bundles the
 * workflows at start), which needs no build and always runs the code under test.
 */
export type EntryRunner = 'built' | 'sources';

function entryArgs(name: 'worker/main' | 'worker/gateway-main', runner: EntryRunner): string[] {
  return runner === 'built' ? [builtEntry(`${name}.js`)] : ['--import', 'tsx', `${name}.ts`];
}

/** A node process (`args` after node itself) with PATH, HOME and `vars` as its whole environment. */
export function spawnEntry(args: string[], readyLine: string, vars: Record<string, string>): ManagedProcess {
  const entry = args.at(-1) ?? '';
  const child = spawn(process.execPath, args, {
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

export interface ProcessStackOptions extends StackOptions {
  /** The Temporal server the client, the gateway and the workers connect to. */
  temporal: { address: string; namespace: string };
  entries: EntryRunner;
  /** Prefix of the workers' RESULT_STORE_DIR (a temporary folder). */
  dirPrefix: string;
  /**
   * More variables of every worker (e.g. RESULT_STORE_URL and the AWS credentials). With
   * `ownDirs`, each worker also gets a RESULT_STORE_DIR of its own: workers on several machines,
   * sharing no directory.
   */
  workerVars?: Record<string, string>;
  ownDirs?: boolean;
  /** Where readers find the batches' results (`store` of readBatchResults); default: resultDir. */
  store?: string;
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
  /** Where readers find the batches' results: the workers' store (their directory by default). */
  store: string;
  /** /run requests the service acted on, over all of this stack's endpoints (the emulator's count). */
  submissions(): number;
  /** Jobs the service has and has not finished: queued or running there. */
  runningAtService(): number;
  close(): Promise<void>;
}

export async function startProcessStack(options: ProcessStackOptions): Promise<Stack> {
  const { temporal } = options;
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
  const resultDir = mkdtempSync(path.join(tmpdir(), `${options.dirPrefix}-${options.name}-`));
  const secret = randomBytes(32).toString('base64url');
  const [gatewayPort] = await freePorts(1);
  const common = {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    WEBHOOK_SECRET: secret,
    LOG_LEVEL: 'info',
  };
  const gateway = spawnEntry(entryArgs('worker/gateway-main', options.entries), 'webhook gateway running', {
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
    ...options.workerVars,
  };
  const ownDirs: string[] = [];
  const workers: ManagedProcess[] = [];
  const endpointIds: string[] = [];
  return {
    emulator,
    control: emulator.control,
    client,
    taskQueue,
    gateway,
    startWorker() {
      const own = options.ownDirs
        ? mkdtempSync(path.join(tmpdir(), `${options.dirPrefix}-${options.name}-own-`))
        : undefined;
      if (own) ownDirs.push(own);
      const worker = spawnEntry(entryArgs('worker/main', options.entries), 'worker running', {
        ...workerVars,
        ...(own ? { RESULT_STORE_DIR: own } : {}),
      });
      workers.push(worker);
      return worker;
    },
    resultDir,
    store: options.store ?? resultDir,
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
        for (const dir of [resultDir, ...ownDirs]) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Waiting on events

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
  stack: Pick<Stack, 'submissions' | 'runningAtService'>,
  run: { started(): number; settled(): number },
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
