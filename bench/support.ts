/**
 * Plumbing shared by the benches that run the whole stack: the dev server, quiet SDK logs, a port
 * for the webhook gateway, a worker (in its own process or in the bench's) configured as
 * `npm run worker` is, and small helpers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import type { Emulator } from '../emulator';
import {
  provisionedProdTemporal,
  startProdTemporal,
  stopProdTemporal,
  TEMPORAL_SERVER_VERSION,
} from '../scripts/prod-temporal';
import { dynamicConfigFlags } from '../scripts/server-settings';
import { provisionedServers } from '../scripts/servers';
import { runWorkerUntilReady } from '../test/support/run-worker-until-ready';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import type { RunWorkerOptions, WorkerReadyInfo } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { searchAttributeKeys } from '../workflows/shared/search-attributes';
import { startWorkerProcess, type WorkerProcess } from './worker-process';

export { inBatches } from '../test/support/in-batches';

export const say = (line: string) => console.log(line);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const seconds = (ms: number, digits = 1) => `${(ms / 1000).toFixed(digits)} s`;
export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** A new endpoint on the scripted handler with `workers` workers, once all of them are idle (warm). */
export async function warmEndpoint(emulator: Emulator, apiKey: string, workers: number): Promise<string> {
  const { id } = emulator.control.createEndpoint(apiKey, {
    name: `bench-${randomUUID().slice(0, 8)}`,
    templateId: 'scripted',
    workersMin: workers,
    workersMax: workers,
  });
  while (emulator.control.health(id).workers.idle < workers) await sleep(200);
  return id;
}

/** A positive number given as `--name N`, or the fallback. */
export function numberArg(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** `median (min-max) ms` */
export function spreadMs(values: number[]): string {
  const round = (value: number) => value.toFixed(0);
  return `${round(median(values))} ms (${round(Math.min(...values))}-${round(Math.max(...values))})`;
}

/** Polls `check` until it holds; false after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
  return true;
}

/** Errors only from the SDK and core, before anything creates the runtime. */
export function quietRuntime(): void {
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
}

/**
 * The provisioned Temporal CLI dev server, with the library's search attributes and dynamic config
 * (scripts/server-settings.ts), and a bench's own on top.
 */
export async function startDevServer(
  dynamicConfig: Record<string, unknown> = {},
): Promise<TestWorkflowEnvironment> {
  const { temporalCli } = provisionedServers();
  return TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      ui: false,
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error', ...dynamicConfigFlags(dynamicConfig)],
    },
  });
}

/** The Temporal a bench runs on, and what to call it in its figures. */
export interface BenchTemporal {
  client: Client;
  address: string;
  name: string;
  teardown(): Promise<void>;
}

/**
 * `--server prod`: the production-shaped Temporal (the real server on PostgreSQL, with the
 * history shards of scripts/prod-temporal.ts, `npm run provision:prod-temporal`); else the CLI dev
 * server (SQLite, one history shard), whose task queues have `--task-queue-partitions N` read and
 * write partitions when given (the project's servers have one: scripts/server-settings.ts).
 */
export async function startBenchTemporal(): Promise<BenchTemporal> {
  const index = process.argv.indexOf('--server');
  const partitionsAt = process.argv.indexOf('--task-queue-partitions');
  const partitions = partitionsAt < 0 ? undefined : Number(process.argv[partitionsAt + 1]);
  if (partitions !== undefined && !(Number.isInteger(partitions) && partitions >= 1))
    throw new Error('--task-queue-partitions must be a whole number of 1 or more');
  if (index < 0 || process.argv[index + 1] !== 'prod') {
    const env = await startDevServer(
      partitions === undefined
        ? {}
        : {
            'matching.numTaskqueueReadPartitions': partitions,
            'matching.numTaskqueueWritePartitions': partitions,
          },
    );
    return {
      client: env.client,
      address: env.address,
      name: `the Temporal CLI dev server (SQLite, one history shard${partitions === undefined ? '' : `, ${partitions} task queue partition${partitions === 1 ? '' : 's'}`})`,
      teardown: () => env.teardown(),
    };
  }
  if (partitions !== undefined) throw new Error('--task-queue-partitions is for the dev server only');
  const instance = await startProdTemporal(provisionedProdTemporal());
  const connection = await Connection.connect({ address: instance.address });
  return {
    client: new Client({ connection, namespace: instance.namespace }),
    address: instance.address,
    name: `Temporal ${TEMPORAL_SERVER_VERSION} on PostgreSQL (scripts/prod-temporal.ts)`,
    teardown: async () => {
      await connection.close();
      await stopProdTemporal(instance);
    },
  };
}

