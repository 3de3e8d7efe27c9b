/**
 * `durable-serverless doctor`: why nothing starts, or never finishes. Each check is one piece of a
 * deployment (Temporal, its namespace and search attributes, a worker on the task queue, the
 * service's API key and endpoints, the webhook URL, the result store, the clock), with a plain
 * verdict and, when it fails, the fix.
 *
 * It reads the worker's own environment (run it where the worker runs: the same variables, the
 * same user, the same network), so a check that passes here passes for the worker. Nothing it
 * prints or returns holds a secret: errors are redacted with the configuration's secrets, and the
 * webhook URL is checked without a token.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { request } from 'undici';
import { createServiceClient } from '../api';
import { redact, ServiceError } from '../api/errors';
import { searchAttributeKeys } from '../contracts/search-attributes';
import type { S3StoreOptions } from '../stores/s3-client';
import { openStores, type StoreLocation, storeName } from '../stores/store-location';
import { loadWorkerConfig, secretValues, type WorkerConfig } from '../worker/config';
import {
  connectionOptions,
  connectionSecrets,
  describeConnection,
  loadTemporalConnectionWithOrigin,
  type TemporalConnectionConfig,
  type TemporalConnectionOrigin,
} from './connection';
import { DEFAULT_TASK_QUEUE } from './endpoints';

export const doctorVerdicts = ['pass', 'warn', 'fail', 'skip'] as const;
export type DoctorVerdict = (typeof doctorVerdicts)[number];

export interface DoctorCheck {
  /** What was checked: `temporal`, `namespace`, `search-attributes`, `worker`, `clock`, ... */
  check: string;
  verdict: DoctorVerdict;
  /** What was found, in a sentence. */
  detail: string;
  /** What to do about it (a failure or a warning). */
  fix?: string;
}

export interface DoctorReport {
  /** No check failed. */
  ok: boolean;
  connection: ReturnType<typeof describeConnection> & TemporalConnectionOrigin & { taskQueue: string };
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  /** The worker's environment; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where RESULT_STORE_DIR is resolved from, as for the worker. */
  cwd?: string;
  /** The connection (the CLI's flags over the environment); default: from `env`. */
  connection?: { config: TemporalConnectionConfig; origin: TemporalConnectionOrigin };
  taskQueue?: string;
  /** Endpoints whose health to check. */
  endpoints?: string[];
  /** Beyond this, a clock differs from Temporal's too much (default 2 s). */
  maxClockSkewMs?: number;
  /** How long the worker may take to run the doctor's workflow (default 15 s). */
  workflowTimeoutMs?: number;
  /** An S3 result store's client settings, as the worker is given them; default: the AWS SDK's own chain. */
  storeOptions?: S3StoreOptions;
}

const { IndexedValueType } = temporal.api.enums.v1;
const NOT_FOUND = 5;
/** Temporal CLI's name of a search attribute type: KEYWORD_LIST is KeywordList. */
const cliTypeName = (type: string) =>
  type
    .split('_')
    .map((word) => word[0] + word.slice(1).toLowerCase())
    .join('');

/** The Temporal CLI command that registers every search attribute the library writes. */
export function searchAttributeCommands(namespace: string, names?: readonly string[]): string[] {
  return searchAttributeKeys
    .filter((key) => !names || names.includes(key.name))
    .map(
      (key) =>
        `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${cliTypeName(key.type)}`,
    );
}

const messageOf = (error: unknown, secrets: readonly string[]) =>
  redact(error instanceof Error ? error.message : String(error), secrets);

