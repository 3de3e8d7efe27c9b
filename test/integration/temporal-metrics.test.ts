/**
 * TEMPORAL_METRICS_BIND on the packaged worker (worker/main.ts as a process, configured from the
 * environment like a deployment): the Temporal SDK's own metrics, which its Rust core serves on
 * that address (prom-client cannot reach them), are there to scrape once the worker polls, and
 * carry neither the API key nor the endpoint.
 */
import { createServer } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type JobStack, spawnWorker, startJobStack } from '../support/integration';

/** A port nothing listens on now (the core binds the address itself, so 0 would hide which). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe("the Temporal SDK's metrics (TEMPORAL_METRICS_BIND, worker process)", () => {
  let stack: JobStack;
  let worker: ReturnType<typeof spawnWorker> | undefined;
  let endpointId: string;
  let metricsUrl: string;

  beforeAll(async () => {
    stack = await startJobStack({ name: 'temporal-metrics', timeScale: 100, worker: false });
    endpointId = stack.endpoint();
    const { TEMPORAL_ADDRESS: _address, ...service } = stack.workerEnv;
    metricsUrl = `http://127.0.0.1:${await freePort()}/metrics`;
    worker = spawnWorker({ ...service, TEMPORAL_METRICS_BIND: new URL(metricsUrl).host });
    await worker.running;
  });

  afterAll(async () => {
    await worker?.kill();
    await stack?.close();
  });

  it('serves temporal_ metrics on the bind address once the worker polls', async () => {
    // The core exports on its own schedule: wait for the worker's pollers to show.
    const text = await eventually(async () => {
      const response = await request(metricsUrl).catch(() => undefined);
      if (response?.statusCode !== 200) return undefined;
      const body = await response.body.text();
      return /^temporal_num_pollers\{/m.test(body) ? body : undefined;
    });
    expect(text).toMatch(/^# TYPE temporal_\w+ \w+$/m);
    expect(text).toContain(`task_queue="${stack.taskQueue}"`);
    expect(text).not.toContain(stack.apiKey);
    expect(text).not.toContain(endpointId);
    // Not the library's registry: its counters are served elsewhere (WORKER_METRICS_PORT).
    expect(text).not.toContain('durable_serverless_');
  });
});