/** Where a bench's worker finds Temporal, the emulator and its result store. */
export interface BenchWorkerTarget {
  address: string;
  taskQueue: string;
  emulator: Emulator;
  apiKey: string;
  resultStoreDir: string;
}

/** A bench worker's variables, as `npm run worker` reads them, for the target; with webhooks, the gateway's. */
function benchWorkerEnv(target: BenchWorkerTarget, webhooks: boolean): Record<string, string> {
  const { emulator } = target;
  return {
    TEMPORAL_ADDRESS: target.address,
    TEMPORAL_TASK_QUEUE: target.taskQueue,
    SERVERLESS_API_KEY: target.apiKey,
    SERVERLESS_API_URL: emulator.apiUrl,
    SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
    SERVERLESS_REST_URL: emulator.restUrl,
    ...(webhooks ? { WEBHOOK_PORT: '0', WEBHOOK_SECRET: randomBytes(32).toString('base64url') } : {}),
    RESULT_STORE_DIR: target.resultStoreDir,
  };
}

/**
 * One worker in its own process (bench/worker-child.ts), configured through the environment as
 * `npm run worker` is, with no WORKER_MAX_* setting (the SDK's default slots); with webhooks, the
 * gateway beside it and the worker handing out its URLs.
 */
export async function startBenchWorker(
  options: BenchWorkerTarget & {
    webhooks: boolean;
    /** WORKER_MAX_CACHED_WORKFLOWS; absent: the SDK's default. */
    maxCachedWorkflows?: number;
  },
): Promise<WorkerProcess> {
  return startWorkerProcess({
    ...benchWorkerEnv(options, options.webhooks),
    LOG_LEVEL: 'error',
    ...(options.maxCachedWorkflows === undefined
      ? {}
      : { WORKER_MAX_CACHED_WORKFLOWS: String(options.maxCachedWorkflows) }),
  });
}

/** A worker running in the bench's own process. */
export interface InProcessWorker {
  /** What it reported once ready (its gateway's URL, with webhooks). */
  info: WorkerReadyInfo;
  /** Stops it and waits until it has stopped. */
  stop(): Promise<void>;
}

/**
 * The library's worker (runWorker) in this process, configured as `npm run worker` is from the
 * target (and `env` over it), shut down within half a second, logging errors only with the API key
 * (and `secrets`) redacted; resolves once it polls its task queue. With webhooks, the gateway
 * beside it; `run` takes runWorker's own options (automations, publicUrlFromGateway).
 */
export async function startInProcessWorker(
  options: BenchWorkerTarget & {
    webhooks: boolean;
    env?: Record<string, string>;
    secrets?: string[];
    run?: Omit<RunWorkerOptions, 'signal' | 'logger' | 'onReady'>;
  },
): Promise<InProcessWorker> {
  const config = loadWorkerConfig(
    { ...benchWorkerEnv(options, options.webhooks), WORKER_SHUTDOWN_GRACE_MS: '500', ...options.env },
    process.cwd(),
  );
  const stopping = new AbortController();
  const { info, running } = await runWorkerUntilReady(config, {
    ...options.run,
    signal: stopping.signal,
    logger: createLogger({ level: 'error', secrets: [options.apiKey, ...(options.secrets ?? [])] }),
  });
  return {
    info,
    async stop() {
      stopping.abort();
      await running.catch(() => undefined);
    },
  };
}

/**
 * A workflow's history events of all its runs, counted by kind (and activities by type): where
 * the events per item go.
 */
/** A history event's type as a short name: `workflow_task_started`. */
export function eventKind(event: temporal.api.history.v1.IHistoryEvent): string {
  return String(temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? event.eventType)
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase();
}

export async function historyByKind(client: Client, workflowId: string): Promise<string> {
  const counts = new Map<string, number>();
  const add = (kind: string) => counts.set(kind, (counts.get(kind) ?? 0) + 1);
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
    for (const event of history.events ?? []) {
      const kind = eventKind(event);
      const activity = event.activityTaskScheduledEventAttributes?.activityType?.name;
      add(activity ? `${kind}:${activity}` : kind);
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
}
