import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createPrometheusMetrics, type MetricsServer, startMetricsServer } from '../../worker/metrics';
import { sampleSum } from './counting-proxy';

describe('the metrics endpoint', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves the counters in the Prometheus text format on /metrics, and 404 elsewhere', async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    metrics.httpCall('run', '2xx', 0.02);
    metrics.httpCall('run', '429', 0.01);
    metrics.rateLimitDelay('run', 1_500);
    metrics.webhook({ accepted: false, reason: 'bad-token' });
    metrics.submission('uncertain');
    metrics.estimatedCost('AMPERE_16', 0.25);
    server = await startMetricsServer({ registry, host: '127.0.0.1', port: 0 });

    const response = await request(`${server.url}/metrics`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    const text = await response.body.text();
    expect(sampleSum(text, 'durable_serverless_http_calls_total', { operation: 'run' })).toBe(2);
    expect(sampleSum(text, 'durable_serverless_rate_limit_delay_seconds_total')).toBe(1.5);
    expect(
      sampleSum(text, 'durable_serverless_webhooks_total', { result: 'refused', reason: 'bad-token' }),
    ).toBe(1);
    expect(sampleSum(text, 'durable_serverless_webhooks_received_total')).toBe(1);
    expect(sampleSum(text, 'durable_serverless_job_submissions_total', { outcome: 'uncertain' })).toBe(1);
    expect(sampleSum(text, 'durable_serverless_estimated_cost_total', { tier: 'AMPERE_16' })).toBe(0.25);

    const other = await request(`${server.url}/other`);
    expect(other.statusCode).toBe(404);
    await other.body.dump();
  });

  it('keeps two registries apart (two workers in one process count separately)', async () => {
    const a = createPrometheusMetrics({ processMetrics: false });
    const b = createPrometheusMetrics({ processMetrics: false });
    a.metrics.poll();
    a.metrics.poll();
    b.metrics.poll();
    expect(sampleSum(await a.registry.metrics(), 'durable_serverless_job_polls_total')).toBe(2);
    expect(sampleSum(await b.registry.metrics(), 'durable_serverless_job_polls_total')).toBe(1);
  });
});
