/**
 * `npm run demo`: the embedded default, end to end on one machine. Starts the local Temporal dev
 * server (with its web UI), the service emulator, the worker and the webhook gateway, runs four
 * jobs (a completion, a retry of a failed job, a cancellation and a streamed job) and a batch of 300
 * items (some failing once and retried, a few failing for good within its tolerance) with a live
 * progress bar, prints each outcome and exits.
 *
 * DEMO_UI_PORT (default 8233) moves the web UI (0: the dev server's own choice, its frontend port
 * + 1000); DEMO_KEEP_OPEN=1 keeps everything running after the jobs, until Ctrl-C, so you can look
 * around in the UI.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { createBatchProgressBar, followBatchProgress } from '../client/progress-bar';
import { startEmulator } from '../emulator';
import {
  awaitBatch,
  awaitJob,
  cancelJob,
  getBatchProgress,
  getJobSnapshot,
  jobFailureOf,
  readBatchResults,
  startBatch,
  startJob,
} from '../index';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { searchAttributeKeys } from '../workflows/shared/search-attributes';
import { ensureServers } from './servers';

const say = (line: string) => console.log(`[demo] ${line}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const { temporalCli } = await ensureServers(say);
  // The demo prints its own story; the SDK's and core's lines only when something is wrong.
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const uiPortSetting = Number(process.env.DEMO_UI_PORT ?? 8233);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      ui: true,
      // Without a port of ours the Temporal CLI puts the UI at its frontend port + 1000.
      ...(uiPortSetting ? { uiPort: uiPortSetting } : {}),
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error'],
    },
  });
  // One service minute per real second: the demo's jobs "run" for minutes in a few seconds.
  const apiKey = randomBytes(24).toString('base64url');
  const emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 60 });
  const uiPort = uiPortSetting || Number(env.address.split(':').pop()) + 1000;
  const workdir = path.join(os.tmpdir(), `durable-serverless-demo-${process.pid}`);
  const stop = new AbortController();
  let worker: Promise<void> | undefined;
  try {
    say(`Temporal dev server at ${env.address}; web UI at http://127.0.0.1:${uiPort}`);
    say(`service emulator at ${emulator.apiUrl} (GraphQL ${emulator.graphqlUrl}, REST ${emulator.restUrl})`);
    const endpoint = (templateId: string) =>
      emulator.control.createEndpoint(apiKey, {
        name: `demo-${templateId}`,
        templateId,
        workersMax: 2,
        flashBootType: 'FLASHBOOT',
      }).id;
    const echo = endpoint('echo');
    const scripted = endpoint('scripted');
    const streaming = endpoint('stream');

    // The gateway takes any free port; the worker hands out webhook URLs on the port it got.
    const config = loadWorkerConfig(
      {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: 'durable-serverless-demo',
        SERVERLESS_API_KEY: apiKey,
        SERVERLESS_API_URL: emulator.apiUrl,
        SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
        SERVERLESS_REST_URL: emulator.restUrl,
        WEBHOOK_PORT: '0',
        WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
        RESULT_STORE_DIR: path.join(workdir, 'results'),
        LOG_LEVEL: 'warn',
      },
      workdir,
    );
    let gatewayUrl: string | undefined;
    const ready = new Promise<void>((resolve) => {
      worker = runWorker(config, {
        signal: stop.signal,
        logger: createLogger({ level: 'warn', secrets: [apiKey] }),
        publicUrlFromGateway: true,
        onReady: (info) => {
          gatewayUrl = info.gatewayUrl;
          resolve();
        },
      });
    });
    await Promise.race([ready, worker]);
    say(`worker on task queue ${config.temporal.taskQueue}, webhook gateway at ${gatewayUrl}`);

    const client = env.client;
    const taskQueue = config.temporal.taskQueue;
    const run = `${Date.now()}`;

    // 1. A job that completes: webhook and polling both armed, the first to notice wins.
    const completed = await awaitJob(client, {
      job: await startJob(
        client,
        { endpointId: echo, request: { input: { prompt: 'hello, durable world' } } },
        { workflowId: `demo-complete-${run}`, taskQueue },
      ),
    });
    say(`1. completed: job ${completed.jobId} -> ${JSON.stringify(completed.output)}`);

    // 2. A job that fails once: the workflow retries it with /retry (same job id, same input).
    const retried = await awaitJob(client, {
      job: await startJob(
        client,
        {
          endpointId: scripted,
          request: {
            input: { failTimes: 1, fail: 'CUDA out of memory', sleepMs: 5_000, output: { ok: true } },
          },
          retry: { maxRetries: 2, initialInterval: '1 second' },
          polling: { initialInterval: 250, maxInterval: 1_000 },
        },
        { workflowId: `demo-retry-${run}`, taskQueue },
      ),
    });
    const retriedJob = emulator.control.job(retried.jobId);
    say(
      `2. failed once, retried: job ${retried.jobId} ${retriedJob?.status} after ${retriedJob?.attempts} attempts -> ${JSON.stringify(retried.output)}`,
    );

    // 3. A job cancelled while it runs: the workflow cancels the remote job, then ends cancelled.
    const cancelId = `demo-cancel-${run}`;
    const handle = await startJob(
      client,
      {
        endpointId: scripted,
        request: { input: { hang: true } },
        polling: { initialInterval: 250, maxInterval: 1_000 },
      },
      { workflowId: cancelId, taskQueue },
    );
    for (let i = 0; i < 100; i++) {
      // The start as the workflow's wait last saw it (the workflow itself records the job's end).
      const snapshot = await getJobSnapshot(client, { workflowId: cancelId, live: true });
      if ((snapshot.live?.status ?? snapshot.status) === 'IN_PROGRESS') break;
      await sleep(200);
    }
    await cancelJob(client, { workflowId: cancelId });
    try {
      await handle.result();
      say('3. cancellation: the workflow completed instead (unexpected)');
    } catch (error) {
      const cancelled = error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure;
      const snapshot = await getJobSnapshot(client, { workflowId: cancelId });
      const remote = snapshot.jobId ? emulator.control.job(snapshot.jobId)?.status : undefined;
      say(
        `3. cancelled: workflow ${cancelled ? 'CANCELLED' : String(error)}, remote job ${snapshot.jobId} ${remote}`,
      );
    }

    // 4. A streamed job: chunks go to a file sink as they come, never into workflow history.
    const streamed = await awaitJob(client, {
      job: await startJob(
        client,
        {
          endpointId: streaming,
          request: {
            input: { prompt: 'tell me a story', text: 'once upon a time a job ran durably to the end' },
          },
          stream: { sink: { kind: 'file', name: `demo-${run}.jsonl` } },
        },
        { workflowId: `demo-stream-${run}`, taskQueue },
      ),
    });
    const streamFile = path.join(config.resultStoreDir, 'streams', `demo-${run}.jsonl`);
    const lines = (await readFile(streamFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    const text = lines
      .map((line) => (JSON.parse(line) as { output?: { text?: string[] } }).output?.text?.join('') ?? '')
      .join('');
    say(`4. streamed: job ${streamed.jobId}, ${lines.length} chunks to the sink: "${text.trim()}"`);

    // 5. A batch: 300 items on one endpoint in a sliding window, a few workflow activities for all
    // of them. Every 10th item fails once (retried with /retry); items 7, 123 and 251 fail for good,
    // within a tolerance of 5. Outputs go to the results file, never into history.
    const batchEndpoint = emulator.control.createEndpoint(apiKey, {
      name: 'demo-batch',
      templateId: 'scripted',
      workersMax: 30,
      flashBootType: 'FLASHBOOT',
    }).id;
    const forGood = new Set([7, 123, 251]);
    const items = Array.from({ length: 300 }, (_, i) => ({
      input: {
        sleepMs: 30_000 + (i % 7) * 10_000,
        output: { item: i },
        ...(forGood.has(i) ? { fail: 'bad input' } : i % 10 === 0 ? { failTimes: 1, fail: 'flaky' } : {}),
      },
    }));
    const batchId = `demo-batch-${run}`;
    const batch = await startBatch(
      client,
      {
        endpointId: batchEndpoint,
        items: { inline: items },
        maxConcurrency: 60,
        failureTolerance: { count: 5 },
        // The emulator runs 60 times faster than real time, and the lease is service time: an hour
        // of it is the real minute a production lease gives its extension.
        job: { retry: { maxRetries: 1, initialInterval: '1 second' }, submitLease: '1 hour' },
      },
      { workflowId: batchId, taskQueue },
    );
    say(`5. batch ${batchId}: 300 items, at most 60 in flight`);
    const outcome = awaitBatch(client, { batch });
    await followBatchProgress(
      () => getBatchProgress(client, { batch: batchId }),
      createBatchProgressBar((chunk) => process.stderr.write(chunk), {
        isTTY: process.stderr.isTTY === true,
      }),
      outcome,
    );
    const summary = await outcome;
    let resultLines = 0;
    let matching = 0;
    for await (const line of readBatchResults(client, { batch: summary, store: config.resultStoreDir })) {
      resultLines += 1;
      if (line.status === 'COMPLETED' && (line.output as { item?: number })?.item === line.index)
        matching += 1;
    }
    say(
      `5. batch done: ${summary.counts.completed} completed, ${summary.counts.failed ?? 0} failed for good ` +
        `(tolerated), ${summary.submissions} submissions for ${summary.total} items, ${resultLines} result lines ` +
        `(${matching} outputs matching their item)`,
    );

    say(
      `all four jobs and the batch are in the Temporal UI: http://127.0.0.1:${uiPort}/namespaces/default/workflows`,
    );
    if (process.env.DEMO_KEEP_OPEN === '1') {
      say('DEMO_KEEP_OPEN=1: running until Ctrl-C');
      await new Promise((resolve) => process.once('SIGINT', resolve));
    }
  } catch (error) {
    const failure = jobFailureOf(error);
    throw failure ? new Error(`${failure.type}: ${failure.message}`) : error;
  } finally {
    stop.abort();
    await worker?.catch(() => undefined);
    await emulator.close();
    await env.teardown();
    await rm(workdir, { recursive: true, force: true });
  }
  say('done');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('[demo] failed:', error);
    process.exit(1);
  },
);