async function checkTemporal(
  config: TemporalConnectionConfig,
  taskQueue: string,
  options: Required<Pick<DoctorOptions, 'maxClockSkewMs' | 'workflowTimeoutMs'>>,
  secrets: readonly string[],
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...connectionOptions(config), connectTimeout: 5_000 });
    const info = await connection.workflowService.getClusterInfo({});
    checks.push({
      check: 'temporal',
      verdict: 'pass',
      detail: `reachable at ${config.address} (server ${info.serverVersion || 'version unknown'})`,
    });
  } catch (error) {
    checks.push({
      check: 'temporal',
      verdict: 'fail',
      detail: `cannot reach ${config.address}: ${messageOf(error, secrets)}`,
      fix: 'set TEMPORAL_ADDRESS (or the profile\'s address) to the frontend\'s host:port, and the TLS settings or TEMPORAL_API_KEY it asks for; "doctor" above shows where each setting came from',
    });
    const skipped = ['namespace', 'search-attributes', 'worker', 'clock'];
    return [
      ...checks,
      ...skipped.map((check) => ({ check, verdict: 'skip' as const, detail: 'Temporal is not reachable' })),
    ];
  }
  try {
    const namespace = config.namespace;
    try {
      await connection.workflowService.describeNamespace({ namespace });
      checks.push({ check: 'namespace', verdict: 'pass', detail: `namespace "${namespace}" exists` });
    } catch (error) {
      const missing = (error as { code?: number }).code === NOT_FOUND;
      checks.push({
        check: 'namespace',
        verdict: 'fail',
        detail: missing ? `namespace "${namespace}" does not exist` : messageOf(error, secrets),
        fix: missing
          ? `temporal operator namespace create --namespace ${namespace} (or set TEMPORAL_NAMESPACE to an existing one)`
          : 'check that the API key or certificate may use this namespace',
      });
      return [
        ...checks,
        ...['search-attributes', 'worker', 'clock'].map((check) => ({
          check,
          verdict: 'skip' as const,
          detail: 'no namespace',
        })),
      ];
    }

    checks.push(await checkSearchAttributes(connection, namespace, secrets));
    const worker = await checkWorker(connection, namespace, taskQueue, secrets);
    checks.push(worker);
    checks.push(
      ...(await checkClockAndRun(
        connection,
        namespace,
        taskQueue,
        worker.verdict === 'pass',
        options,
        secrets,
      )),
    );
    return checks;
  } finally {
    await connection.close();
  }
}

async function checkSearchAttributes(
  connection: Connection,
  namespace: string,
  secrets: readonly string[],
): Promise<DoctorCheck> {
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const custom = listed.customAttributes ?? {};
    const missing = searchAttributeKeys.filter((key) => custom[key.name] === undefined);
    const wrongType = searchAttributeKeys.filter(
      (key) =>
        custom[key.name] !== undefined &&
        custom[key.name] !== IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`],
    );
    if (missing.length === 0 && wrongType.length === 0) {
      return {
        check: 'search-attributes',
        verdict: 'pass',
        detail: `all ${searchAttributeKeys.length} registered (${searchAttributeKeys.map((key) => key.name).join(', ')})`,
      };
    }
    const problems = [
      ...(missing.length ? [`not registered: ${missing.map((key) => key.name).join(', ')}`] : []),
      ...wrongType.map(
        (key) =>
          `${key.name} is ${IndexedValueType[custom[key.name]!] ?? 'another type'}, not ${cliTypeName(key.type)}`,
      ),
    ];
    return {
      check: 'search-attributes',
      verdict: 'fail',
      detail: `${problems.join('; ')} (starts that set them are refused)`,
      fix: searchAttributeCommands(
        namespace,
        missing.map((key) => key.name),
      ).join('\n'),
    };
  } catch (error) {
    return {
      check: 'search-attributes',
      verdict: 'warn',
      detail: `cannot list them: ${messageOf(error, secrets)}`,
      fix: `check them in the namespace's settings; each is created with:\n${searchAttributeCommands(namespace).join('\n')}`,
    };
  }
}

