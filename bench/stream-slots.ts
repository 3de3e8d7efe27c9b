/**
 * What a streamed job costs a worker in slots, beside jobs that only wait: N hour-long
 * jobs that wait, then N hour-long jobs that stream a chunk a second, on one worker with the SDK's
 * default slots. Prints the activity slots in use in each phase; asserts nothing.
 *
 *   npx tsx bench/stream-slots.ts [--jobs 20]
 *
 * A wait looks once per attempt and holds no slot in between; a stream holds one slot while it
 * streams (`/stream` drains what it returns, so one activity owns the sink). The figure to read is
 * the slots in use per streamed job, and what is left of the 100 for everything else.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { cancelJob, type JobHandle, startJob } from '../client/jobs';
import { type Emulator, startEmulator } from '../emulator';
import {
  inBatches,
  numberArg,
  quietRuntime,
  say,
  sleep,
  startBenchWorker,
  startDevServer,
  until,
} from './support';
import type { ChildFigures, WorkerProcess } from './worker-process';

const JOBS = Math.round(numberArg('jobs', 20));
const HOUR = 3_600_000;
const WINDOW_MS = 15_000;
const POLLING = { initialInterval: 1_000, maxInterval: 5_000, backoffCoefficient: 1.5 };

const slots = (figures: ChildFigures) =>
  `in flight (sampled every 100 ms) max ${figures.inFlightMax}, mean ${figures.inFlightMean.toFixed(1)} ` +
  `of ${figures.activitySlots ?? 100}`;

async function main(): Promise<void> {
  quietRuntime();
  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const taskQueue = `bench-stream-slots-${run}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-${run}`);
  let env: TestWorkflowEnvironment | undefined;
  let emulator: Emulator | undefined;
  let worker: WorkerProcess | undefined;
  const handles: JobHandle[] = [];
  try {
    env = await startDevServer();
    emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 1, coldStartMs: 0, flashBootMs: 0 });
    const { control } = emulator;
    const endpointId = control.createEndpoint(apiKey, {
      name: 'bench-stream-slots',
      templateId: 'scripted',
      workersMin: 2 * JOBS,
      workersMax: 2 * JOBS,
      executionTimeoutMs: 2 * HOUR,
    }).id;
    worker = await startBenchWorker({
      address: env.address,
      taskQueue,
      emulator,
      apiKey,
      webhooks: false,
      resultStoreDir: path.join(workdir, 'results'),
    });
    const client = env.client;
    const running = () => control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS').length;

    const start = (kind: 'wait' | 'stream', count: number) =>
      inBatches(count, 20, (index) =>
        startJob(
          client,
          {
            endpointId,
            request: {
              input:
                kind === 'stream'
                  ? { sleepMs: HOUR, chunks: Array.from({ length: 3600 }, (_, i) => i) }
                  : { sleepMs: HOUR },
              policy: { executionTimeout: 2 * HOUR, ttl: 2 * HOUR },
            },
            polling: POLLING,
            ...(kind === 'stream' ? { stream: { sink: { kind: 'file' as const, name: `s-${index}` } } } : {}),
          },
          { workflowId: `bench-stream-slots-${run}-${kind}-${index}`, taskQueue },
        ),
      );

    say(`stream slots: ${JOBS} waiting jobs, then ${JOBS} streamed jobs, on one worker (SDK default slots)`);
    handles.push(...(await start('wait', JOBS)));
    await until(() => running() === JOBS, 120_000, 100);
    await sleep(POLLING.initialInterval);
    worker.reset();
    await sleep(WINDOW_MS);
    const waiting = await worker.figures();
    say(`  ${JOBS} jobs waiting: ${slots(waiting)}`);

    handles.push(...(await start('stream', JOBS)));
    await until(() => running() === 2 * JOBS, 120_000, 100);
    await sleep(POLLING.initialInterval);
    worker.reset();
    await sleep(WINDOW_MS);
    const streaming = await worker.figures();
    say(`  ${JOBS} waiting + ${JOBS} streaming: ${slots(streaming)}`);
    const perStream = (streaming.inFlightMean - waiting.inFlightMean) / JOBS;
    say(
      `  slots per streamed job: ${perStream.toFixed(2)}; left for other work with ${JOBS} streams: ` +
        `${(streaming.activitySlots ?? 100) - streaming.inFlightMax} of ${streaming.activitySlots ?? 100}`,
    );
  } finally {
    const client = env?.client;
    if (client)
      await Promise.allSettled(handles.map((handle) => cancelJob(client, { workflowId: handle.workflowId })));
    await worker?.stop();
    await emulator?.close();
    await env?.teardown();
    await rm(workdir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('[bench] failed:', error);
    process.exit(1);
  },
);
