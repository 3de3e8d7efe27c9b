/**
 * The worker's and the gateway's configuration, read from the environment with zod. An error
 * names the variable and the rule it breaks, and never repeats a value: most of these values are
 * harmless, but the same code path handles the secrets, and one rule is easier to keep than two.
 */
import path from 'node:path';
import { z } from 'zod';
import { parsePricing as parsePricingTable } from '../activities/cost-estimator';
import { baseUrl, loadServiceConfig, type ServiceConfig } from '../api/config';
import { ConfigError, ValidationError } from '../api/errors';
import { jobOperationSchema, type RateLimits, rateLimitsSchema } from '../api/rate-limit';
import {
  connectionSecrets,
  loadTemporalConnection,
  type TemporalConnectionConfig,
} from '../client/connection';
import { eventSecretRule, eventSecretSchema } from '../client/event-signature';
import type { Pricing } from '../contracts/cost';
import { parseStoreLocation, type StoreLocation } from '../stores/store-location';
import { commaItems, commaList } from './env-lists';
import {
  DEFAULT_EVENT_MAX_BODY_BYTES,
  DEFAULT_EVENT_MAX_DEPTH,
  DEFAULT_EVENT_TOLERANCE_SECONDS,
  DEFAULT_REPLAY_WINDOW_SECONDS,
} from './event-ingress';
import { type EventSource, eventSourcesFromEnv } from './event-sources';

export const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;
export const MIN_SECRET_LENGTH = 32;

const secretRule = `must be at least ${MIN_SECRET_LENGTH} characters`;

/** The Temporal server's default limit on a task queue's name. */
const TASK_QUEUE_MAX_LENGTH = 1000;
const taskQueueRule = `must be a comma-separated list of task queue names of at most ${TASK_QUEUE_MAX_LENGTH} characters each`;

// The gateway's routes hang under this base: trailing slashes are dropped, or they would double up.
const publicUrlSchema = baseUrl();

function integer(rule: string, min: number, max: number) {
  return z
    .string()
    .regex(/^\d+$/, { error: rule })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: rule }).max(max, { error: rule }));
}

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The variables this module reads besides the api's SERVERLESS_*; values are strings or absent. */
export const workerEnvSchema = z.object({
  // TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_* and TEMPORAL_API_KEY: see the section at the end.
  TEMPORAL_TASK_QUEUE: z.string().default('durable-serverless'),
  // More task queues this process polls, each with a Temporal worker of its own: its own slots,
  // cache and sticky queue, so that work started there never waits behind another queue's backlog.
  TEMPORAL_EXTRA_TASK_QUEUES: commaList()
    .pipe(
      z
        .array(z.string().max(TASK_QUEUE_MAX_LENGTH, { error: taskQueueRule }))
        .refine((queues) => new Set(queues).size === queues.length, {
          error: 'must not name a task queue twice',
        }),
    )
    .default([]),
  WEBHOOK_PUBLIC_URL: publicUrlSchema.optional(),
  WEBHOOK_SECRET: z.string().min(MIN_SECRET_LENGTH, { error: secretRule }).optional(),
  WEBHOOK_PREVIOUS_SECRETS: commaList()
    .pipe(z.array(z.string().min(MIN_SECRET_LENGTH, { error: `each secret ${secretRule}` })))
    .default([]),
  WEBHOOK_PORT: integer('must be an integer port from 0 to 65535 (0: any free port)', 0, 65_535).optional(),
  // Loopback unless told otherwise: exposing a listener is a deployment's decision (compose sets 0.0.0.0).
  WEBHOOK_HOST: z.string().default('127.0.0.1'),
  WEBHOOK_BODY_LIMIT_BYTES: integer(
    'must be an integer number of bytes from 1024 to 1073741824',
    1024,
    1 << 30,
  ).default(DEFAULT_BODY_LIMIT_BYTES),
  RESULT_STORE_DIR: z.string().default('.results'),
  // Manifests, results and large outputs in a bucket (s3://bucket/prefix) for workers on several
  // machines, or a directory; the S3 settings beside it. Credentials: the AWS chain, never here.
  RESULT_STORE_URL: z.string().optional(),
  RESULT_STORE_ENDPOINT: z.string().optional(),
  RESULT_STORE_REGION: z.string().optional(),
  RESULT_STORE_PATH_STYLE: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((value) => value === 'true')
    .optional(),
  WORKER_SHUTDOWN_GRACE_MS: integer(
    'must be an integer number of milliseconds from 0 to 3600000',
    0,
    3_600_000,
  ).default(10_000),
  LOG_LEVEL: z.enum(logLevels, { error: `must be one of ${logLevels.join(', ')}` }).default('info'),
  // The SDK's slot settings; absent: the SDK's defaults. Waiting jobs hold no slot (see
  // activities/job-wait.ts), so the defaults serve thousands of jobs in progress.
  WORKER_MAX_CONCURRENT_ACTIVITIES: integer('must be an integer from 1 to 100000', 1, 100_000).optional(),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: integer('must be an integer from 2 to 100000', 2, 100_000).optional(),
  WORKER_MAX_CACHED_WORKFLOWS: integer('must be an integer from 0 to 1000000', 0, 1_000_000).optional(),
  WORKER_MAX_ACTIVITIES_PER_SECOND: integer('must be an integer from 1 to 100000', 1, 100_000).optional(),
  WORKER_MAX_TASK_QUEUE_ACTIVITIES_PER_SECOND: integer(
    'must be an integer from 1 to 100000',
    1,
    100_000,
  ).optional(),
});