async function checkWorker(
  connection: Connection,
  namespace: string,
  taskQueue: string,
  secrets: readonly string[],
): Promise<DoctorCheck> {
  try {
    const describe = (taskQueueType: temporal.api.enums.v1.TaskQueueType) =>
      connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType,
      });
    const [workflows, activities] = await Promise.all([
      describe(temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
      describe(temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
    ]);
    const pollers = [...(workflows.pollers ?? []), ...(activities.pollers ?? [])];
    if ((workflows.pollers ?? []).length === 0 || (activities.pollers ?? []).length === 0) {
      const which = (workflows.pollers ?? []).length === 0 ? 'workflow' : 'activity';
      return {
        check: 'worker',
        verdict: 'fail',
        detail: `no worker polls the ${which} tasks of task queue "${taskQueue}" in namespace "${namespace}"`,
        fix: `start the worker (durable-serverless-worker) with TEMPORAL_TASK_QUEUE=${taskQueue} and the same namespace, or pass --task-queue with the worker's queue`,
      };
    }
    const identities = [...new Set(pollers.map((poller) => poller.identity).filter(Boolean))];
    const buildIds = [
      ...new Set(
        pollers
          .map((poller) => poller.deploymentOptions?.buildId || poller.workerVersionCapabilities?.buildId)
          .filter(Boolean),
      ),
    ];
    return {
      check: 'worker',
      verdict: 'pass',
      detail:
        `${identities.length} worker(s) poll task queue "${taskQueue}": ${identities.join(', ')}` +
        (buildIds.length ? ` (build ids: ${buildIds.join(', ')})` : ' (unversioned)'),
    };
  } catch (error) {
    return {
      check: 'worker',
      verdict: 'fail',
      detail: `cannot describe task queue "${taskQueue}": ${messageOf(error, secrets)}`,
      fix: 'check that the API key or certificate may read the namespace',
    };
  }
}

/**
 * Starts the library's smallest workflow (stackCheck: a timer and an activity) on the task queue:
 * Temporal stamps its start time, which gives the clock's skew, and a worker that runs it to the end
 * shows the whole path works. Terminated if it has not ended in time, so nothing is left open.
 */
async function checkClockAndRun(
  connection: Connection,
  namespace: string,
  taskQueue: string,
  workerSeen: boolean,
  options: Required<Pick<DoctorOptions, 'maxClockSkewMs' | 'workflowTimeoutMs'>>,
  secrets: readonly string[],
): Promise<DoctorCheck[]> {
  const client = new Client({ connection, namespace });
  const workflowId = `durable-serverless-doctor-${randomUUID()}`;
  const checks: DoctorCheck[] = [];
  try {
    const before = Date.now();
    const handle = await client.workflow.start('stackCheck', {
      taskQueue,
      workflowId,
      args: [{ name: 'doctor', wait: '1 ms' }],
      workflowExecutionTimeout: `${Math.max(options.workflowTimeoutMs, 1_000) * 2} ms`,
    });
    const after = Date.now();
    const described = await handle.describe();
    const serverTime = described.startTime.getTime();
    const skew = serverTime - (before + after) / 2;
    const margin = (after - before) / 2;
    const beyond = Math.abs(skew) - margin;
    checks.push(
      beyond > options.maxClockSkewMs
        ? {
            check: 'clock',
            verdict: 'fail',
            detail: `this clock is ${Math.round(Math.abs(skew))} ms ${skew > 0 ? 'behind' : 'ahead of'} Temporal's (more than ${options.maxClockSkewMs} ms)`,
            fix: "synchronise the clock (NTP, chrony or the host's time service): webhook tokens, leases and schedules read it",
          }
        : {
            check: 'clock',
            verdict: 'pass',
            detail: `within ${Math.max(Math.round(Math.abs(skew) + margin), 1)} ms of Temporal's`,
          },
    );
    if (!workerSeen) {
      checks.push({ check: 'workflow-run', verdict: 'skip', detail: 'no worker to run it' });
      return checks;
    }
    const timeout = new Promise<'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), options.workflowTimeoutMs);
      timer.unref();
    });
    const outcome = await Promise.race([
      handle.result().then(
        () => 'done' as const,
        (error: unknown) => error,
      ),
      timeout,
    ]);
    checks.push(
      outcome === 'done'
        ? {
            check: 'workflow-run',
            verdict: 'pass',
            detail: `a worker ran the library's stackCheck workflow (a timer and an activity) on "${taskQueue}"`,
          }
        : {
            check: 'workflow-run',
            verdict: 'fail',
            detail:
              outcome === 'timeout'
                ? `no worker ran stackCheck on "${taskQueue}" within ${options.workflowTimeoutMs} ms`
                : `stackCheck failed: ${messageOf(outcome, secrets)}`,
            fix: "the worker polling this queue may run other code, or be overloaded: check its logs and that it is this library's worker (durable-serverless-worker)",
          },
    );
    return checks;
  } catch (error) {
    checks.push({
      check: 'clock',
      verdict: 'warn',
      detail: `cannot start a workflow to read Temporal's time: ${messageOf(error, secrets)}`,
      fix: 'check that the API key or certificate may start workflows in the namespace',
    });
    return checks;
  } finally {
    await client.workflow
      .getHandle(workflowId)
      .terminate('durable-serverless doctor: done')
      .catch(() => undefined);
  }
}

