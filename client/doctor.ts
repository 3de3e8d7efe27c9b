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
import { redact } from '../api/errors';
import type { S3StoreOptions } from '../stores/s3-client';
import { loadWorkerConfig, secretValues, type WorkerConfig } from '../worker/config';
import {
  connectionSecrets,
  describeConnection,
  loadTemporalConnectionWithOrigin,
  type TemporalConnectionConfig,
  type TemporalConnectionOrigin,
} from './connection';
import type { DoctorCheck, DoctorVerdict } from './doctor-check';
import { checkS3Store, checkService, checkStore, checkWebhook } from './doctor-deployment';
import { checkTemporal } from './doctor-temporal';
import { DEFAULT_TASK_QUEUE } from './endpoints';

export { type DoctorCheck, type DoctorVerdict, doctorVerdicts } from './doctor-check';
export { searchAttributeCommands } from './doctor-temporal';

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
