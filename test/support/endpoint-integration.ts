/**
 * The real stack for the endpoint lifecycle integration suites: the emulator over HTTP, the real
 * api client, the real activities and workflows, on the shared dev server. Nothing is mocked; a
 * test arranges faults through the emulator's control handle only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  type ActivityInterceptorsFactory,
  bundleWorkflowCode,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { inject } from 'vitest';
import { createEndpointActivities } from '../../activities/endpoint';
import { createJobActivities } from '../../activities/job';
import { createServiceClient, type ServiceClient } from '../../api';
import { type Emulator, startEmulator } from '../../emulator';
import { quietRuntime } from './endpoint-harness';
import { devServerEnv, uniqueTaskQueue } from './temporal';

export const API_KEY = 'test-key';
const repoRoot = path.resolve(__dirname, '../..');

export interface Stack {
  emulator: Emulator;
  client: ServiceClient;
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleWithSourceMap;
  resultDir: string;
  close(): Promise<void>;
}

/**
 * Service time runs `timeScale` times faster than real time, so cold starts and job run times
 * cost little; Temporal's own timers stay real.
 */
export async function startStack(timeScale = 20): Promise<Stack> {
  quietRuntime();
  const emulator = await startEmulator({ timeScale });
  const client = createServiceClient({
    apiKey: API_KEY,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  });
  const env = await devServerEnv();
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows/index.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const resultDir = mkdtempSync(path.join(tmpdir(), 'endpoint-it-'));
  return {
    emulator,
    client,
    env,
    bundle,
    resultDir,
    async close() {
      await env.teardown();
      await client.close();
      await emulator.close();
      rmSync(resultDir, { recursive: true, force: true });
    },
  };
}

/** The activities the real worker registers for these workflows. */
export function realActivities(stack: Stack) {
  return {
    ...createJobActivities({ client: stack.client, resultStoreDir: stack.resultDir }),
    ...createEndpointActivities({ client: stack.client }),
  };
}

/** Runs `body` with an in-process worker of a task queue of its own. */
export async function withRealWorker<T>(
  stack: Stack,
  body: (taskQueue: string) => Promise<T>,
  activityInterceptors: ActivityInterceptorsFactory[] = [],
): Promise<T> {
  const taskQueue = uniqueTaskQueue('endpoint-it');
  const worker = await Worker.create({
    connection: stack.env.nativeConnection,
    taskQueue,
    workflowBundle: stack.bundle,
    activities: realActivities(stack),
    interceptors: { activity: activityInterceptors },
  });
  return worker.runUntil(body(taskQueue));
}

/** Polls `check` until it holds (or throws after `timeoutMs`); for waiting on the emulator's state. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The real worker entry point (`npm run worker`, worker/main.ts) as a child process, configured
 * through the environment like a deployment. `kill('SIGKILL')` is a crash: no graceful shutdown,
 * in-flight activities and workflow tasks abandoned.
 */
export function spawnWorker(stack: Stack, taskQueue: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      SERVERLESS_API_KEY: API_KEY,
      SERVERLESS_API_URL: stack.emulator.apiUrl,
      SERVERLESS_GRAPHQL_URL: stack.emulator.graphqlUrl,
      SERVERLESS_REST_URL: stack.emulator.restUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      RESULT_STORE_DIR: stack.resultDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const running = eventually(() => output.includes('worker running'), 180_000).catch((error: Error) => {
    throw new Error(`${error.message}; worker output:\n${output}`);
  });
  return {
    child,
    /** Resolves once the worker polls its task queue. */
    running,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    output: () => output,
  };
}