async function checkService(config: WorkerConfig, endpoints: readonly string[]): Promise<DoctorCheck[]> {
  const secrets = secretValues(config);
  const service = createServiceClient(config.service);
  const checks: DoctorCheck[] = [];
  try {
    try {
      const listed = await service.endpoints.list({ signal: AbortSignal.timeout(10_000) });
      checks.push({
        check: 'service-api-key',
        verdict: 'pass',
        detail: `the service accepts SERVERLESS_API_KEY (${listed.length} endpoint(s) on the account)`,
      });
    } catch (error) {
      const status = error instanceof ServiceError ? error.status : undefined;
      const refused = status === 401 || status === 403;
      checks.push({
        check: 'service-api-key',
        verdict: 'fail',
        detail: refused
          ? `the service refused SERVERLESS_API_KEY (${status})`
          : `cannot reach the service: ${messageOf(error, secrets)}`,
        fix: refused
          ? "set SERVERLESS_API_KEY to a valid key of the account (the console's API keys page); a read-only key cannot run jobs"
          : 'check SERVERLESS_GRAPHQL_URL and the network from the worker to the service',
      });
      return [
        ...checks,
        ...endpoints.map((id) => ({
          check: `endpoint ${id}`,
          verdict: 'skip' as const,
          detail: 'the API key does not work',
        })),
      ];
    }
    for (const id of endpoints) {
      try {
        const health = await service.jobs.health(id, { signal: AbortSignal.timeout(10_000) });
        const workers = health.workers.idle + health.workers.running;
        checks.push({
          check: `endpoint ${id}`,
          verdict: 'pass',
          detail: `healthy: ${health.workers.idle} worker(s) idle, ${health.workers.running} running; ${health.jobs.inQueue} job(s) in queue, ${health.jobs.inProgress} in progress${workers === 0 ? ' (it scales from zero on the next job)' : ''}`,
        });
      } catch (error) {
        const status = error instanceof ServiceError ? error.status : undefined;
        checks.push({
          check: `endpoint ${id}`,
          verdict: 'fail',
          detail:
            status === 404
              ? `no endpoint "${id}" on this account`
              : `health check failed: ${messageOf(error, secrets)}`,
          fix:
            status === 404
              ? 'check the endpoint id (durable-serverless endpoint list shows them, or the console)'
              : 'check SERVERLESS_API_URL and the endpoint in the console',
        });
      }
    }
    return checks;
  } finally {
    await service.close();
  }
}

