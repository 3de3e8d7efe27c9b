/**
 * The two kinds of Temporal environment a suite can ask for: the shared dev server (real
 * persistence, real timers) and a time-skipping test server of its own (days pass in
 * milliseconds while the workflow waits).
 */
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { provisionedServers } from '../../scripts/servers';

/** Connects to the dev server started once for the run by global-setup.ts. */
export function devServerEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
}

/**
 * Starts a Java time-skipping server for one file. Its clock is shared by everything on it, so a
 * file's tests on one environment run one after another (vitest's default within a file).
 */
export function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const { testServer } = provisionedServers();
  return TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServer } },
  });
}

/** A task queue of its own per test, so workers of different tests never take each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}
