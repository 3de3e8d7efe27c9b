#!/usr/bin/env node
/**
 * `npx durable-serverless <command>` (installed) or `npm run cli -- <command>` (in the repo): jobs and endpoints from the shell. The CLI talks to Temporal only;
 * the service's API key lives in the worker, so it never passes through here (nor into its output).
 *
 *   npm run cli -- job start my-job --endpoint ep-1 --input '{"prompt":"hi"}' --wait
 *   npm run cli -- job start my-job --route ep-a,ep-b --input '{"prompt":"hi"}' --wait
 *   npm run cli -- job status my-job
 *   npm run cli -- endpoint teardown ep-1 --jobs cancel --job-ids j1,j2 --delete-volume
 */
import { Client, Connection } from '@temporalio/client';
import { Command, Option } from 'commander';
import { ConfigError, ValidationError } from '../api/errors';
import type {
  ProvisionEndpointInput,
  TeardownEndpointInput,
  UpdateEndpointInput,
} from '../contracts/endpoint-input';
import { jobExecutionTimeoutSchema, jobTtlSchema } from '../contracts/job-input';
import { addBatchCommands } from './cli-batch';
import { addBulkCommands } from './cli-bulk';
import { addCostCommands } from './cli-cost';
import { addDoctorCommand } from './cli-doctor';
import { addEndpointLimitsCommand } from './cli-endpoint-limits';
import { addEventCommands } from './cli-event';
import {
  parseChoice,
  parseDuration,
  parseInteger,
  parseJsonArgument,
  parseJsonObject,
  parseTag,
  parseTags,
} from './cli-input';
import { addPipelineCommands } from './cli-pipeline';
import { ROUTE_HELP, routeOptions, targetOf } from './cli-route';
import { addScheduleCommands } from './cli-schedule';
import { schedulingOf, schedulingOptions } from './cli-scheduling';
import {
  connectionOptions,
  DEFAULT_TEMPORAL_ADDRESS,
  loadTemporalConnectionWithOrigin,
  type TemporalConnectionConfig,
  type TemporalConnectionInput,
  type TemporalConnectionOrigin,
} from './connection';
import {
  DEFAULT_TASK_QUEUE,
  getLifecyclePhase,
  startProvisionEndpoint,
  startTeardownEndpoint,
  startUpdateEndpoint,
} from './endpoints';
import {
  awaitJob,
  cancelJob,
  extendJobTtl,
  getJobSnapshot,
  type JobWorkflowInput,
  jobFailureOf,
  listJobs,
  startJob,
  validateJobInput,
} from './jobs';
import { waitForResult } from './workflow-result';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** stderr is a terminal (progress bars redraw in place). */
  errIsTTY?: boolean;
}

/** Connects lazily, once, with the global options over Temporal's environment variables. */
type ClientFactory = (options: TemporalConnectionConfig) => Promise<Client>;

const defaultClientFactory: ClientFactory = async (config) =>
  new Client({
    connection: await Connection.connect(connectionOptions(config)),
    namespace: config.namespace,
  });

interface ConnectionFlags {
  address?: string;
  namespace?: string;
  tls?: boolean;
  tlsServerCaCert?: string;
  tlsServerName?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
}

/** The flag behind each option of the connection, so that an error names what the user typed. */
const CONNECTION_FLAGS: Record<string, string> = {
  address: '--address',
  namespace: '--namespace',
  tls: '--tls',
  'tls.serverCaCertPath': '--tls-server-ca-cert',
  'tls.serverName': '--tls-server-name',
  'tls.clientCertPath': '--tls-client-cert',
  'tls.clientKeyPath': '--tls-client-key',
};

/** Flags win over TEMPORAL_* variables; a bad value is a ValidationError naming its flag. */
export function cliConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): TemporalConnectionConfig {
  return cliConnectionWithOrigin(flags, env).config;
}