async function checkWebhook(config: WorkerConfig): Promise<DoctorCheck> {
  const { publicUrl, secret } = config.webhook;
  if (!publicUrl) {
    return {
      check: 'webhook',
      verdict: 'skip',
      detail: 'WEBHOOK_PUBLIC_URL is not set: jobs are polled, no webhook URL is handed to the service',
    };
  }
  if (!secret) {
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: 'WEBHOOK_SECRET is not set',
      fix: 'set WEBHOOK_SECRET (32 characters or more) on the worker and the gateway',
    };
  }
  try {
    const response = await request(`${publicUrl}/healthz`, {
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    });
    await response.body.dump();
    if (response.statusCode === 200) {
      return {
        check: 'webhook',
        verdict: 'pass',
        detail: `${publicUrl} answers from here (outside the worker process); WEBHOOK_SECRET is set`,
      };
    }
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: `${publicUrl}/healthz answers ${response.statusCode}, not the gateway's 200`,
      fix: 'WEBHOOK_PUBLIC_URL must lead to the gateway (its /healthz answers 200): check the proxy or ingress in front of it',
    };
  } catch (error) {
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: `${publicUrl} is not reachable from here: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      fix: 'WEBHOOK_PUBLIC_URL must be the address the service can reach the gateway at (WEBHOOK_PORT, a public host or ingress), not a loopback one',
    };
  }
}

/** An S3 store: the bucket checked as the worker checks it, then a probe written and read back. */
async function checkS3Store(
  location: StoreLocation,
  options: S3StoreOptions,
  secrets: readonly string[],
): Promise<DoctorCheck> {
  const name = storeName(location);
  try {
    const stores = await openStores(location, options);
    await stores.check();
    const probe = { doctor: randomUUID() };
    // One fixed key: each doctor run overwrites the last one's probe instead of adding objects.
    const ref = await stores.resultStore.put('durable-serverless-doctor/probe.json', probe);
    const read = (await stores.resultStore.get(ref)) as typeof probe;
    if (read.doctor !== probe.doctor) throw new Error('read back something else');
    return { check: 'store', verdict: 'pass', detail: `${name} is readable and writable` };
  } catch (error) {
    return {
      check: 'store',
      verdict: 'fail',
      detail: `${name} is not readable and writable: ${messageOf(error, secrets)}`,
      fix: 'check RESULT_STORE_URL (the bucket and prefix), RESULT_STORE_ENDPOINT and REGION, and the AWS credentials the worker has',
    };
  }
}

function checkStore(dir: string): DoctorCheck {
  const probe = path.join(dir, `.doctor-${randomUUID()}`);
  const text = `durable-serverless doctor ${Date.now()}`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(probe, text);
    if (readFileSync(probe, 'utf8') !== text) throw new Error('read back something else');
    return { check: 'store', verdict: 'pass', detail: `${dir} is readable and writable` };
  } catch (error) {
    return {
      check: 'store',
      verdict: 'fail',
      detail: `${dir} is not readable and writable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      fix: "set RESULT_STORE_DIR (or RESULT_STORE_URL) to a directory the worker's user can write (a volume shared by every worker), or an s3:// store",
    };
  } finally {
    try {
      rmSync(probe, { force: true });
    } catch {
      // Nothing was written: the failure is reported above.
    }
  }
}

