/**
 * One worker process's life: the service client, the activities, the connection to Temporal, the
 * worker and (when asked) the webhook gateway beside it, then an orderly shutdown. `main.ts`, the
 * demo and the tests all run workers through here, so all three get the same wiring.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import {
  type AutomationActivityDeps,
  type AutomationDefinition,
  type BatchActivityDeps,
  createAutomationActivities,
  createBatchActivities,
  createBatchJobReports,
  createBulkActivities,
  createEndpointActivities,
  createJobActivities,
  createRouteActivities,
  createStackCheckActivities,
  createTaskLooks,
  type JobActivityDeps,
} from '../activities';
import { createCostEstimator } from '../activities/cost-estimator';
import type { PipelineTransform } from '../activities/pipeline';
import { createServiceClient, type ServiceClient } from '../api';
import { connectionOptions, describeConnection } from '../client/connection';
import { openStores } from '../stores/store-location';
import { createBulkRunActions } from './bulk-run-actions';
import { acceptedSecrets, secretValues, type WorkerConfig } from './config';
import { eventIngressOptions } from './event-sink';
import type { EventSource } from './event-sources';
import { startWebhookGateway } from './gateway';
import { startHealthServer, type WorkerHealthState } from './health';
import { createLogger, type Logger } from './logger';
import { createPrometheusMetrics, startMetricsServer } from './metrics';
import { consoleSpanProcessor, startTracing, type TracingOptions } from './tracing';
import { webhookUrlFactory } from './webhook-token';
import { workflowBundlerOptions } from './workflow-bundler-options';
import { workerSlotOptions } from './workflow-task-slots';

/**
 * What the activity factories need. The API key stays inside `client`, in this process; the
 * webhook secret inside `webhookUrlFor`. The rest tunes the job activities (result store, stream
 * sinks, size caps) for an embedding program such as the demo.
 */
export type ActivityDeps = JobActivityDeps &
  Pick<AutomationActivityDeps, 'automations' | 'temporalClient' | 'taskQueue'> &
  Pick<BatchActivityDeps, 'batchJobReports' | 'transforms'> & {
    client: ServiceClient;
    resultStoreDir: string;
  };

/** Extra settings for the job activities; the client and the webhook URLs come from the config. */
export type ActivityOptions = Omit<JobActivityDeps, 'client' | 'webhookUrlFor' | 'resultStoreDir'>;

/** Every activity the worker registers; a new factory is one line here. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createStackCheckActivities(),
    ...createJobActivities(deps),
    ...createBatchActivities(deps),
    ...createEndpointActivities(deps),
    ...createRouteActivities(deps),
    ...createAutomationActivities(deps),
    ...createBulkActivities({
      ...(deps.temporalClient
        ? { temporalClient: deps.temporalClient, bulkRunActions: createBulkRunActions(deps.temporalClient) }
        : {}),
    }),
  };
}

export interface WorkerReadyInfo {
  taskQueue: string;
  /** The task queues this process polls besides `taskQueue` (TEMPORAL_EXTRA_TASK_QUEUES). */
  extraTaskQueues: string[];
  namespace: string;
  /** Where the gateway listens, when it runs in this process. */
  gatewayUrl?: string;
  /** Where the health endpoint listens (`/livez`, `/readyz`), when configured. */
  healthUrl?: string;
  /** Where the library's Prometheus metrics are served (`/metrics`), when configured. */
  metricsUrl?: string;
  /** How the workflow code was loaded. */
  workflows: 'prebuilt bundle' | 'bundled at start';
}

/**
 * The workflow bundle `npm run build` writes beside the compiled code (dist/workflow-bundle.js):
 * compiled workers load it instead of bundling at start, as Temporal advises for production. Run
 * from the TypeScript sources (tsx, vitest) there is none, and the worker bundles at start.
 */
export function prebuiltWorkflowBundlePath(): string {
  return path.resolve(__dirname, '../workflow-bundle.js');
}