/** cliConnection, and where each setting came from (a flag, a variable or the TOML profile). */
export function cliConnectionWithOrigin(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
): { config: TemporalConnectionConfig; origin: TemporalConnectionOrigin } {
  const tlsFiles = {
    ...(flags.tlsServerCaCert ? { serverCaCertPath: flags.tlsServerCaCert } : {}),
    ...(flags.tlsServerName ? { serverName: flags.tlsServerName } : {}),
    ...(flags.tlsClientCert ? { clientCertPath: flags.tlsClientCert } : {}),
    ...(flags.tlsClientKey ? { clientKeyPath: flags.tlsClientKey } : {}),
  };
  const overrides: TemporalConnectionInput = {
    ...(flags.address !== undefined ? { address: flags.address } : {}),
    ...(flags.namespace !== undefined ? { namespace: flags.namespace } : {}),
    ...(Object.keys(tlsFiles).length > 0 ? { tls: tlsFiles } : flags.tls ? { tls: true } : {}),
  };
  try {
    const { config, origin } = loadTemporalConnectionWithOrigin(env, overrides);
    const sources = Object.fromEntries(
      Object.entries(origin.sources).map(([setting, from]) => [setting, CONNECTION_FLAGS[from] ?? from]),
    );
    return { config, origin: { ...origin, sources } };
  } catch (error) {
    if (error instanceof ConfigError && CONNECTION_FLAGS[error.variable]) {
      throw new ValidationError(CONNECTION_FLAGS[error.variable]!, error.rule);
    }
    throw error;
  }
}

const print = (io: CliIo, value: unknown) => io.out(`${JSON.stringify(value, null, 2)}\n`);

