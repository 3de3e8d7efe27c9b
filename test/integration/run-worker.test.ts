import { spawn } from 'node:child_process';

import { Server } from 'node:net';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker, type WorkerReadyInfo } from '../../worker/run-worker';
import { webhookUrlFor } from '../../worker/webhook-token';
import { stackCheck } from '../../workflows/shared/stack-check';
import { tempDir } from '../support/temp-dir';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';
import { captureLines } from '../worker/capture';

const SECRET = 'run-worker-test-secret-0123456789abcdef';
const API_KEY = 'run-worker-test-api-key-do-not-log';
const repoRoot = path.resolve(__dirname, '../..');

// Nothing listens at the service address: these tests run no job, and the client never calls it.
const baseEnv = () => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  SERVERLESS_API_KEY: API_KEY,
  SERVERLESS_API_URL: 'http://127.0.0.1:9/v2',
  SERVERLESS_GRAPHQL_URL: 'http://127.0.0.1:9/graphql',
  SERVERLESS_REST_URL: 'http://127.0.0.1:9/v1',
  WEBHOOK_PUBLIC_URL: 'https://hooks.example.test',
  WEBHOOK_SECRET: SECRET,
  RESULT_STORE_DIR: tempDir('run-worker-results'),
});

/** Runs a worker until its signal aborts; resolves once it is ready, with its logs and its run. */
async function runUntilReady(config: ReturnType<typeof loadWorkerConfig>) {
  const logs = captureLines();
  const controller = new AbortController();
  let ready!: (info: WorkerReadyInfo) => void;
  const readyInfo = new Promise<WorkerReadyInfo>((resolve) => {
    ready = resolve;
  });
  const running = runWorker(config, {
    signal: controller.signal,
    logger: createLogger({ level: 'debug', destination: logs, secrets: [SECRET, API_KEY] }),
    onReady: ready,
  });
  running.catch(() => undefined); // awaited by the caller; a failure before ready must not go unhandled
  const info = await Promise.race([
    readyInfo,
    running.then(() => Promise.reject(new Error('stopped early'))),
  ]);
  return { logs, controller, running, info };
}

describe('runWorker', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await devServerEnv();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs workflows with the gateway beside it, and stops cleanly when its signal aborts', async () => {
    const taskQueue = uniqueTaskQueue('run-worker');
    const config = loadWorkerConfig({ ...baseEnv(), TEMPORAL_TASK_QUEUE: taskQueue, WEBHOOK_PORT: '0' });
    const { logs, controller, running, info } = await runUntilReady(config);
    expect(info.taskQueue).toBe(taskQueue);
    expect(info.gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const gatewayUrl = info.gatewayUrl!;

    const result = await env.client.workflow.execute(stackCheck, {
      taskQueue,
      workflowId: uniqueTaskQueue('stack-check'),
      args: [{ name: 'runWorker', wait: '10 ms' }],
    });
    expect(result).toBe(
      `hello runWorker, after 10 ms from ${taskQueue} (activity describeWorker for runWorker, attempt 1)`,
    );

    // The gateway beside the worker checks tokens and signals through the worker's connection.
    expect((await request(`${gatewayUrl}/healthz`)).statusCode).toBe(200);
    const late = await request(webhookUrlFor(gatewayUrl, SECRET, 'no-such-workflow'), {
      method: 'POST',
      body: JSON.stringify({ id: 'job-1', status: 'COMPLETED' }),
    });
    expect(late.statusCode).toBe(200);
    await late.body.dump();

    controller.abort();
    await expect(running).resolves.toBeUndefined();
    await expect(request(`${gatewayUrl}/healthz`)).rejects.toThrow();

    const text = logs.text();
    expect(text).toContain('worker running');
    expect(text).toContain('webhook and polling');
    expect(text).toContain('worker stopped');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(API_KEY);
  });

  it('polls each extra task queue with a Temporal worker of its own, and stops them all when its signal aborts', async () => {
    const taskQueue = uniqueTaskQueue('run-worker-main');
    const lanes = [uniqueTaskQueue('run-worker-lane-a'), uniqueTaskQueue('run-worker-lane-b')];
    const config = loadWorkerConfig({
      ...baseEnv(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      TEMPORAL_EXTRA_TASK_QUEUES: lanes.join(','),
      WORKER_HEALTH_PORT: '0',
    });
    const { logs, controller, running, info } = await runUntilReady(config);
    expect(info).toMatchObject({ taskQueue, extraTaskQueues: lanes });
    // Ready once every queue's worker runs.
    const readyz = await request(`${info.healthUrl}/readyz`);
    expect(readyz.statusCode).toBe(200);
    expect(await readyz.body.json()).toMatchObject({ state: 'running' });

    // Each queue's workflow and activity run on that queue: each has a worker polling it.
    for (const queue of [taskQueue, ...lanes]) {
      const result = await env.client.workflow.execute(stackCheck, {
        taskQueue: queue,
        workflowId: uniqueTaskQueue('stack-check'),
        args: [{ name: 'lanes', wait: '10 ms' }],
      });
      expect(result).toBe(
        `hello lanes, after 10 ms from ${queue} (activity describeWorker for lanes, attempt 1)`,
      );
    }

    controller.abort();
    await expect(running).resolves.toBeUndefined();
    const text = logs.text();
    expect(text).toContain('worker running');
    expect(text).toContain(lanes[1]);
    expect(text).toContain('worker stopped');
  });

  it('stops at once when its signal is already aborted', async () => {
    const config = loadWorkerConfig({ ...baseEnv(), TEMPORAL_TASK_QUEUE: uniqueTaskQueue('aborted') });
    const logs = captureLines();
    await expect(
      runWorker(config, { signal: AbortSignal.abort(), logger: createLogger({ destination: logs }) }),
    ).resolves.toBeUndefined();
    expect(logs.text()).toContain('worker stopped');
  });

  /**
   * Watches what runWorker opens while `body` runs: the listeners it starts (the gateway), the
   * Temporal connections it makes and whether each is closed, and the service client's HTTP agent.
   */
  async function watchingResources<T>(body: () => Promise<T>) {
    const listen = vi.spyOn(Server.prototype, 'listen');
    const connect = vi.spyOn(NativeConnection, 'connect');
    const closeConnection = vi.spyOn(NativeConnection.prototype, 'close');
    const closeAgent = vi.spyOn(Agent.prototype, 'close');
    try {
      const outcome = await body().then(
        () => undefined,
        (error: unknown) => error,
      );
      const connections = await Promise.all(
        connect.mock.results.map((result) =>
          (result.value as Promise<NativeConnection>).catch(() => undefined),
        ),
      );
      return {
        outcome,
        listeners: listen.mock.contexts as Server[],
        connections: connections.filter((c): c is NativeConnection => c !== undefined),
        closedConnections: closeConnection.mock.contexts as NativeConnection[],
        // Distinct agents: undici's promise form of close() calls close() again with a callback.
        agentsClosed: new Set(closeAgent.mock.contexts).size,
      };
    } finally {
      vi.restoreAllMocks();
    }
  }

  it('fails, and closes what it opened, when the worker cannot start after the gateway is up', async () => {
    // The namespace does not exist: the connection is made and the gateway listens, then
    // Worker.create fails.
    const config = loadWorkerConfig({
      ...baseEnv(),
      TEMPORAL_NAMESPACE: `no-such-namespace-${Date.now()}`,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('no-namespace'),
      WEBHOOK_PORT: '0',
    });
    const seen = await watchingResources(() =>
      runWorker(config, { logger: createLogger({ destination: captureLines() }) }),
    );
    expect(seen.outcome).toBeInstanceOf(Error);
    expect(String(seen.outcome)).toMatch(/namespace/i);
    // It had opened a connection and a listener...
    expect(seen.connections).toHaveLength(1);
    expect(seen.listeners.length).toBeGreaterThanOrEqual(1);
    // ...and closed them, and the service client.
    expect(seen.closedConnections).toEqual(seen.connections);
    for (const listener of seen.listeners) expect(listener.listening).toBe(false);
    expect(seen.agentsClosed).toBe(1);
  });

  it('fails, and closes what it opened, when Temporal cannot be reached', async () => {
    const config = loadWorkerConfig({ ...baseEnv(), TEMPORAL_ADDRESS: '127.0.0.1:1', WEBHOOK_PORT: '0' });
    const seen = await watchingResources(() =>
      runWorker(config, { logger: createLogger({ destination: captureLines() }) }),
    );
    expect(seen.outcome).toBeInstanceOf(Error);
    // No connection, so no gateway either; the service client it had made is closed.
    expect(seen.connections).toHaveLength(0);
    expect(seen.listeners).toHaveLength(0);
    expect(seen.agentsClosed).toBe(1);
  });
});

