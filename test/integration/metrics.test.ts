/**
 * The worker's /metrics during a real run: dev server, emulator over HTTP (behind a counting
 * proxy), a real worker through runWorker with its webhook gateway, injected 429s and lost
 * webhooks. The worker's counters must agree with what the proxy and the emulator counted, and the
 * scrape must carry no key, no webhook secret, no job id and no workflow id.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, getJobSnapshot, type JobHandle } from '../../client/jobs';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { type CountingProxy, sampleSum, startCountingProxy } from '../observability/counting-proxy';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

const PRICE_PER_SECOND = 0.0004;

describe('worker metrics on a real run (dev server, emulator over HTTP, real worker)', () => {
  let stack: JobStack;
  let proxy: CountingProxy;
  let metricsUrl: string;
  const controller = new AbortController();
  let running: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    stack = await startJobStack({ name: 'metrics', timeScale: 100, webhooks: true, worker: false });
    const emulatorOrigin = new URL(stack.emulator.apiUrl).origin;
    proxy = await startCountingProxy(emulatorOrigin);
    const through = (url: string) => url.replace(emulatorOrigin, proxy.origin);
    const config = loadWorkerConfig({
      ...stack.workerEnv,
      SERVERLESS_API_URL: through(stack.emulator.apiUrl),
      SERVERLESS_GRAPHQL_URL: through(stack.emulator.graphqlUrl),
      SERVERLESS_REST_URL: through(stack.emulator.restUrl),
      WORKER_METRICS_PORT: '0',
      SERVERLESS_PRICES: JSON.stringify({ currency: 'EUR', perSecond: { AMPERE_16: PRICE_PER_SECOND } }),
    });
    let ready!: (url: string) => void;
    const isReady = new Promise<string>((resolve) => {
      ready = resolve;
    });
    running = runWorker(config, {
      signal: controller.signal,
      logger: createLogger({ level: 'error', secrets: [stack.apiKey, stack.workerEnv.WEBHOOK_SECRET ?? ''] }),
      publicUrlFromGateway: true,
      onReady: (info) => ready(info.metricsUrl ?? ''),
    });
    running.catch(() => undefined);
    metricsUrl = await Promise.race([
      isReady,
      running.then(() => Promise.reject(new Error('the worker stopped early'))),
    ]);
  });

  afterAll(async () => {
    controller.abort();
    await running.catch(() => undefined);
    await proxy?.close();
    await stack?.close();
  });

  async function scrape(): Promise<string> {
    const response = await request(`${metricsUrl}/metrics`);
    expect(response.statusCode).toBe(200);
    return response.body.text();
  }

  it('counts calls, 429s, polls, webhooks, submissions, finished runs and cost as the emulator saw them', async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const endpointId = stack.endpoint({ gpuIds: 'AMPERE_16' });
    const start = (n: number): Promise<JobHandle> =>
      stack.start({
        endpointId,
        request: { input: { sleepMs: 2_000, output: `job ${n}` } },
        polling: FAST_POLLING,
      });

    // Every webhook of the first job is lost: polling alone finishes it.
    const stopLosing = stack.control.webhookFaults({ lose: 1 });
    const firstHandle = await start(1);
    const first = await awaitJob(stack.client, { job: firstHandle });
    stopLosing();
    // Then a 429 storm (Retry-After 0: the client's own backoff paces it) on /run and /status.
    const fault = { endpointId, kind: 'status' as const, httpStatus: 429, retryAfterSeconds: 0 };
    stack.control.injectFault({ ...fault, operation: 'run', times: 2 });
    stack.control.injectFault({ ...fault, operation: 'status', times: 3 });
    const rest = await Promise.all(
      [start(2), start(3)].map(async (h) => awaitJob(stack.client, { job: await h })),
    );
    const results = [first, ...rest];
    expect(results.map((r) => r.output)).toEqual(['job 1', 'job 2', 'job 3']);

    const deliveries = stack.control.webhookDeliveries();
    const lost = deliveries.filter((d) => d.error?.includes('lost')).length;
    const delivered = deliveries.filter((d) => d.httpStatus !== undefined).length;
    expect(lost).toBeGreaterThan(0);
    expect(delivered).toBeGreaterThan(0);

    // Webhooks of finished workflows may still be on their way: wait until the gateway's count and
    // the emulator's log agree, then compare the rest in the same scrape.
    const text = await eventually(async () => {
      const now = await scrape();
      const received = sampleSum(now, 'durable_serverless_webhooks_received_total');
      return received ===
        stack.control.webhookDeliveries().filter((d) => d.httpStatus !== undefined).length &&
        received >= delivered
        ? now
        : undefined;
    });
    const sum = (name: string, labels?: Record<string, string>) => sampleSum(text, name, labels);

    // Every HTTP call the worker made crossed the proxy, and no other client uses it.
    expect(sum('durable_serverless_http_calls_total')).toBe(proxy.requests);
    expect(sum('durable_serverless_http_calls_total', { outcome: '429' })).toBe(proxy.byStatus.get(429));
    expect(proxy.byStatus.get(429)).toBe(5);
    expect(sum('durable_serverless_rate_limit_retries_total')).toBe(5);
    expect(sum('durable_serverless_http_calls_total', { operation: 'run', outcome: '429' })).toBe(2);
    expect(sum('durable_serverless_http_calls_total', { operation: 'status', outcome: '429' })).toBe(3);
    expect(sum('durable_serverless_job_polls_total')).toBeGreaterThan(0);
    expect(sum('durable_serverless_job_polls_total')).toBeLessThanOrEqual(
      sum('durable_serverless_http_calls_total', { operation: 'status' }),
    );

    expect(sum('durable_serverless_webhooks_total', { result: 'accepted' })).toBe(
      sum('durable_serverless_webhooks_received_total'),
    );
    expect(sum('durable_serverless_webhooks_total', { result: 'refused' })).toBe(0);

    expect(sum('durable_serverless_job_submissions_total', { outcome: 'accepted' })).toBe(
      stack.control.submissions(endpointId),
    );
    expect(stack.control.submissions(endpointId)).toBe(3);
    expect(sum('durable_serverless_job_submissions_total', { outcome: 'uncertain' })).toBe(0);
    // Each run once, though the poller and a webhook's confirming look may both see it finish (one
    // worker here: with several, each worker that reads a run's final status counts it).
    expect(sum('durable_serverless_job_runs_finished_total')).toBe(3);
    expect(sum('durable_serverless_job_runs_finished_total', { status: 'COMPLETED' })).toBe(3);

    // Each result carries its estimate: executionTime (ms) x the tier's price per second.
    for (const result of results) {
      expect(result.executionTime).toBeGreaterThan(0);
      expect(result.cost).toEqual({
        amount: Math.round(((result.executionTime ?? 0) / 1000) * PRICE_PER_SECOND * 1e6) / 1e6,
        currency: 'EUR',
        tier: 'AMPERE_16',
        seconds: (result.executionTime ?? 0) / 1000,
      });
    }
    // The snapshot carries the same estimate as the result.
    expect((await getJobSnapshot(stack.client, { workflowId: firstHandle.workflowId })).cost).toEqual(
      first.cost,
    );
    const estimated = results.reduce((total, r) => total + (r.cost?.amount ?? 0), 0);
    // The same estimates, each once (summed in another order: equal but for float rounding).
    expect(sum('durable_serverless_estimated_cost_total')).toBeCloseTo(estimated, 9);
    expect(sum('durable_serverless_estimated_cost_total', { tier: 'AMPERE_16' })).toBeCloseTo(estimated, 9);

    // Every job submitted was seen finished: none left in flight.
    expect(sum('durable_serverless_jobs_in_flight')).toBe(0);

    // Nothing secret and nothing unbounded in the scrape.
    expect(text).not.toContain(stack.apiKey);
    expect(text).not.toContain(stack.workerEnv.WEBHOOK_SECRET);
    for (const result of results) {
      expect(text).not.toContain(result.jobId);
    }
    expect(text).not.toContain(endpointId);
    expect(text).not.toMatch(/metrics-job-\d/);
  });
});