type WorkerEnv = z.infer<typeof workerEnvSchema>;

/** Address, namespace, TLS and API key (client/connection.ts), and the worker's task queue. */
export interface TemporalConfig extends TemporalConnectionConfig {
  taskQueue: string;
}

export interface WebhookConfig {
  /** Where the service reaches the gateway; absent: no webhook URLs are handed out, jobs are polled. */
  publicUrl?: string;
  /** Signs new URLs; also accepted. */
  secret?: string;
  /** Still accepted, never used to sign: the tail of a rotation. */
  previousSecrets: string[];
  /** The gateway's listener beside the worker; absent: no gateway in this process. */
  port?: number;
  host: string;
  bodyLimitBytes: number;
}

export interface GatewayConfig {
  temporal: TemporalConfig;
  webhook: WebhookConfig;
  logLevel: (typeof logLevels)[number];
}

/** Worker.create's slot and rate settings; each one absent leaves the SDK's default. */
export interface WorkerSlots {
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
  maxCachedWorkflows?: number;
  /** This worker's activity starts per second. */
  maxActivitiesPerSecond?: number;
  /** The whole task queue's activity starts per second, across every worker: the global bound. */
  maxTaskQueueActivitiesPerSecond?: number;
}

export interface WorkerConfig
  extends GatewayConfig,
    WorkerPackageConfig,
    ObservabilityConfig,
    AutomationsModuleConfig {
  /** `POST /events/{automation}` on the gateway beside the worker (EVENT_*); absent: no such route. */
  events?: EventIngressConfig;
  service: ServiceConfig;
  /** The client's per-endpoint limits over the spec's (SERVERLESS_RATE_LIMITS); absent: the spec's. */
  rateLimits?: RateLimits;
  slots?: WorkerSlots;
  /**
   * Task queues this process polls besides `temporal.taskQueue` (TEMPORAL_EXTRA_TASK_QUEUES), each
   * with a Temporal worker of its own and the same slot settings; empty: none.
   */
  extraTaskQueues: string[];
  /**
   * Absolute: the worker may be started from anywhere. The local store's directory, and where
   * `file` stream sinks write whatever the store.
   */
  resultStoreDir: string;
  /** Where manifests, results and large outputs live (RESULT_STORE_URL); absent: resultStoreDir. */
  resultStore?: StoreLocation;
  shutdownGraceMs: number;
}

/** Every secret the gateway accepts, the signing one first. */
export function acceptedSecrets(webhook: WebhookConfig): string[] {
  return [...(webhook.secret ? [webhook.secret] : []), ...webhook.previousSecrets];
}

/** Every value the logs must never show. */
export function secretValues(config: Partial<WorkerConfig>): string[] {
  return [
    ...(config.webhook ? acceptedSecrets(config.webhook) : []),
    ...(config.service ? [config.service.apiKey] : []),
    ...(config.temporal ? connectionSecrets(config.temporal) : []),
    ...(config.events?.secrets ?? []),
    ...(config.events?.sources.flatMap((source) => source.secrets) ?? []),
  ];
}

