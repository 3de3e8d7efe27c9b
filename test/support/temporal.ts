/**
 * The two kinds of Temporal environment a suite can ask for: the shared dev server (real
 * persistence, real timers) and a time-skipping test server of its own (days pass in
 * milliseconds while the workflow waits).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';
import { freePorts } from '../../scripts/prod-temporal';
import { provisionedServers } from '../../scripts/servers';
import { registerSearchAttributes } from './search-attributes';
import { untilServerAnswers } from './server-ready';

/** Connects to the dev server started once for the run by global-setup.ts. */
export function devServerEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
}

/** The SDK's own factory, which createTimeSkipping wraps; it also connects to a server we run. */
type EnvironmentFactory = {
  create(options: {
    server: { type: 'existing' };
    address: string;
    namespace: string;
    supportsTimeSkipping: boolean;
  }): Promise<TestWorkflowEnvironment>;
};

/**
 * Starts a Java time-skipping server for one file. Its clock is shared by everything on it, so a
 * file's tests on one environment run one after another (vitest's default within a file). The
 * server is spawned here and waited for (SERVER_START_LIMIT_MS) rather than by the SDK, whose 5 s
 * start-up limit fails on a loaded machine; teardown stops it. The library's search attributes
 * are registered on it (search-attributes.ts), as on every dev server the tests start.
 */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const { testServer } = provisionedServers();
  const [port] = (await freePorts(1)) as [number];
  const address = `127.0.0.1:${port}`;
  const child = spawn(testServer, [String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  try {
    await untilServerAnswers(address, () =>
      child.exitCode !== null || child.signalCode !== null
        ? `exit ${child.exitCode ?? child.signalCode}: ${stderr}`
        : undefined,
    );
    const env = await (TestWorkflowEnvironment as unknown as EnvironmentFactory).create({
      server: { type: 'existing' },
      address,
      namespace: 'default',
      supportsTimeSkipping: true,
    });
    await registerSearchAttributes(env);
    const closeConnections = env.teardown.bind(env);
    env.teardown = async () => {
      await closeConnections();
      await stop();
    };
    return env;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A task queue of its own per test, so workers of different tests never take each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}
