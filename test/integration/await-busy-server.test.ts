/**
 * Awaiting more jobs at once than the server allows long polls: every wait on a workflow's result
 * holds one (GetWorkflowExecutionHistory with waitNewEvent), and the frontend admits at most
 * `frontend.namespaceCount` of them per namespace (1,200 by default), refusing the rest with
 * RESOURCE_EXHAUSTED ("namespace concurrent poller limit exceeded"). A benchmark awaiting 10,000
 * jobs at once saw its completed jobs reported failed once the SDK's own retries ran out.
 *
 * The file starts a dev server of its own with a small limit (test/support/dev-server-process.ts,
 * `--dynamic-config-value frontend.namespaceCount=20`), the emulator in this process and the real
 * worker (runWorker, configured from the environment as `npm run worker` is); nothing is mocked. The
 * client has the SDK's gRPC retries off (one attempt), so a refusal reaches the caller at once:
 *
 * - the control: a raw `handle.result()` on each of 40 running jobs: 20 are admitted, the rest are
 *   refused (isServerBusy);
 * - the fix: `awaitJob` on each of the same 40 jobs (client/workflow-result.ts waits refusals out):
 *   every one returns its own job's result.
 *
 * The server counts this limit per API method (server 1.29: "applied per poller type"), so the
 * worker's task-queue polls (at most 10 of each kind with the SDK's defaults) neither use up nor are
 * refused by the history polls' budget; the test reads the server's own refusal counts from its
 * metrics. Synchronisation is on events only: the jobs sleep an hour of service time and finish
 * only when the test moves the emulator's clock, after the refusals were seen (by the client for the
 * control, in the server's metrics for the fix).
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, type JobHandle, type JobResult, startJob } from '../../client/jobs';
import { isServerBusy } from '../../client/workflow-result';
import { type Emulator, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { type DevServerProcess, startDevServerProcess } from '../support/dev-server-process';
import {
  eventually,
  HOUR_MS,
  hourLongJob,
  jobsInProgress,
  quietTemporalRuntime,
  serviceEnv,
} from '../support/integration';
import { createTempDir, removeTempDir } from '../support/temp-dir';

const repoRoot = path.resolve(__dirname, '../..');

/** The server's `frontend.namespaceCount`: concurrent long polls per namespace (and per API method). */
const LIMIT = 20;
/** Twice the limit: half of the waits cannot be admitted at once. */
const JOBS = 2 * LIMIT;
/** At least 1 s: each look is a server-side retry of the wait activity, holding no worker slot. */
const POLLING = { initialInterval: 1_000, maxInterval: 2_000, backoffCoefficient: 1.5 };

/**
 * The server's count of refused long polls (ConcurrentLimit) of one operation in the `default`
 * namespace, from its Prometheus metrics. A wait on a result is `PollWorkflowExecutionHistory` there.
 * The server reports its metrics about once a second: a count may lag the refusals it counts.
 */
