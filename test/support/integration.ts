/**
 * Shared plumbing of the integration suites (test/integration): the real worker entry point as a
 * child process, waiting on outside state, and the job stack: the emulator over HTTP, the shared
 * dev server, and the real worker (runWorker, with the webhook gateway beside it when asked), all
 * configured through the environment as a deployment would be. Nothing is mocked; a test arranges
 * faults through the emulator's control handle only.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { inject } from 'vitest';
import type { AutomationDefinition } from '../../activities/automation';
import type { PipelineTransform } from '../../activities/pipeline';
import { createServiceClient, type ServiceClient } from '../../api';
import { getJobSnapshot, type JobHandle, type LiveJobSnapshot, startJob } from '../../client/jobs';
import type { JobWorkflowInput } from '../../contracts/job-input';
import { DEFAULT_LEASE_MS } from '../../contracts/submit-lease';
import { type Emulator, type EndpointFields, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { describeCheck, pollUntil } from './poll';
import { runWorkerUntilReady } from './run-worker-until-ready';
import { devServerEnv, uniqueTaskQueue } from './temporal';
import { LIBRARY_WORKFLOWS, workflowBundleFile } from './workflow-bundles';

export { historyText, scheduledActivities } from './history';
export { inBatches } from './in-batches';
export { runWorkerUntilReady } from './run-worker-until-ready';
export { jobsInProgress } from './service-jobs';
export { describeWorkflowWait } from './workflow-waits';

const repoRoot = path.resolve(__dirname, '../..');

/**
 * Polls outside state until `check` holds, for what no event announces (prefer a workflow's result,
 * a query or a signal where there is one). On timeout the error names the condition (`what`, or the
 * check's own source) and carries the check's last error or value (test/support/poll.ts).
 */
export function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
  what = describeCheck(check),
): Promise<T> {
  return pollUntil(what, check, { timeoutMs, intervalMs: 50 }) as Promise<T>;
}

/**
 * The SDK logs every failed workflow and every late activity completion ("Activity not found on
 * completion") at WARN; these suites cause both on purpose. Errors only, once per test file (one
 * process each), before anything creates the runtime.
 */
export function quietTemporalRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
    });
  } catch {
    // Already installed in this process: its settings stay.
  }
}

/** The emulator's job-operation, GraphQL and REST addresses as the worker's SERVERLESS_* variables. */
export function serviceEnv(emulator: Emulator, apiKey: string): Record<string, string> {
  return {
    SERVERLESS_API_KEY: apiKey,
    SERVERLESS_API_URL: emulator.apiUrl,
    SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
    SERVERLESS_REST_URL: emulator.restUrl,
  };
}

/**
 * The real worker entry point (`npm run worker`, worker/main.ts) as a child process, configured
 * through the environment like a deployment (`vars` on top of PATH, HOME and TEMPORAL_ADDRESS).
 * `kill()` sends SIGKILL: a crash, with no graceful shutdown, in-flight activities and workflow
 * tasks abandoned.
 */
export function spawnWorker(vars: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      ...vars,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const running = eventually(() => output.includes('worker running'), 180_000).catch((error: Error) => {
    throw new Error(`${error.message}; worker output:\n${output}`);
  });
  return {
    child,
    /** Resolves once the worker polls its task queue (and its gateway, if any, listens). */
    running,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    output: () => output,
    /** Where its gateway listens, from its 'worker running' line (once `running` has resolved). */
    gatewayUrl(): string | undefined {
      for (const line of output.split('\n')) {
        try {
          const parsed = JSON.parse(line) as { msg?: string; gateway?: string };
          if (parsed.msg === 'worker running') return parsed.gateway;
        } catch {
          // not a log line
        }
      }
      return undefined;
    },
  };
}

// ------------------------------------------------------------------------------------------------
// The job stack