type Exit = { code: number | null; stdout: string; stderr: string };

/** Runs an entry point as `npm run` does (tsx), and hands back the child to signal it. */
function start(script: string, vars: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  /** Resolves with the first whole line that contains `text`. */
  const printed = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = stdout
          .split('\n')
          .find((candidate, index, all) => index < all.length - 1 && candidate.includes(text));
        if (line) resolve(line);
      };
      child.stdout.on('data', check);
      check();
      exited.then((exit) =>
        reject(new Error(`exited with ${exit.code} before printing ${text}: ${exit.stderr}`)),
      );
    });
  return { child, exited, printed };
}

describe('npm run worker / npm run gateway (the entry points)', () => {
  it('the worker starts, logs JSON without secrets, and exits 0 on SIGTERM', async () => {
    const taskQueue = uniqueTaskQueue('main');
    const worker = start('worker/main.ts', {
      ...baseEnv(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_PORT: '0',
    });
    await worker.printed('worker running');
    worker.child.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit.code).toBe(0);
    const lines = exit.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { msg: string });
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining([
        'worker running',
        'signal received: shutting down gracefully',
        'worker stopped',
      ]),
    );
    expect(exit.stdout + exit.stderr).not.toContain(SECRET);
    expect(exit.stdout + exit.stderr).not.toContain(API_KEY);
  });

  it('a bad configuration exits 2 naming the variable, not the value', async () => {
    const exit = await start('worker/main.ts', { ...baseEnv(), WEBHOOK_SECRET: 'too-short-secret-value' })
      .exited;
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('WEBHOOK_SECRET: must be at least 32 characters');
    expect(exit.stderr).not.toContain('too-short-secret-value');
    expect(exit.stderr).not.toContain(API_KEY);
  });

  it('the standalone gateway answers webhooks and exits 0 on SIGINT', async () => {
    const gateway = start('worker/gateway-main.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_PORT: '0',
    });
    const line = await gateway.printed('webhook gateway running');
    const { listening } = JSON.parse(line) as { listening: string };
    const forged = await request(`${listening}/webhooks/some-workflow?token=forged`, {
      method: 'POST',
      body: '{}',
    });
    expect(forged.statusCode).toBe(401);
    await forged.body.dump();
    const late = await request(webhookUrlFor(listening, SECRET, 'no-such-workflow'), {
      method: 'POST',
      body: JSON.stringify({ id: 'job-1', status: 'COMPLETED' }),
    });
    expect(late.statusCode).toBe(200);
    await late.body.dump();
    gateway.child.kill('SIGINT');
    const exit = await gateway.exited;
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain('webhook gateway stopped');
    expect(exit.stdout).not.toContain(SECRET);
  });
});