/**
 * One section of the environment, parsed: the schema's variables that are set. An empty variable
 * means unset (compose files and shells produce them for "not configured"). A failure names the
 * variable and the rule, never the value: every rule that can fail carries its own message, so zod
 * never gets to quote the input; `ruleOf` may word it for a variable.
 */
function parseEnvSection<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv,
  ruleOf: (variable: string, message: string) => string = (_, message) => message,
): z.output<S> {
  const given: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') given[key] = value;
  }
  const result = schema.safeParse(given);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const variable = String(issue?.path[0] ?? 'environment');
  throw new ConfigError(variable, ruleOf(variable, issue?.message ?? 'is invalid'));
}

function readEnv(env: NodeJS.ProcessEnv): WorkerEnv {
  return parseEnvSection(workerEnvSchema, env);
}

function gatewayConfigFrom(
  parsed: WorkerEnv,
  options: { requireSecret: boolean; connection: TemporalConnectionConfig },
): GatewayConfig {
  if (!parsed.WEBHOOK_SECRET) {
    if (parsed.WEBHOOK_PUBLIC_URL) {
      throw new ConfigError('WEBHOOK_SECRET', `is required when WEBHOOK_PUBLIC_URL is set (${secretRule})`);
    }
    if (parsed.WEBHOOK_PORT !== undefined) {
      throw new ConfigError('WEBHOOK_SECRET', `is required when WEBHOOK_PORT is set (${secretRule})`);
    }
    if (options.requireSecret)
      throw new ConfigError('WEBHOOK_SECRET', `is required by the gateway (${secretRule})`);
    if (parsed.WEBHOOK_PREVIOUS_SECRETS.length > 0) {
      throw new ConfigError('WEBHOOK_SECRET', 'is required when WEBHOOK_PREVIOUS_SECRETS is set');
    }
  }
  return {
    temporal: { ...options.connection, taskQueue: parsed.TEMPORAL_TASK_QUEUE },
    webhook: {
      ...(parsed.WEBHOOK_PUBLIC_URL ? { publicUrl: parsed.WEBHOOK_PUBLIC_URL } : {}),
      ...(parsed.WEBHOOK_SECRET ? { secret: parsed.WEBHOOK_SECRET } : {}),
      previousSecrets: parsed.WEBHOOK_PREVIOUS_SECRETS,
      ...(parsed.WEBHOOK_PORT !== undefined ? { port: parsed.WEBHOOK_PORT } : {}),
      host: parsed.WEBHOOK_HOST,
      bodyLimitBytes: parsed.WEBHOOK_BODY_LIMIT_BYTES,
    },
    logLevel: parsed.LOG_LEVEL,
  };
}

/** `npm run worker`: everything, the service's SERVERLESS_* included. */
export function loadWorkerConfig(
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): WorkerConfig {
  const parsed = readEnv(env);
  const gateway = gatewayConfigFrom(parsed, {
    requireSecret: false,
    connection: loadTemporalConnection(env),
  });
  return {
    ...gateway,
    ...loadWorkerPackageConfig(env),
    ...loadObservabilityConfig(env),
    ...loadEventIngressConfig(env),
    ...loadAutomationsModuleConfig(env, cwd),
    service: loadServiceConfig(env),
    ...loadRateLimits(env),
    ...resultStoreFrom(parsed, env, cwd),
    shutdownGraceMs: parsed.WORKER_SHUTDOWN_GRACE_MS,
    slots: workerSlotsFrom(parsed),
    extraTaskQueues: extraTaskQueuesFrom(parsed),
  };
}

function extraTaskQueuesFrom(parsed: WorkerEnv): string[] {
  if (parsed.TEMPORAL_EXTRA_TASK_QUEUES.includes(parsed.TEMPORAL_TASK_QUEUE))
    throw new ConfigError(
      'TEMPORAL_EXTRA_TASK_QUEUES',
      'must not name TEMPORAL_TASK_QUEUE, which the worker polls already',
    );
  return parsed.TEMPORAL_EXTRA_TASK_QUEUES;
}