export interface JobStackOptions {
  /** Prefix of the task queue and workflow ids, for reading the dev server's UI. */
  name: string;
  /** Service time runs this many times faster than real time; Temporal's timers stay real. */
  timeScale: number;
  /** The webhook gateway beside the worker, and the worker handing out its URLs. */
  webhooks?: boolean;
  /** Run the in-process worker (default); false for a file that runs its workers as processes. */
  worker?: boolean;
  /** The automations the in-process worker registers. */
  automations?: AutomationDefinition[];
  /** The pipeline transforms the in-process worker registers. */
  transforms?: PipelineTransform[];
  /** A Temporal server of the file's own (host:port) instead of the shared dev server. */
  temporalAddress?: string;
  /** More worker variables (e.g. RESULT_STORE_URL), over the stack's own. */
  workerEnv?: Record<string, string>;
}

export interface JobStack {
  emulator: Emulator;
  control: Emulator['control'];
  /** The real API client, for "someone else" acting on a job behind the workflow's back. */
  service: ServiceClient;
  /** The Temporal client of the shared dev server. */
  client: Client;
  taskQueue: string;
  /** The worker's key (the emulator's one account); it must never reach Temporal. */
  apiKey: string;
  /** With webhooks: the gateway's signing secret and where it listens. */
  webhookSecret?: string;
  gatewayUrl?: string;
  /** The environment the in-process worker was configured from (child workers reuse it with a queue of their own). */
  workerEnv: Record<string, string>;
  /** A fresh endpoint on the scripted handler (so each test counts its own submissions and jobs). */
  endpoint(fields?: Partial<EndpointFields>): string;
  /** Starts the job workflow through the client facade, on this stack's task queue (or another). */
  start(input: JobWorkflowInput, options?: { label?: string; taskQueue?: string }): Promise<JobHandle>;
  /**
   * The workflow's snapshot once `check` holds for it (queries are retried until then). The timeout
   * (2 minutes by default) only stops a hung test: a query can wait that long on a loaded machine.
   */
  snapshotWhen(
    workflowId: string,
    check: (snapshot: LiveJobSnapshot) => boolean,
    timeoutMs?: number,
  ): Promise<LiveJobSnapshot>;
  close(): Promise<void>;
}

/** An hour of service time: a job that sleeps this long ends only when a test moves the clock. */
export const HOUR_MS = 3_600_000;
const WEEK_MS = 7 * 24 * HOUR_MS;

/**
 * A job that sleeps an hour of service time (its policy allows a week) and answers `{ index }`.
 *
 * It goes out under a one-minute submit lease, with or without webhooks (with them, that is the
 * worker's default lease). On a loaded 2-core machine the dev server now and then records a submit
 * activity as started and never delivers it (temporalio/temporal#11733): the submit times out
 * unsent, which the workflow cannot tell from a worker that died mid-request. The lease makes such
 * a submit resolve itself (the job is sent again once no orphan can be live) where polling only
 * would otherwise fail the workflow with SubmitUncertain. The tests count those submits
 * (`uncertainSubmits`) and assert one job at the service per index.
 */
export function hourLongJob(
  endpointId: string,
  index: number,
  polling: JobWorkflowInput['polling'],
): JobWorkflowInput {
  return {
    endpointId,
    request: {
      input: { sleepMs: HOUR_MS, output: { index } },
      policy: { executionTimeout: WEEK_MS, ttl: WEEK_MS },
    },
    polling,
    submitLease: '1 minute',
  };
}

/**
 * The workflow waits on a job that runs: as the workflow recorded it, or (a job's start is recorded
 * only with `recordStart`) as its wait last saw it, in the live snapshot.
 */
export function seenRunning(snapshot: LiveJobSnapshot): boolean {
  return snapshot.phase === 'waiting' && (snapshot.live?.status ?? snapshot.status) === 'IN_PROGRESS';
}

/** Status polls fast enough that a test never waits on the schedule made for hour-long jobs. */
export const FAST_POLLING = { initialInterval: 100, maxInterval: 250, backoffCoefficient: 1.5 };

/**
 * One emulator, one dev-server connection and one real worker (runWorker, exactly as
 * `npm run worker` runs it, from the same environment variables) for a test file.
 */
