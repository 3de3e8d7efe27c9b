import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { provisionedServers } from '../../scripts/servers';
import { createEventMetrics } from '../../worker/event-metrics';
import { createPrometheusMetrics } from '../../worker/metrics';

const root = path.join(__dirname, '../..');
const serviceEnv = {
  SERVERLESS_API_KEY: 'k',
  SERVERLESS_API_URL: 'https://api.example.test/v2',
  SERVERLESS_GRAPHQL_URL: 'https://api.example.test/graphql',
  SERVERLESS_REST_URL: 'https://rest.example.test/v1',
  // docker-compose.yml has no default Grafana admin password: it refuses to start without one.
  GRAFANA_ADMIN_PASSWORD: 'a-password-of-the-operator',
};

describe('the metrics profile and the Grafana dashboard', () => {
  it('docker-compose.yml with --profile metrics is valid for the Compose CLI and runs Prometheus and Grafana', () => {
    const { composeCli } = provisionedServers();
    if (!composeCli) throw new Error('the Compose CLI is not provisioned: run npm run provision');
    const run = (args: string[]) =>
      spawnSync(composeCli, ['-f', path.join(root, 'docker-compose.yml'), '--profile', 'metrics', ...args], {
        encoding: 'utf8',
        cwd: root,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...serviceEnv },
      });
    const check = run(['config', '-q']);
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    const services = run(['config', '--services']).stdout.split('\n');
    expect(services).toEqual(expect.arrayContaining(['prometheus', 'grafana', 'worker']));
  });

  it('queries only metrics the library defines (or the Temporal SDK exports)', async () => {
    const dashboard = JSON.parse(readFileSync(path.join(root, 'deploy/grafana-dashboard.json'), 'utf8'));
    // Every metric a process can export: the per-endpoint gauge exists once an endpoint is named,
    // and the event ingress's counters join the gateway's registry.
    const { registry } = createPrometheusMetrics({ endpointLabels: { 'ep-any': 'any' } });
    createEventMetrics(registry);
    const defined = new Set(
      (await registry.getMetricsAsJSON()).flatMap((m) =>
        String(m.type) === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name],
      ),
    );
    const used = dashboard.panels.flatMap((panel: { targets: Array<{ expr: string }> }) =>
      panel.targets.flatMap((t) => t.expr.match(/durable_serverless_\w+/g) ?? []),
    );
    expect(used.length).toBeGreaterThan(5);
    expect(used).toEqual(
      expect.arrayContaining([
        'durable_serverless_events_total',
        'durable_serverless_jobs_in_flight_by_endpoint',
        'durable_serverless_job_runs_finished_total',
        'durable_serverless_estimated_cost_total',
      ]),
    );
    for (const name of used) expect(defined, name).toContain(name);
  });
});