async function refusedPolls(metricsUrl: string, operation: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (
      line.startsWith('service_errors_resource_exhausted{') &&
      line.includes('namespace="default"') &&
      line.includes(`operation="${operation}"`) &&
      line.includes('resource_exhausted_cause="ConcurrentLimit"')
    ) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

describe(`awaiting ${JOBS} jobs at once on a dev server that admits ${LIMIT} long polls per namespace`, () => {
  let server: DevServerProcess | undefined;
  let emulator: Emulator | undefined;
  let connection: Connection | undefined;
  let resultDir: string | undefined;
  const stopWorker = new AbortController();
  let worker: Promise<void> = Promise.resolve();
  let client: Client;
  let apiKey: string;
  let taskQueue: string;

  beforeAll(async () => {
    quietTemporalRuntime();
    server = await startDevServerProcess('await-busy', {
      dynamicConfig: { 'frontend.namespaceCount': LIMIT },
    });
    apiKey = `sk-it-${randomUUID()}`;
    // Service time is real time; the jobs end only when the test moves the clock (control.advance).
    emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }], coldStartMs: 0 });
    resultDir = createTempDir('await-busy');
    taskQueue = `await-busy-${randomUUID()}`;
    const config = loadWorkerConfig(
      {
        ...serviceEnv(emulator, apiKey),
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        RESULT_STORE_DIR: resultDir,
        WORKER_SHUTDOWN_GRACE_MS: '500',
      },
      repoRoot,
    );
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    worker = runWorker(config, {
      signal: stopWorker.signal,
      logger: createLogger({ level: 'error', secrets: [apiKey] }),
      onReady: () => ready(),
    });
    worker.catch(() => undefined); // awaited in afterAll; a failure before ready is raised below
    await Promise.race([isReady, worker.then(() => Promise.reject(new Error('the worker stopped early')))]);

    // The caller's client, with the SDK's gRPC retries off: a refusal reaches the caller at once.
    connection = await Connection.connect({
      address: server.address,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 1 }))],
    });
    client = new Client({ connection, namespace: 'default' });
  }, 180_000);

  afterAll(async () => {
    stopWorker.abort();
    try {
      await worker;
    } finally {
      await connection?.close();
      await emulator?.close();
      await server?.close();
      if (resultDir) removeTempDir(resultDir);
    }
  }, 120_000);

  it('raw result() calls past the limit are refused; awaitJob on every job returns each result', async () => {
    const live = emulator as Emulator;
    const { control } = live;
    const metricsUrl = (server as DevServerProcess).metricsUrl;
    const startedAt = Date.now();

    const endpointId = control.createEndpoint(apiKey, {
      name: 'await-busy',
      templateId: 'scripted',
      workersMin: 0,
      workersMax: JOBS,
    }).id;
    const handles: JobHandle[] = await Promise.all(
      Array.from({ length: JOBS }, (_, index) =>
        startJob(client, hourLongJob(endpointId, index, POLLING), {
          workflowId: `await-busy-${index}-${randomUUID()}`,
          taskQueue,
        }),
      ),
    );
    const inProgress = () => control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS').length;
    // Every job submitted and running: every workflow is waiting on its job, none can end.
    await jobsInProgress(control, endpointId, JOBS, {
      hangGuardMs: 240_000,
      workflows: { client, ids: handles.map((handle) => handle.workflowId) },
    });

    // --- The control: a raw result() per job, with no retries. -----------------------------------
    const abortRaw = new AbortController();
    setMaxListeners(JOBS, abortRaw.signal); // one listener per call
    const rawOutcomes: Array<'refused' | 'returned' | Error> = [];
    const raw = handles.map((handle) =>
      (connection as Connection)
        .withAbortSignal(abortRaw.signal, () => handle.result())
        .then(
          () => {
            rawOutcomes.push('returned');
          },
          (error: Error) => {
            if (!abortRaw.signal.aborted) rawOutcomes.push(isServerBusy(error) ? 'refused' : error);
          },
        ),
    );
    // The server admits LIMIT of them (they wait on their jobs) and refuses the others at once.
    await eventually(() => rawOutcomes.length >= JOBS - LIMIT, 60_000);
    const controlOutcomes = [...rawOutcomes];
    // Ends the admitted waits (a cancelled call gives its slot back).
    abortRaw.abort();
    await Promise.all(raw);
    const rawRefused = controlOutcomes.filter((outcome) => outcome === 'refused').length;
    expect(rawRefused).toBeGreaterThanOrEqual(1);
    // Nothing but refusals came back: no job had ended, and no other error.
    expect(controlOutcomes.filter((outcome) => outcome !== 'refused')).toEqual([]);
    // Exactly the waits past the limit were refused.
    expect(rawRefused).toBe(JOBS - LIMIT);
    // The server counted those refusals (its metrics lag by up to a reporting interval).
    const afterControl = await eventually(async () => {
      const count = await refusedPolls(metricsUrl, 'PollWorkflowExecutionHistory');
      return count >= rawRefused ? count : undefined;
    }, 30_000);
    expect(inProgress()).toBe(JOBS);

    // --- The fix: awaitJob on every job, on the same client. --------------------------------------
    let settled = 0;
    const awaits: Array<Promise<JobResult>> = handles.map((handle) =>
      awaitJob(client, { job: handle }).finally(() => {
        settled += 1;
      }),
    );
    for (const wait of awaits) wait.catch(() => undefined); // each is awaited below
    // The awaits have piled up past the limit: the server refused at least a round of them.
    const refusedBeforeRelease = await eventually(async () => {
      const count = (await refusedPolls(metricsUrl, 'PollWorkflowExecutionHistory')) - afterControl;
      return count >= JOBS - LIMIT ? count : undefined;
    }, 60_000);
    // Refused, and still waiting: none of them threw (nor could return: every job is still running).
    expect(settled).toBe(0);
    expect(inProgress()).toBe(JOBS);

    // The hour passes: every job completes, and every wait returns its own job's result.
    control.advance(HOUR_MS);
    const results = await Promise.all(awaits);
    results.forEach((result, index) => {
      expect(result).toMatchObject({ endpointId, status: 'COMPLETED', output: { index } });
      // Sent again only after a submit whose answer was lost, once its lease had run out.
      expect(result.submissions - 1).toBe(result.uncertainSubmits);
    });
    expect(new Set(results.map((result) => result.jobId)).size).toBe(JOBS);
    expect(control.submissions(endpointId)).toBe(JOBS);

    const refusedInFix = (await refusedPolls(metricsUrl, 'PollWorkflowExecutionHistory')) - afterControl;
    const workerRefused =
      (await refusedPolls(metricsUrl, 'PollWorkflowTaskQueue')) +
      (await refusedPolls(metricsUrl, 'PollActivityTaskQueue'));
    console.log(
      `[await-busy] limit ${LIMIT}, ${JOBS} jobs: raw result() refused ${rawRefused} (none returned); ` +
        `awaitJob: ${refusedBeforeRelease} refusals before the jobs were released, ${refusedInFix} by the end ` +
        `(server metrics, which lag by a second or so), all ${JOBS} returned; worker task-queue polls refused: ` +
        `${workerRefused}; ` +
        `${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
    );
  }, 420_000);
});
