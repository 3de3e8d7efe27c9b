/**
 * The real stack for the endpoint lifecycle integration suites: the emulator over HTTP, the real
 * api client, the real activities and workflows, on the shared dev server. Nothing is mocked; a
 * test arranges faults through the emulator's control handle only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  type ActivityInterceptorsFactory,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { createEndpointActivities } from '../../activities/endpoint';
import { createJobActivities } from '../../activities/job';
import { createServiceClient, type ServiceClient } from '../../api';
import { type Emulator, startEmulator } from '../../emulator';
import { quietRuntime } from './endpoint-harness';
import { serviceEnv, spawnWorker } from './integration';
import { devServerEnv, uniqueTaskQueue } from './temporal';
import { LIBRARY_WORKFLOWS, sharedWorkflowBundle } from './workflow-bundles';

export const API_KEY = 'test-key';

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
  const bundle = await sharedWorkflowBundle(LIBRARY_WORKFLOWS);
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

/**
 * The real worker entry point (`npm run worker`, worker/main.ts) as a child process serving
 * `taskQueue` for this stack (see spawnWorker in integration.ts).
 */
export function spawnStackWorker(stack: Stack, taskQueue: string) {
  return spawnWorker({
    ...serviceEnv(stack.emulator, API_KEY),
    TEMPORAL_TASK_QUEUE: taskQueue,
    RESULT_STORE_DIR: stack.resultDir,
  });
}