/** Every check, in order; never throws for a broken piece (that is a failed check). */
export async function runDoctor(options: DoctorOptions = {}): Promise<DoctorReport> {
  const env = options.env ?? process.env;
  const checks: DoctorCheck[] = [];
  let connection = options.connection;
  if (!connection) {
    try {
      connection = loadTemporalConnectionWithOrigin(env);
    } catch (error) {
      checks.push({
        check: 'connection-settings',
        verdict: 'fail',
        detail: (error as Error).message,
        fix: 'correct the setting named (a TEMPORAL_* variable or a key of the TOML profile)',
      });
    }
  }
  const taskQueue = options.taskQueue ?? (env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE);
  let workerConfig: WorkerConfig | undefined;
  try {
    workerConfig = loadWorkerConfig(env, options.cwd);
    checks.push({ check: 'worker-settings', verdict: 'pass', detail: "the worker's variables are valid" });
  } catch (error) {
    checks.push({
      check: 'worker-settings',
      verdict: 'fail',
      detail: (error as Error).message,
      fix: "run doctor with the worker's environment, and correct the variable named",
    });
  }
  const secrets = [
    ...(connection ? connectionSecrets(connection.config) : []),
    ...(workerConfig ? secretValues(workerConfig) : []),
  ];
  if (connection) {
    checks.push(
      ...(await checkTemporal(
        connection.config,
        taskQueue,
        {
          maxClockSkewMs: options.maxClockSkewMs ?? 2_000,
          workflowTimeoutMs: options.workflowTimeoutMs ?? 15_000,
        },
        secrets,
      )),
    );
  }
  if (workerConfig) {
    checks.push(...(await checkService(workerConfig, options.endpoints ?? [])));
    checks.push(await checkWebhook(workerConfig));
    const location = workerConfig.resultStore ?? { kind: 'local' as const, dir: workerConfig.resultStoreDir };
    checks.push(
      location.kind === 'local'
        ? checkStore(location.dir)
        : await checkS3Store(location, options.storeOptions ?? {}, secrets),
    );
  } else {
    const skipped = [
      'service-api-key',
      ...(options.endpoints ?? []).map((id) => `endpoint ${id}`),
      'webhook',
      'store',
    ];
    for (const check of skipped)
      checks.push({ check, verdict: 'skip', detail: "the worker's settings did not load (above)" });
  }
  // Belt and braces: no check may carry a secret out, whatever an error said.
  const clean = checks.map((check) => ({
    ...check,
    detail: redact(check.detail, secrets),
    ...(check.fix ? { fix: redact(check.fix, secrets) } : {}),
  }));
  return {
    ok: clean.every((check) => check.verdict !== 'fail'),
    connection: {
      ...(connection
        ? { ...describeConnection(connection.config), ...connection.origin }
        : {
            address: 'unknown',
            namespace: 'unknown',
            tls: 'off' as const,
            auth: 'none' as const,
            configFileFound: false,
            profile: env.TEMPORAL_PROFILE || 'default',
            sources: {},
          }),
      taskQueue,
    },
    checks: clean,
  };
}

const MARKS: Record<DoctorVerdict, string> = { pass: 'ok  ', warn: 'warn', fail: 'FAIL', skip: 'skip' };

/** The report for a terminal: one line a check, the fix indented under it. */
export function formatDoctorReport(report: DoctorReport): string {
  const { connection } = report;
  const file = connection.configFile
    ? `${connection.configFile}${connection.configFileFound ? '' : ' (not found)'}`
    : 'none';
  const sources = Object.entries(connection.sources)
    .map(([setting, from]) => `${setting} from ${from}`)
    .join(', ');
  const lines = [
    `Temporal ${connection.address}, namespace ${connection.namespace}, task queue ${connection.taskQueue}, TLS ${connection.tls}, auth ${connection.auth}`,
    `profile "${connection.profile}" of ${file}; ${sources || 'every setting at its default'}`,
    '',
  ];
  const width = Math.max(...report.checks.map((check) => check.check.length));
  for (const check of report.checks) {
    lines.push(`${MARKS[check.verdict]}  ${check.check.padEnd(width)}  ${check.detail}`);
    if (check.fix && check.verdict !== 'pass') {
      for (const line of check.fix.split('\n')) lines.push(`${' '.repeat(width + 8)}fix: ${line}`);
    }
  }
  const failed = report.checks.filter((check) => check.verdict === 'fail').length;
  lines.push('', failed === 0 ? 'every check passed' : `${failed} check(s) failed`);
  return `${lines.join('\n')}\n`;
}