export async function startJobStack(options: JobStackOptions): Promise<JobStack> {
  quietTemporalRuntime();
  const apiKey = `sk-it-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: options.timeScale, accounts: [{ apiKey }] });
  const service = createServiceClient({
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  });
  const env: TestWorkflowEnvironment = options.temporalAddress
    ? await TestWorkflowEnvironment.createFromExistingServer({ address: options.temporalAddress })
    : await devServerEnv();
  const taskQueue = uniqueTaskQueue(options.name);
  const resultDir = mkdtempSync(path.join(tmpdir(), `${options.name}-`));

  let webhookSecret: string | undefined;
  let gatewayUrl: string | undefined;
  const workerEnv: Record<string, string> = {
    ...serviceEnv(emulator, apiKey),
    TEMPORAL_ADDRESS: options.temporalAddress ?? inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    RESULT_STORE_DIR: resultDir,
    // Pollers of jobs that never change (a hung job whose workflow ended) are cut short at the end.
    WORKER_SHUTDOWN_GRACE_MS: '500',
    ...options.workerEnv,
  };
  if (options.webhooks) {
    // The gateway takes any free port (0) and the worker hands out URLs on the port it got.
    webhookSecret = randomBytes(32).toString('base64url');
    workerEnv.WEBHOOK_SECRET = webhookSecret;
    workerEnv.WEBHOOK_PORT = '0';
  }

  const controller = new AbortController();
  let running: Promise<void> = Promise.resolve();
  if (options.worker !== false) {
    const config = loadWorkerConfig(workerEnv, repoRoot);
    const started = await runWorkerUntilReady(config, {
      signal: controller.signal,
      // The library's workflows bundled once for the whole run, as a built worker loads its bundle.
      workflowBundlePath: await workflowBundleFile(LIBRARY_WORKFLOWS),
      logger: createLogger({ level: 'error', secrets: [apiKey, ...(webhookSecret ? [webhookSecret] : [])] }),
      publicUrlFromGateway: options.webhooks === true,
      ...(options.automations ? { automations: options.automations } : {}),
      ...(options.transforms ? { transforms: options.transforms } : {}),
    });
    running = started.running;
    gatewayUrl = started.info.gatewayUrl;
  }

  let jobs = 0;
  return {
    emulator,
    control: emulator.control,
    service,
    client: env.client,
    taskQueue,
    apiKey,
    ...(webhookSecret && gatewayUrl ? { webhookSecret, gatewayUrl } : {}),
    workerEnv,
    endpoint(fields = {}) {
      return emulator.control.createEndpoint(apiKey, {
        name: `${options.name}-${randomUUID().slice(0, 8)}`,
        templateId: 'scripted',
        ...fields,
      }).id;
    },
    start(input, { label = 'job', taskQueue: queue = taskQueue } = {}) {
      jobs += 1;
      // The service counts a lease in its own time, the workflow in real time: at time scale 100 the
      // default 60 s lease ('auto': with webhooks) would end 0.6 real seconds after the submit, and a loaded machine that
      // extends it later sees the job deleted and sent again. A lease as long in real time as in
      // production keeps the margin production has (a test of the lease itself says its own).
      const lease =
        options.webhooks === true &&
        options.timeScale > 1 &&
        input.submitLease === undefined &&
        input.mode !== 'runsync'
          ? { submitLease: DEFAULT_LEASE_MS * options.timeScale }
          : {};
      return startJob(
        env.client,
        { ...input, ...lease },
        {
          workflowId: `${options.name}-${label}-${jobs}-${randomUUID()}`,
          taskQueue: queue,
        },
      );
    },
    async snapshotWhen(workflowId, check, timeoutMs = 120_000) {
      return eventually(async () => {
        // A query before the first workflow task has run is refused; try again.
        const snapshot = await getJobSnapshot(env.client, { workflowId, live: true }).catch(() => undefined);
        return snapshot && check(snapshot) ? snapshot : undefined;
      }, timeoutMs);
    },
    async close() {
      controller.abort();
      try {
        await running;
      } finally {
        await env.teardown();
        await service.close();
        await emulator.close();
        rmSync(resultDir, { recursive: true, force: true });
      }
    },
  };
}
