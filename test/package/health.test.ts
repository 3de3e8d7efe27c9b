/**
 * The worker's health endpoint: liveness that never depends on Temporal, readiness that follows
 * the worker's state and the frontend's answers; then the real worker on the dev server, from
 * start to shutdown.
 */
import { request } from 'undici';
import { describe, expect, inject, it } from 'vitest';
import { loadWorkerConfig } from '../../worker/config';
import { startHealthServer, type WorkerHealthState } from '../../worker/health';
import { createLogger } from '../../worker/logger';
import { runWorker, type WorkerReadyInfo } from '../../worker/run-worker';
import { quietTemporalRuntime } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';
import { captureLines } from '../worker/capture';

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await request(url);
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

describe('startHealthServer', () => {
  it('answers liveness and readiness from the probe; the Temporal check is cached and bounded', async () => {
    let state: WorkerHealthState = 'starting';
    let temporalUp = true;
    let checks = 0;
    const server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      cacheMs: 200,
      timeoutMs: 200,
      probe: {
        state: () => state,
        checkTemporal: async () => {
          checks += 1;
          if (!temporalUp) throw new Error('unavailable');
        },
      },
    });
    try {
      expect(await get(`${server.url}/livez`)).toEqual({
        status: 200,
        body: { status: 'ok', state: 'starting' },
      });
      expect((await get(`${server.url}/readyz`)).status).toBe(503);
      expect(checks).toBe(0);

      state = 'running';
      expect(await get(`${server.url}/readyz`)).toEqual({
        status: 200,
        body: { status: 'ok', state: 'running', temporal: 'reachable' },
      });
      await get(`${server.url}/readyz`);
      expect(checks).toBe(1);

      // Temporal down: not ready, still alive (a cluster outage must not restart every worker).
      temporalUp = false;
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(await get(`${server.url}/readyz`)).toMatchObject({
        status: 503,
        body: { temporal: 'unreachable' },
      });
      expect((await get(`${server.url}/livez`)).status).toBe(200);

      state = 'stopping';
      expect((await get(`${server.url}/readyz`)).status).toBe(503);
      expect((await get(`${server.url}/livez`)).status).toBe(200);
      state = 'failed';
      expect((await get(`${server.url}/livez`)).status).toBe(503);

      expect((await get(`${server.url}/nope`)).status).toBe(404);
      const post = await request(`${server.url}/livez`, { method: 'POST' });
      await post.body.dump();
      expect(post.statusCode).toBe(405);
    } finally {
      await server.close();
    }
  });

  it('a check that hangs counts as down after its deadline', async () => {
    const server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      timeoutMs: 100,
      probe: { state: () => 'running', checkTemporal: () => new Promise(() => undefined) },
    });
    try {
      expect((await get(`${server.url}/readyz`)).status).toBe(503);
    } finally {
      await server.close();
    }
  });
});

describe('the worker with WORKER_HEALTH_PORT', () => {
  it('is alive while it starts, ready once it polls, and closes the endpoint when it stops', async () => {
    quietTemporalRuntime();
    const config = loadWorkerConfig({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('health'),
      SERVERLESS_API_KEY: 'health-test-key',
      SERVERLESS_API_URL: 'http://127.0.0.1:9/v2',
      SERVERLESS_GRAPHQL_URL: 'http://127.0.0.1:9/graphql',
      SERVERLESS_REST_URL: 'http://127.0.0.1:9/v1',
      WORKER_HEALTH_PORT: '0',
    });
    const controller = new AbortController();
    let ready!: (info: WorkerReadyInfo) => void;
    const isReady = new Promise<WorkerReadyInfo>((resolve) => {
      ready = resolve;
    });
    const running = runWorker(config, {
      signal: controller.signal,
      logger: createLogger({ destination: captureLines() }),
      onReady: ready,
    });
    running.catch(() => undefined);
    const info = await Promise.race([isReady, running.then(() => Promise.reject(new Error('stopped')))]);
    expect(info.healthUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await get(`${info.healthUrl}/livez`)).toMatchObject({ status: 200, body: { state: 'running' } });
    expect(await get(`${info.healthUrl}/readyz`)).toMatchObject({
      status: 200,
      body: { state: 'running', temporal: 'reachable' },
    });
    controller.abort();
    await running;
    await expect(request(`${info.healthUrl}/livez`)).rejects.toThrow();
  });
});