export function buildProgram(
  io: CliIo,
  clientFactory: ClientFactory = defaultClientFactory,
  env: NodeJS.ProcessEnv = process.env,
): Command {
  const program = new Command('durable-serverless')
    .description('Durable jobs and endpoints on the serverless compute service, through Temporal')
    .option(
      '--address <host:port>',
      `Temporal frontend (env: TEMPORAL_ADDRESS, default: ${DEFAULT_TEMPORAL_ADDRESS})`,
    )
    .option('--namespace <name>', 'Temporal namespace (env: TEMPORAL_NAMESPACE, default: default)')
    .option('--tls', 'connect with TLS, trusting the system roots (env: TEMPORAL_TLS=true)')
    .option('--tls-server-ca-cert <path>', "the server's CA, PEM (env: TEMPORAL_TLS_SERVER_CA_CERT_PATH)")
    .option('--tls-server-name <name>', "name in the server's certificate (env: TEMPORAL_TLS_SERVER_NAME)")
    .option('--tls-client-cert <path>', 'mTLS client certificate, PEM (env: TEMPORAL_TLS_CLIENT_CERT_PATH)')
    .option('--tls-client-key <path>', 'mTLS client key, PEM (env: TEMPORAL_TLS_CLIENT_KEY_PATH)')
    .addHelpText(
      'after',
      '\nAn API key comes from TEMPORAL_API_KEY only (a flag would show in the process list); it turns\n' +
        'TLS on. Inline PEM: TEMPORAL_TLS_SERVER_CA_CERT_DATA, TEMPORAL_TLS_CLIENT_CERT_DATA,\n' +
        "TEMPORAL_TLS_CLIENT_KEY_DATA. Under the variables, a profile of Temporal's TOML file, as the\n" +
        'Temporal CLI reads it: TEMPORAL_CONFIG_FILE (default ~/.config/temporalio/temporal.toml),\n' +
        'TEMPORAL_PROFILE (default: default).\n',
    )
    .addOption(
      new Option('--task-queue <name>', 'task queue of the worker')
        .env('TEMPORAL_TASK_QUEUE')
        .default(DEFAULT_TASK_QUEUE),
    )
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride()
    .showHelpAfterError();

  let client: Promise<Client> | undefined;
  const connect = () => {
    client ??= (async () => clientFactory(cliConnection(program.opts<ConnectionFlags>(), env)))();
    return client;
  };
  const taskQueue = () => program.opts<{ taskQueue: string }>().taskQueue;

  const job = program.command('job').description('start, watch and cancel durable jobs');

  const jobStart = routeOptions(
    job
      .command('start')
      .description('start a job workflow (the same id twice is one job)')
      .argument('<workflow-id>', 'your id for this job')
      .option('--endpoint <id>', 'endpoint id'),
  )
    .addHelpText('after', ROUTE_HELP)
    .requiredOption('--input <json>', 'the handler input, JSON inline or @file')
    .option('--mode <mode>', 'async (default), sync (short jobs, still durable) or runsync')
    .option('--ttl <duration>', 'policy.ttl: hard limit from submission, e.g. 2d or ms')
    .option('--execution-timeout <duration>', 'policy.executionTimeout, e.g. 30m or ms')
    .option('--low-priority', 'policy.lowPriority: do not trigger worker scaling')
    .option('--max-retries <n>', '/retry calls after FAILED or TIMED_OUT (default 0)')
    .option('--on-expired <choice>', 'fail (default) or resubmit when the job is gone')
    .option('--on-uncertain-submit <choice>', 'fail (default) or resubmit when a submit answer was lost')
    .option('--options <json>', 'further job workflow options (JSON inline or @file), merged last')
    .option('--tags <tags>', 'your tags, comma-separated (at most 10): select runs by them')
    .option('--wait', 'wait for the result and print it');
  schedulingOptions(jobStart).action(
    async (workflowId: string, flags: Record<string, string | boolean | undefined>) => {
      const policy: Record<string, unknown> = {};
      if (typeof flags.ttl === 'string') policy.ttl = parseDuration('--ttl', flags.ttl, jobTtlSchema);
      if (typeof flags.executionTimeout === 'string') {
        policy.executionTimeout = parseDuration(
          '--execution-timeout',
          flags.executionTimeout,
          jobExecutionTimeoutSchema,
        );
      }
      if (flags.lowPriority) policy.lowPriority = true;
      const input: Record<string, unknown> = {
        ...targetOf(flags, { required: true }),
        ...schedulingOf(flags),
        request: {
          input: parseJsonArgument('--input', String(flags.input)),
          ...(Object.keys(policy).length ? { policy } : {}),
        },
      };
      if (typeof flags.mode === 'string')
        input.mode = parseChoice('--mode', flags.mode, ['async', 'sync', 'runsync']);
      if (typeof flags.maxRetries === 'string') {
        input.retry = { maxRetries: parseInteger('--max-retries', flags.maxRetries) };
      }
      if (typeof flags.onExpired === 'string') {
        input.onExpired = parseChoice('--on-expired', flags.onExpired, ['fail', 'resubmit']);
      }
      if (typeof flags.onUncertainSubmit === 'string') {
        input.onUncertainSubmit = parseChoice('--on-uncertain-submit', flags.onUncertainSubmit, [
          'fail',
          'resubmit',
        ]);
      }
      if (typeof flags.options === 'string')
        Object.assign(input, parseJsonObject('--options', flags.options));
      // Checked before connecting: bad input never waits for Temporal.
      validateJobInput(input as JobWorkflowInput);
      const tags = typeof flags.tags === 'string' ? parseTags('--tags', flags.tags) : undefined;
      const temporal = await connect();
      const handle = await startJob(temporal, input as JobWorkflowInput, {
        workflowId,
        taskQueue: taskQueue(),
        ...(tags ? { tags } : {}),
      });
      if (!flags.wait) return print(io, { workflowId: handle.workflowId, started: true });
      print(io, await awaitJob(temporal, { job: handle }));
    },
  );

  job
    .command('result')
    .description("wait for a job's result")
    .argument('<workflow-id>')
    .option(
      '--store <store>',
      "read a large output from the worker's result store (its RESULT_STORE_DIR or RESULT_STORE_URL)",
    )
    .action(async (workflowId: string, flags: { store?: string }) => {
      const options = flags.store ? { store: flags.store } : {};
      print(io, await awaitJob(await connect(), { job: workflowId, ...options }));
    });

  job
    .command('status')
    .description("a job's snapshot: status, attempts, job ids, timings, progress")
    .argument('<workflow-id>')
    .action(async (workflowId: string) =>
      print(io, await getJobSnapshot(await connect(), { workflowId, live: true })),
    );

  job
    .command('cancel')
    .description('cancel the job workflow; it cancels the remote job first')
    .argument('<workflow-id>')
    .action(async (workflowId: string) => {
      await cancelJob(await connect(), { workflowId });
      print(io, { workflowId, cancelRequested: true });
    });

  job
    .command('extend-ttl')
    .description("set the job's ttl (from submission, e.g. 2d or 172800000 ms) through /status?ttl=")
    .argument('<workflow-id>')
    .argument('<ttl>')
    .action(async (workflowId: string, ttl: string) => {
      const ttlRequested = await extendJobTtl(await connect(), { workflowId, ttl });
      print(io, { workflowId, ttlRequested });
    });

  job
    .command('list')
    .description('job workflows by endpoint, remote job id or status (newest first)')
    .option('--endpoint <id>')
    .option('--job-id <id>')
    .option('--status <status>', 'the remote job status the workflow recorded, e.g. FAILED')
    .option('--tag <tag>', 'only those started with this tag')
    .option('--limit <n>', 'at most this many', '50')
    .action(
      async (flags: { endpoint?: string; jobId?: string; status?: string; tag?: string; limit: string }) => {
        const limit = parseInteger('--limit', flags.limit);
        const listings = [];
        const filter = {
          ...(flags.tag ? { tag: parseTag('--tag', flags.tag) } : {}),
          ...(flags.endpoint ? { endpointId: flags.endpoint } : {}),
          ...(flags.jobId ? { jobId: flags.jobId } : {}),
          ...(flags.status ? { status: flags.status } : {}),
        };
        for await (const listing of listJobs(await connect(), filter)) {
          listings.push(listing);
          if (listings.length >= limit) break;
        }
        print(io, listings);
      },
    );

  const endpoint = program.command('endpoint').description('provision, change and tear down endpoints');

  endpoint
    .command('provision')
    .description('create an endpoint, or find the one of this name (idempotent)')
    .requiredOption(
      '--spec <json>',
      'name, templateId, gpuIds or gpuTypeIds, workers...: JSON inline or @file',
    )
    .option('--workflow-id <id>')
    .option('--no-wait', 'print the workflow id and return')
    .action(async (flags: { spec: string; workflowId?: string; wait: boolean }) => {
      const spec = parseJsonObject('--spec', flags.spec);
      const handle = await startProvisionEndpoint(await connect(), spec as ProvisionEndpointInput, {
        taskQueue: taskQueue(),
        ...(flags.workflowId ? { workflowId: flags.workflowId } : {}),
      });
      print(io, flags.wait ? await waitForResult(handle) : { workflowId: handle.workflowId });
    });

  endpoint
    .command('update')
    .description('change some fields of an endpoint; the rest are kept')
    .argument('<endpoint-id>')
    .requiredOption('--changes <json>', 'the fields to change: JSON inline or @file')
    .option('--no-wait', 'print the workflow id and return')
    .action(async (endpointId: string, flags: { changes: string; wait: boolean }) => {
      const changes = parseJsonObject('--changes', flags.changes);
      const handle = await startUpdateEndpoint(
        await connect(),
        { endpointId, changes } as UpdateEndpointInput,
        {
          taskQueue: taskQueue(),
        },
      );
      print(io, flags.wait ? await waitForResult(handle) : { workflowId: handle.workflowId });
    });

  endpoint
    .command('teardown')
    .description('scale to zero, handle the jobs, delete the endpoint (and its volume)')
    .argument('<endpoint-id>')
    .option('--jobs <mode>', 'purge (default), cancel or wait')
    .option('--job-ids <ids>', 'in-progress job ids to cancel (comma-separated)')
    .option('--wait-timeout <ms>', 'with --jobs wait: how long running jobs may finish')
    .option('--delete-volume', 'delete the attached network volume too')
    .option('--no-wait', 'print the workflow id and return')
    .action(
      async (
        endpointId: string,
        flags: {
          jobs?: string;
          jobIds?: string;
          waitTimeout?: string;
          deleteVolume?: boolean;
          wait: boolean;
        },
      ) => {
        const mode = parseChoice('--jobs', flags.jobs ?? 'purge', ['purge', 'cancel', 'wait']);
        const jobIds = flags.jobIds ? flags.jobIds.split(',').filter(Boolean) : [];
        const jobs =
          mode === 'purge'
            ? { mode }
            : mode === 'cancel'
              ? { mode, jobIds }
              : { mode, jobIds, timeout: parseInteger('--wait-timeout', flags.waitTimeout ?? '600000') };
        const input: TeardownEndpointInput = {
          endpointId,
          jobs,
          deleteNetworkVolume: Boolean(flags.deleteVolume),
        };
        const handle = await startTeardownEndpoint(await connect(), input, { taskQueue: taskQueue() });
        print(io, flags.wait ? await waitForResult(handle) : { workflowId: handle.workflowId });
      },
    );

  endpoint
    .command('phase')
    .description('the phase of an endpoint lifecycle workflow')
    .argument('<workflow-id>')
    .action(async (workflowId: string) =>
      print(io, await getLifecyclePhase(await connect(), { workflowId })),
    );

  addEndpointLimitsCommand(endpoint, { out: io.out, connect, taskQueue });

  addBatchCommands(program, { out: io.out, err: io.err, errIsTTY: io.errIsTTY === true, connect, taskQueue });
  addPipelineCommands(program, {
    out: io.out,
    err: io.err,
    errIsTTY: io.errIsTTY === true,
    connect,
    taskQueue,
  });
  addScheduleCommands(program, { out: io.out, err: io.err, connect, taskQueue });
  addCostCommands(program, { out: io.out, connect });
  addEventCommands(program, { out: io.out, err: io.err, connect, taskQueue });
  addBulkCommands(program, { out: io.out, connect, taskQueue });
  addDoctorCommand(program, {
    out: io.out,
    env,
    connection: () => cliConnectionWithOrigin(program.opts<ConnectionFlags>(), env),
    // The worker's own variable when no flag says otherwise: doctor checks the worker's queue.
    taskQueue: () =>
      program.getOptionValueSource('taskQueue') === 'default' && env.TEMPORAL_TASK_QUEUE
        ? env.TEMPORAL_TASK_QUEUE
        : taskQueue(),
  });

  return program;
}

/** Runs the CLI; resolves to the exit code (0 done, 1 failed, 2 bad input). */
export async function runCli(
  argv: string[],
  io: CliIo,
  clientFactory?: ClientFactory,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const program = buildProgram(io, clientFactory, env);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'commander.helpDisplayed' || code === 'commander.version') return 0;
    if (typeof code === 'string' && code.startsWith('commander.')) return 2;
    if (error instanceof ValidationError || error instanceof ConfigError) {
      io.err(`error: ${error.message}\n`);
      return 2;
    }
    // A batch over its tolerance already printed its summary; its failure reads like a job's.
    const failure = jobFailureOf(error);
    io.err(
      `error: ${failure ? `${failure.type}: ${failure.message}` : String((error as Error)?.message ?? error)}\n`,
    );
    return 1;
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    errIsTTY: process.stderr.isTTY === true,
  }).then((code) => {
    process.exitCode = code;
    // The Temporal connection keeps the event loop alive; the CLI is done.
    setImmediate(() => process.exit(code));
  });
}