/** RESULT_STORE_URL (and its S3 settings) over RESULT_STORE_DIR; a directory in either, not both. */
function resultStoreFrom(
  parsed: WorkerEnv,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Pick<WorkerConfig, 'resultStoreDir' | 'resultStore'> {
  const resultStoreDir = path.resolve(cwd, parsed.RESULT_STORE_DIR);
  if (parsed.RESULT_STORE_URL === undefined) {
    for (const variable of [
      'RESULT_STORE_ENDPOINT',
      'RESULT_STORE_REGION',
      'RESULT_STORE_PATH_STYLE',
    ] as const)
      if (parsed[variable] !== undefined)
        throw new ConfigError(variable, 'applies to an s3:// RESULT_STORE_URL only');
    return { resultStoreDir, resultStore: { kind: 'local', dir: resultStoreDir } };
  }
  const resultStore = parseStoreLocation(
    {
      url: parsed.RESULT_STORE_URL,
      ...(parsed.RESULT_STORE_ENDPOINT === undefined ? {} : { endpoint: parsed.RESULT_STORE_ENDPOINT }),
      ...(parsed.RESULT_STORE_REGION === undefined ? {} : { region: parsed.RESULT_STORE_REGION }),
      ...(parsed.RESULT_STORE_PATH_STYLE === undefined
        ? {}
        : { forcePathStyle: parsed.RESULT_STORE_PATH_STYLE }),
    },
    {
      url: 'RESULT_STORE_URL',
      endpoint: 'RESULT_STORE_ENDPOINT',
      region: 'RESULT_STORE_REGION',
      forcePathStyle: 'RESULT_STORE_PATH_STYLE',
    },
    cwd,
  );
  if (resultStore.kind === 'local') {
    if (env.RESULT_STORE_DIR)
      throw new ConfigError(
        'RESULT_STORE_URL',
        'names a directory: set RESULT_STORE_DIR or RESULT_STORE_URL, not both',
      );
    return { resultStoreDir: resultStore.dir, resultStore };
  }
  return { resultStoreDir, resultStore };
}

const RATE_LIMITS_RULE =
  "must be JSON: false (no client-side limits), or limits per operation over the spec's, such as " +
  '{"run":{"perTenSeconds":1000,"concurrent":200}}';

/**
 * SERVERLESS_RATE_LIMITS: the client's per-endpoint limits, merged over the spec's. For an account
 * whose effective limits differ from the base ones (the spec's dynamic rule: running workers times
 * requests per worker, when that is higher), or `false` to leave pacing to the service's 429s.
 * Each worker paces itself: across N workers, divide by N. Errors name the variable and the field.
 */
export function loadRateLimits(env: NodeJS.ProcessEnv): { rateLimits?: RateLimits } {
  const raw = env.SERVERLESS_RATE_LIMITS;
  if (raw === undefined || raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ConfigError('SERVERLESS_RATE_LIMITS', RATE_LIMITS_RULE);
  }
  if (value === false) return { rateLimits: false };
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ConfigError('SERVERLESS_RATE_LIMITS', RATE_LIMITS_RULE);
  // The per-operation branch itself: the union's own errors would not say which field.
  const result = rateLimitsSchema.options[1].safeParse(value);
  if (result.success) return { rateLimits: result.data };
  const issue = result.error.issues.find((candidate) => candidate.path.length > 0) ?? result.error.issues[0];
  throw new ConfigError(
    ['SERVERLESS_RATE_LIMITS', ...(issue?.path.map(String) ?? [])].join('.'),
    issue?.code === 'invalid_key' || issue?.code === 'unrecognized_keys'
      ? `names an operation that is not one of ${jobOperationSchema.options.join(', ')}`
      : (issue?.message ?? RATE_LIMITS_RULE),
  );
}

function workerSlotsFrom(parsed: WorkerEnv): WorkerSlots {
  const pairs: Array<[keyof WorkerSlots, number | undefined]> = [
    ['maxConcurrentActivityTaskExecutions', parsed.WORKER_MAX_CONCURRENT_ACTIVITIES],
    ['maxConcurrentWorkflowTaskExecutions', parsed.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS],
    ['maxCachedWorkflows', parsed.WORKER_MAX_CACHED_WORKFLOWS],
    ['maxActivitiesPerSecond', parsed.WORKER_MAX_ACTIVITIES_PER_SECOND],
    ['maxTaskQueueActivitiesPerSecond', parsed.WORKER_MAX_TASK_QUEUE_ACTIVITIES_PER_SECOND],
  ];
  return Object.fromEntries(pairs.filter(([, value]) => value !== undefined));
}

/** Default listener port of the standalone gateway, which exists only to listen. */
export const DEFAULT_GATEWAY_PORT = 8080;

/**
 * `npm run gateway`: Temporal and the webhook only. The gateway never calls the service, so it
 * neither needs nor gets the API key.
 */
export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig &
  Pick<ObservabilityConfig, 'metrics'> & {
    webhook: WebhookConfig & { port: number };
  } {
  const parsed = readEnv(env);
  const gateway = gatewayConfigFrom(parsed, { requireSecret: true, connection: loadTemporalConnection(env) });
  const { metrics } = loadObservabilityConfig(env);
  return {
    ...gateway,
    ...(metrics ? { metrics } : {}),
    webhook: { ...gateway.webhook, port: gateway.webhook.port ?? DEFAULT_GATEWAY_PORT },
  };
}

// ================================================================================================
// The package: the worker's health endpoint. The Temporal connection's variables
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY) are read by
// client/connection.ts, shared with the gateway, the CLI and the facade. Kept in one section, apart
// from the settings above, to ease merging.
// ================================================================================================

