/**
 * Plumbing shared by the workflow suites on the time-skipping server: a quiet runtime, one
 * workflow bundle per file (bundling is the slow part of Worker.create), a worker of its own task
 * queue around each test body, and the typed failure a workflow ended with.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { expect } from 'vitest';
import { uniqueTaskQueue } from './temporal';
import { sharedWorkflowBundle } from './workflow-bundles';

/**
 * These suites fail workflows on purpose; the SDK would log each at WARN. Errors only, installed
 * once per test file (one process each), before any environment creates the runtime.
 */
export function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Already installed by an earlier suite of this process: its logger stays.
  }
}

/**
 * The bundle of a workflows file (vitest needs the path with its .ts extension), made once per
 * test run and shared by the files that use it (workflow-bundles.ts).
 */
export function bundleWorkflows(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  return sharedWorkflowBundle(workflowsPath);
}

/** Runs `body` while a worker of a task queue of its own serves it. */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  workflowBundle: WorkflowBundleWithSourceMap,
  activities: object,
  body: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = uniqueTaskQueue('wf');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    activities,
  });
  return worker.runUntil(body(taskQueue));
}

/** The ApplicationFailure a failed workflow ended with (its own, or its activity's or child's). */
export async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  let cause: unknown = (error as WorkflowFailedError).cause;
  while (cause instanceof Error && !(cause instanceof ApplicationFailure)) cause = cause.cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}
