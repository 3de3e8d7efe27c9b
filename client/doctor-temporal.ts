/**
 * The doctor's Temporal checks (client/doctor.ts): the frontend, the namespace, the search
 * attributes, the workers polling the task queue, and one small workflow run whose server-stamped
 * start time gives the clock's skew.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { searchAttributeKeys } from '../contracts/search-attributes';
import { connectionOptions, type TemporalConnectionConfig } from './connection';
import { type DoctorCheck, messageOf } from './doctor-check';

/** How far the clock may be off, and how long the worker may take to run the doctor's workflow. */
export interface TemporalCheckLimits {
  maxClockSkewMs: number;
  workflowTimeoutMs: number;
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

export async function checkTemporal(
  config: TemporalConnectionConfig,
  taskQueue: string,
  options: TemporalCheckLimits,
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
        fix: `start the worker (durable-serverless-worker) with TEMPORAL_TASK_QUEUE=${taskQueue} (or the queue in its TEMPORAL_EXTRA_TASK_QUEUES) and the same namespace, or pass --task-queue with one of the worker's queues`,
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
  options: TemporalCheckLimits,
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