export interface RunWorkerOptions {
  /** Aborting it shuts everything down; runWorker then resolves. */
  signal?: AbortSignal;
  logger?: Logger;
  onReady?: (info: WorkerReadyInfo) => void;
  activityOptions?: ActivityOptions;
  /** The automations this worker runs (defineAutomation); events for any other name fail. */
  automations?: readonly AutomationDefinition[];
  /** The pipeline transforms this worker runs (definePipelineTransform), by the name a stage gives. */
  transforms?: readonly PipelineTransform[];
  /**
   * Event sources (defineEventSource) for the gateway beside this worker, besides those of
   * EVENT_SIGNING_SECRETS and EVENT_SOURCES: who may send events to which of `automations`.
   */
  eventSources?: readonly EventSource[];
  /**
   * Hand out webhook URLs on the address the gateway beside this worker actually listens on,
   * instead of WEBHOOK_PUBLIC_URL (which must then be unset): for setups where the service reaches
   * the gateway directly, such as the demo and the tests. With WEBHOOK_PORT=0 the gateway takes
   * any free port, and the URLs follow it.
   */
  publicUrlFromGateway?: boolean;
  /**
   * The workflow code: a bundle file made by `bundleWorkflowCode` (a path), `false` to bundle the
   * sources at start, or absent for the default: the prebuilt bundle when there is one
   * (`prebuiltWorkflowBundlePath()`), else bundling at start.
   */
  workflowBundlePath?: string | false;
  /**
   * OpenTelemetry traces to this span processor (worker/tracing.ts); without it, OTEL_TRACES=1
   * prints them. With tracing on, the workflows are bundled at start unless a bundle path is given
   * (which must then have been bundled with the OpenTelemetry workflow interceptors).
   */
  tracing?: TracingOptions;
}

/**
 * The workflow code every worker of the process loads: the prebuilt bundle, or one bundled here
 * once for all of them (with the workflow interceptor modules tracing needs).
 */
async function workflowSource(option: string | false | undefined, workflowInterceptorModules: string[]) {
  const bundlePath = option === undefined ? prebuiltWorkflowBundlePath() : option;
  if (bundlePath && (option !== undefined || existsSync(bundlePath))) {
    return { workflows: 'prebuilt bundle' as const, workflowBundle: { codePath: bundlePath } };
  }
  const { code } = await bundleWorkflowCode({
    // The folder (the bundler resolves its index): require.resolve would need an extension that
    // differs between tsx, vitest and compiled JavaScript.
    workflowsPath: path.resolve(__dirname, '../workflows'),
    ...workflowBundlerOptions(),
    workflowInterceptorModules,
    logger: Runtime.instance().logger,
  });
  return { workflows: 'bundled at start' as const, workflowBundle: { code } };
}

/** The process's state for its health endpoint: its least healthy worker's (none yet: starting). */
function workersState(workers: readonly Worker[]): WorkerHealthState {
  const states = workers.map((worker) => HEALTH_STATES[worker.getState()] ?? 'starting');
  if (states.length === 0) return 'starting';
  return HEALTH_ORDER.find((state) => states.includes(state)) ?? 'running';
}

const HEALTH_ORDER: readonly WorkerHealthState[] = ['failed', 'stopped', 'stopping', 'starting', 'running'];

const HEALTH_STATES: Record<string, WorkerHealthState> = {
  INITIALIZED: 'starting',
  RUNNING: 'running',
  STOPPING: 'stopping',
  DRAINING: 'stopping',
  DRAINED: 'stopping',
  STOPPED: 'stopped',
  FAILED: 'failed',
};

function webhookUrlForConfig(
  config: WorkerConfig,
  gatewayUrl: string | undefined,
  options: RunWorkerOptions,
): ((workflowId: string) => string) | undefined {
  const { publicUrl, secret } = config.webhook;
  if (options.publicUrlFromGateway) {
    if (publicUrl) throw new Error('publicUrlFromGateway needs WEBHOOK_PUBLIC_URL to be unset');
    if (!gatewayUrl || !secret) throw new Error('publicUrlFromGateway needs the gateway (WEBHOOK_PORT)');
    return webhookUrlFactory(gatewayUrl, secret);
  }
  return publicUrl && secret ? webhookUrlFactory(publicUrl, secret) : undefined;
}