export const DEFAULT_HEALTH_HOST = '127.0.0.1';

const healthEnvSchema = z.object({
  WORKER_HEALTH_PORT: integer(
    'must be an integer port from 0 to 65535 (0: any free port)',
    0,
    65_535,
  ).optional(),
  // Loopback unless told otherwise: Kubernetes probes reach the pod's address, so set 0.0.0.0 there.
  WORKER_HEALTH_HOST: z
    .string()
    .min(1, { error: 'must be a host name or address' })
    .default(DEFAULT_HEALTH_HOST),
});

export interface WorkerHealthConfig {
  port: number;
  host: string;
}

export interface WorkerPackageConfig {
  /** The liveness and readiness endpoint (worker/health.ts); absent: none. */
  health?: WorkerHealthConfig;
}

/** WORKER_HEALTH_PORT and WORKER_HEALTH_HOST; errors name the variable and the rule. */
export function loadWorkerPackageConfig(env: NodeJS.ProcessEnv = process.env): WorkerPackageConfig {
  const { WORKER_HEALTH_PORT: port, WORKER_HEALTH_HOST: host } = parseEnvSection(healthEnvSchema, env);
  return port === undefined ? {} : { health: { port, host } };
}

// ================================================================================================
// Observability: the library's Prometheus endpoint, the Temporal SDK's own metrics
// endpoint, and the price table for cost estimates. Kept in one section, to ease merging.
// ================================================================================================

const portRule = 'must be an integer port from 0 to 65535 (0: any free port)';
const bindRule = 'must be host:port, e.g. 0.0.0.0:9000 or [::1]:9000';

const observabilityEnvSchema = z.object({
  WORKER_METRICS_PORT: integer(portRule, 0, 65_535).optional(),
  // Loopback unless told otherwise, like the health endpoint: Prometheus in a pod needs 0.0.0.0.
  WORKER_METRICS_HOST: z
    .string()
    .min(1, { error: 'must be a host name or address' })
    .default(DEFAULT_HEALTH_HOST),
  TEMPORAL_METRICS_BIND: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, { error: bindRule })
    .optional(),
  SERVERLESS_PRICES: z.string().optional(),
  WORKER_METRICS_ENDPOINT_LABELS: z.string().optional(),
  OTEL_TRACES: z
    .enum(['0', '1', 'console'], { error: 'must be 0, 1 or console (1: print spans to the console)' })
    .optional(),
});

export interface ObservabilityConfig {
  /** The library's /metrics (worker/metrics.ts); absent: none. */
  metrics?: { port: number; host: string; endpointLabels?: Record<string, string> };
  /** Where the Temporal SDK's Rust core serves its Prometheus metrics; absent: not exported. */
  temporalMetricsBind?: string;
  /** The price table for cost estimates (contracts/cost.ts); absent: no estimates. */
  pricing?: Pricing;
  /** OTEL_TRACES: print spans to the console (an embedding program can pass its own exporter instead). */
  traces?: 'console';
}

