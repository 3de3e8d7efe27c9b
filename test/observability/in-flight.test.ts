/**
 * The jobs-in-flight gauge without a stack: WORKER_METRICS_ENDPOINT_LABELS parsing, the gauge by
 * alias (never by id), and the tracker counting each run once however often its end is seen.
 */
import { describe, expect, it } from 'vitest';
import { createInFlightTracker } from '../../activities/in-flight';
import { loadObservabilityConfig, parseEndpointLabels } from '../../worker/config';
import { createPrometheusMetrics } from '../../worker/metrics';
import { sampleSum } from './counting-proxy';

describe('jobs in flight', () => {
  it('reads endpoint aliases, and names the variable on a bad entry', () => {
    expect(parseEndpointLabels('ep-a:main, ep-b:batch_2')).toEqual({ 'ep-a': 'main', 'ep-b': 'batch_2' });
    for (const bad of ['ep-a', ':main', 'ep-a:', 'ep-a:has space', `ep-a:${'x'.repeat(33)}`]) {
      expect(() => parseEndpointLabels(bad)).toThrow(/WORKER_METRICS_ENDPOINT_LABELS/);
    }
    expect(
      loadObservabilityConfig({ WORKER_METRICS_PORT: '0', WORKER_METRICS_ENDPOINT_LABELS: 'ep-a:main' })
        .metrics,
    ).toEqual({ port: 0, host: '127.0.0.1', endpointLabels: { 'ep-a': 'main' } });
  });

  it('counts every endpoint in the total and only the named ones by alias', async () => {
    const { metrics, registry } = createPrometheusMetrics({
      processMetrics: false,
      endpointLabels: { 'ep-secret-id': 'main' },
    });
    const tracker = createInFlightTracker(metrics);
    tracker.started('ep-secret-id', 'job-1');
    tracker.started('ep-secret-id', 'job-1');
    tracker.started('ep-other', 'job-2');
    let text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(2);
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight_by_endpoint', { endpoint: 'main' })).toBe(1);
    // A final status read twice (a webhook and a poll) ends the run once.
    tracker.finished('ep-secret-id', 'job-1');
    tracker.finished('ep-secret-id', 'job-1');
    // Retried under the same id: in flight again, then finished again.
    tracker.started('ep-other', 'job-2');
    tracker.finished('ep-other', 'job-2');
    tracker.finished('ep-other', 'job-2');
    text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(0);
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight_by_endpoint', { endpoint: 'main' })).toBe(0);
    expect(text).not.toContain('ep-secret-id');
    expect(text).not.toContain('ep-other');
    expect(text).not.toContain('job-');
  });

  it('has no per-endpoint gauge when no endpoint is named', async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    metrics.jobsInFlight('ep-a', 1);
    const text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(1);
    expect(text).not.toContain('jobs_in_flight_by_endpoint');
  });
});