/**
 * Runs until `signal` aborts (or the worker fails), then stops the worker (in-flight activities get
 * `shutdownGraceMs` to finish: a submit cut off after sending is a possible duplicate job), closes
 * the gateway, the connection and the service client, in that order, and resolves. The worker is
 * registered on `workflows/index.ts`, so it runs every workflow of the library.
 */
export async function runWorker(config: WorkerConfig, options: RunWorkerOptions = {}): Promise<void> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, secrets: secretValues(config) });
  const { signal } = options;
  const { namespace, taskQueue } = config.temporal;
  const cleanups: Array<{ what: string; close: () => Promise<void> }> = [];
  const cleanUp = async () => {
    // Last opened, first closed; a failure to close one thing must not keep the others open.
    for (const { what, close } of cleanups.reverse()) {
      try {
        await close();
      } catch (error) {
        logger.warn({ err: error }, `closing the ${what} failed`);
      }
    }
  };

  try {
    // First, so that liveness answers while the worker connects; closed last.
    let workers: Worker[] = [];
    let connection: NativeConnection | undefined;
    const health = config.health
      ? await startHealthServer({
          ...config.health,
          probe: {
            state: () => workersState(workers),
            checkTemporal: async () => {
              if (!connection) throw new Error('not connected');
              await connection.workflowService.getSystemInfo({});
            },
          },
        })
      : undefined;
    if (health) cleanups.push({ what: 'health endpoint', close: () => health.close() });

    // Counted only when served: with no endpoint, the no-op default costs nothing.
    const prometheus = config.metrics
      ? createPrometheusMetrics(
          config.metrics.endpointLabels ? { endpointLabels: config.metrics.endpointLabels } : {},
        )
      : undefined;
    const metricsServer =
      config.metrics && prometheus
        ? await startMetricsServer({
            host: config.metrics.host,
            port: config.metrics.port,
            registry: prometheus.registry,
          })
        : undefined;
    if (metricsServer) cleanups.push({ what: 'metrics endpoint', close: () => metricsServer.close() });
    const metrics = prometheus?.metrics;

    const spanProcessor =
      options.tracing?.spanProcessor ?? (config.traces ? consoleSpanProcessor() : undefined);
    const tracing = spanProcessor ? startTracing({ ...options.tracing, spanProcessor }) : undefined;
    if (tracing) cleanups.push({ what: 'tracing', close: () => tracing.shutdown() });

    // Before anything connects: a bucket that is not there or credentials it refuses stop the
    // worker here, with the store and the cause named, before it takes a single task.
    const stores = await openStores(config.resultStore ?? { kind: 'local', dir: config.resultStoreDir });
    await stores.check();

    const client = createServiceClient(config.service, {
      ...(metrics ? { metrics } : {}),
      ...(config.rateLimits === undefined ? {} : { rateLimits: config.rateLimits }),
    });
    cleanups.push({ what: 'service client', close: () => client.close() });

    const connected = await NativeConnection.connect(connectionOptions(config.temporal));
    connection = connected;
    cleanups.push({ what: 'Temporal connection', close: () => connected.close() });

    // Before the worker: a worker that was created must also be run before the connection can close.
    // The gateway here tells this worker's batch watchers what it hears (no query for their jobs).
    const batchJobReports = config.webhook.port === undefined ? undefined : createBatchJobReports();
    // And its job pollers which ends it signalled: the workflows look at those themselves.
    const taskLooks = createTaskLooks();
    const gateway =
      config.webhook.port === undefined
        ? undefined
        : await startWebhookGateway({
            ...(batchJobReports ? { batchJobReports } : {}),
            taskLooks,
            client: new Client({ connection: connected, namespace }),
            host: config.webhook.host,
            port: config.webhook.port,
            secrets: acceptedSecrets(config.webhook),
            bodyLimitBytes: config.webhook.bodyLimitBytes,
            logger: logger.child({ component: 'webhook-gateway' }),
            ...(metrics ? { metrics } : {}),
            ...eventIngressOptions(
              config,
              new Client({ connection: connected, namespace }),
              prometheus?.registry,
              { automations: options.automations ?? [], sources: options.eventSources ?? [] },
            ),
          });
    if (gateway) cleanups.push({ what: 'webhook gateway', close: () => gateway.close() });

    const webhookUrlFor = webhookUrlForConfig(config, gateway?.url, options);
    const activities = createActivities({
      batchStore: stores.batchStore,
      resultStore: stores.resultStore,
      ...(stores.streamStore ? { streamStore: stores.streamStore } : {}),
      ...options.activityOptions,
      client,
      ...(webhookUrlFor ? { webhookUrlFor } : {}),
      ...(batchJobReports ? { batchJobReports } : {}),
      taskLooks,
      resultStoreDir: config.resultStoreDir,
      automations: options.automations ?? [],
      transforms: options.transforms ?? [],
      // Automations signal workflows (end events) and look runs up by id.
      temporalClient: new Client({ connection: connected, namespace }),
      taskQueue,
      ...(metrics ? { metrics } : {}),
      ...(config.pricing ? { estimateCost: createCostEstimator({ client, pricing: config.pricing }) } : {}),
    });

    const traced = tracing?.workerOptions;
    const source = await workflowSource(
      options.workflowBundlePath ?? (tracing ? false : undefined),
      traced?.interceptors?.workflowModules ?? [],
    );
    // One Temporal worker per task queue, each with its own slots, cache and sticky queue: the
    // server keeps no fairness keys in a sticky queue, so a queue of its own is what keeps work
    // started there from waiting behind another queue's backlog in this process.
    const createWorker = async (queue: string) => {
      const slotOptions = workerSlotOptions(config.slots ?? {});
      const worker = await Worker.create({
        connection: connected,
        namespace,
        taskQueue: queue,
        workflowBundle: source.workflowBundle,
        activities,
        // The workflow interceptors are in the bundle; the worker adds the activity ones.
        ...(traced
          ? { sinks: traced.sinks, interceptors: { activity: traced.interceptors?.activity ?? [] } }
          : {}),
        shutdownGraceTime: config.shutdownGraceMs,
        ...slotOptions.options,
      });
      slotOptions.readActivations?.(() => worker.getStatus().numInFlightWorkflowActivations);
      return worker;
    };
    const created: Worker[] = [];
    try {
      for (const queue of [taskQueue, ...config.extraTaskQueues]) created.push(await createWorker(queue));
    } catch (error) {
      // A worker that was created holds the connection open until it has run: run and stop those.
      await Promise.all(
        created.map((worker) => {
          const run = worker.run();
          worker.shutdown();
          return run.catch(() => undefined);
        }),
      );
      throw error;
    }
    workers = created;

    // Each runs until it is shut down or fails; one failing stops the others, and the process
    // ends as it would with one queue.
    const stop = () => {
      for (const worker of created) if (worker.getState() === 'RUNNING') worker.shutdown();
    };
    const running = created.map((worker) =>
      worker.run().catch((error: unknown) => {
        stop();
        throw error;
      }),
    );
    const drain = () => {
      logger.info('shutting down: draining the worker');
      stop();
    };
    if (signal?.aborted) drain();
    else signal?.addEventListener('abort', drain, { once: true });

    logger.info(
      {
        ...describeConnection(config.temporal),
        taskQueue,
        ...(config.extraTaskQueues.length > 0 ? { extraTaskQueues: config.extraTaskQueues } : {}),
        slots: config.slots ?? {},
        workflows: source.workflows,
        gateway: gateway?.url,
        health: health?.url,
        metrics: metricsServer?.url,
        traces: tracing ? 'on' : 'off',
        webhooks: webhookUrlFor ? 'webhook and polling' : 'polling only (no WEBHOOK_PUBLIC_URL)',
      },
      'worker running',
    );
    options.onReady?.({
      taskQueue,
      extraTaskQueues: config.extraTaskQueues,
      namespace,
      workflows: source.workflows,
      ...(gateway ? { gatewayUrl: gateway.url } : {}),
      ...(health ? { healthUrl: health.url } : {}),
      ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    });

    try {
      const settled = await Promise.allSettled(running);
      const failed = settled.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      signal?.removeEventListener('abort', drain);
    }
    logger.info('worker stopped');
  } finally {
    await cleanUp();
  }
}