function parsePricing(text: string): Pricing {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(
      'SERVERLESS_PRICES',
      'must be JSON such as {"currency":"USD","perSecond":{"AMPERE_16":0.0002}}',
    );
  }
  return parsePricingTable(json, 'SERVERLESS_PRICES');
}

const aliasPattern = /^[A-Za-z0-9_-]{1,32}$/;
const MAX_ENDPOINT_LABELS = 50;

/**
 * WORKER_METRICS_ENDPOINT_LABELS=`<endpointId>:<alias>,...`: the endpoints whose jobs in flight get
 * a gauge of their own, labelled by the alias (a bounded set the operator chose; ids are no labels).
 */
export function parseEndpointLabels(text: string): Record<string, string> {
  const name = 'WORKER_METRICS_ENDPOINT_LABELS';
  const out: Record<string, string> = {};
  const entries = commaItems(text);
  if (entries.length > MAX_ENDPOINT_LABELS)
    throw new ConfigError(name, `must name at most ${MAX_ENDPOINT_LABELS} endpoints`);
  for (const entry of entries) {
    const at = entry.lastIndexOf(':');
    const id = entry.slice(0, at).trim();
    const alias = entry.slice(at + 1).trim();
    if (at <= 0 || id.length === 0 || !aliasPattern.test(alias))
      throw new ConfigError(
        name,
        'must be endpointId:alias pairs separated by commas (alias: 1 to 32 letters, digits, _ or -)',
      );
    out[id] = alias;
  }
  return out;
}

/** WORKER_METRICS_PORT/HOST, TEMPORAL_METRICS_BIND, SERVERLESS_PRICES; errors name the variable and rule. */
export function loadObservabilityConfig(env: NodeJS.ProcessEnv = process.env): ObservabilityConfig {
  const parsed = parseEnvSection(observabilityEnvSchema, env);
  return {
    ...(parsed.WORKER_METRICS_PORT !== undefined
      ? {
          metrics: {
            port: parsed.WORKER_METRICS_PORT,
            host: parsed.WORKER_METRICS_HOST,
            ...(parsed.WORKER_METRICS_ENDPOINT_LABELS
              ? { endpointLabels: parseEndpointLabels(parsed.WORKER_METRICS_ENDPOINT_LABELS) }
              : {}),
          },
        }
      : {}),
    ...(parsed.TEMPORAL_METRICS_BIND ? { temporalMetricsBind: parsed.TEMPORAL_METRICS_BIND } : {}),
    ...(parsed.SERVERLESS_PRICES ? { pricing: parsePricing(parsed.SERVERLESS_PRICES) } : {}),
    ...(parsed.OTEL_TRACES === '1' || parsed.OTEL_TRACES === 'console' ? { traces: 'console' as const } : {}),
  };
}

// ================================================================================================
// Events over HTTP: the gateway's `POST /events/{automation}` (worker/event-ingress.ts).
// Kept in one section, apart from the settings above, to ease merging.
// ================================================================================================

const eventsEnvSchema = z.object({
  EVENT_SIGNING_SECRETS: commaList().pipe(z.array(eventSecretSchema)).optional(),
  EVENT_SOURCES: z.string().optional(),
  EVENT_TIMESTAMP_TOLERANCE_SECONDS: integer(
    'must be an integer number of seconds from 1 to 86400',
    1,
    86_400,
  ).default(DEFAULT_EVENT_TOLERANCE_SECONDS),
  EVENT_MAX_BODY_BYTES: integer(
    'must be an integer number of bytes from 256 to 16777216',
    256,
    16 << 20,
  ).default(DEFAULT_EVENT_MAX_BODY_BYTES),
  EVENT_MAX_DEPTH: integer('must be an integer from 2 to 256', 2, 256).default(DEFAULT_EVENT_MAX_DEPTH),
  EVENT_REPLAY_WINDOW_SECONDS: integer(
    'must be an integer number of seconds from 1 to 604800',
    1,
    604_800,
  ).default(DEFAULT_REPLAY_WINDOW_SECONDS),
});

export interface EventIngressConfig {
  /**
   * EVENT_SIGNING_SECRETS: the `default` source (the library's own body, Standard Webhooks), bound
   * to every registered automation; any one secret may match (several during a rotation).
   */
  secrets: string[];
  /** EVENT_SOURCES, with their secrets read from the variables they name. */
  sources: EventSource[];
  /** The `default` source's tolerance (EVENT_SOURCES give their own). */
  toleranceSeconds: number;
  maxBodyBytes: number;
  maxDepth: number;
  replayWindowSeconds: number;
}

/**
 * EVENT_*: the events route exists when EVENT_SIGNING_SECRETS or EVENT_SOURCES is set (or the
 * automations module exports sources: worker/event-sink.ts). Errors name the variable (and the
 * field inside EVENT_SOURCES), never a value.
 */
export function loadEventIngressConfig(env: NodeJS.ProcessEnv = process.env): {
  events?: EventIngressConfig;
} {
  const parsed = parseEnvSection(eventsEnvSchema, env, (variable, message) =>
    variable === 'EVENT_SIGNING_SECRETS' ? `each secret ${eventSecretRule}` : message,
  );
  const secrets = parsed.EVENT_SIGNING_SECRETS ?? [];
  const sources = parsed.EVENT_SOURCES === undefined ? [] : parseEventSources(parsed.EVENT_SOURCES, env);
  if (secrets.length === 0 && sources.length === 0) return {};
  return {
    events: {
      secrets,
      sources,
      toleranceSeconds: parsed.EVENT_TIMESTAMP_TOLERANCE_SECONDS,
      maxBodyBytes: parsed.EVENT_MAX_BODY_BYTES,
      maxDepth: parsed.EVENT_MAX_DEPTH,
      replayWindowSeconds: parsed.EVENT_REPLAY_WINDOW_SECONDS,
    },
  };
}

function parseEventSources(text: string, env: NodeJS.ProcessEnv): EventSource[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError('EVENT_SOURCES', 'must be a JSON array of sources');
  }
  try {
    return eventSourcesFromEnv(json, env);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    // A secret's rule is the variable's (it holds the secrets); any other field is inside the JSON.
    if (/^[A-Z_][A-Z0-9_]*$/.test(error.field))
      throw new ConfigError(error.field, `each secret ${error.rule}`);
    throw new ConfigError(`EVENT_SOURCES${error.field.startsWith('[') ? '' : '.'}${error.field}`, error.rule);
  }
}

// ================================================================================================
// Automations of the packaged worker: WORKER_AUTOMATIONS_MODULE names a module of the
// deployment's own whose exports are automation definitions; main.ts imports it (see
// automations-module.ts). Kept in one section, to ease merging.
// ================================================================================================

const automationsModuleRule =
  'must be a path (./automations.js, /srv/automations.mjs, file:...) or a package specifier (my-automations, @org/pkg/automations)';

// A bare name as npm allows it, optionally scoped, optionally with a subpath.
const packageSpecifier = /^(@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*(\/[^\s\\]+)?$/i;

function isPathSpecifier(value: string): boolean {
  return (
    value.startsWith('./') || value.startsWith('../') || value.startsWith('file:') || path.isAbsolute(value)
  );
}

const automationsEnvSchema = z.object({
  WORKER_AUTOMATIONS_MODULE: z
    .string()
    .refine((value) => isPathSpecifier(value) || packageSpecifier.test(value), {
      error: automationsModuleRule,
    })
    .optional(),
});

export interface AutomationsModuleConfig {
  /**
   * What main.ts imports for runWorker's `automations`: a path made absolute against the working
   * directory (the worker may be started from anywhere), a `file:` URL, or a package specifier.
   */
  automationsModule?: string;
}

/** WORKER_AUTOMATIONS_MODULE; absent: the worker registers no automation. */
export function loadAutomationsModuleConfig(
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): AutomationsModuleConfig {
  const { WORKER_AUTOMATIONS_MODULE: given } = parseEnvSection(automationsEnvSchema, env);
  if (given === undefined) return {};
  const relative = given.startsWith('./') || given.startsWith('../');
  return { automationsModule: relative ? path.resolve(cwd, given) : given };
}
