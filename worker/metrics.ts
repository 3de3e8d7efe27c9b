/**
 * The library's metrics in Prometheus form: the LibraryMetrics interface (api/metrics.ts) backed by
 * prom-client counters in a registry of its own (never prom-client's global one, so two workers in
 * one process, as in the tests, count apart), and a plain node:http server answering
 * `GET /metrics` in the text format. The Temporal SDK's own metrics are exported by its Rust core on
 * a bind address of their own (TEMPORAL_METRICS_BIND, see worker/main.ts): prom-client cannot
 * reach them.
 *
 * Labels come from fixed sets only (see api/metrics.ts): no job id, workflow id, URL or key.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { LibraryMetrics } from '../api/metrics';

export const METRIC_PREFIX = 'durable_serverless_';

export interface PrometheusMetrics {
  metrics: LibraryMetrics;
  registry: Registry;
}

/** The counters, registered in `registry` (a new one by default). */
export function createPrometheusMetrics(
  options: {
    registry?: Registry;
    processMetrics?: boolean;
    /**
     * Endpoint id -> alias (WORKER_METRICS_ENDPOINT_LABELS): only these endpoints get a gauge of
     * their own, labelled by alias. Ids are never labels (unbounded, and not for a dashboard).
     */
    endpointLabels?: Readonly<Record<string, string>>;
  } = {},
): PrometheusMetrics {
  const registry = options.registry ?? new Registry();
  // Node's own (heap, event loop lag, CPU): cheap, and what an operator looks at first.
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const p = METRIC_PREFIX;
  const httpCalls = new Counter({
    name: `${p}http_calls_total`,
    help: 'HTTP attempts to the service, by operation and outcome (2xx, 4xx, 429, 5xx, error: no answer)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
  });
  const httpSeconds = new Histogram({
    name: `${p}http_call_duration_seconds`,
    help: 'Duration of HTTP attempts to the service, by operation',
    labelNames: ['operation'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 90],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: `${p}rate_limit_retries_total`,
    help: '429 answers the client waited out and retried, by operation',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const rateLimitDelay = new Counter({
    name: `${p}rate_limit_delay_seconds_total`,
    help: 'Time spent waiting before retrying 429 answers, by operation',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const polls = new Counter({
    name: `${p}job_polls_total`,
    help: 'Looks at /status by the wait activity',
    registers: [registry],
  });
  const webhooksReceived = new Counter({
    name: `${p}webhooks_received_total`,
    help: 'Webhook calls that reached the gateway',
    registers: [registry],
  });
  const webhooks = new Counter({
    name: `${p}webhooks_total`,
    help: 'Webhook calls by result (accepted, refused) and reason',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
  });
  const submissions = new Counter({
    name: `${p}job_submissions_total`,
    help: 'Submits (/run, /runsync) by outcome: accepted, refused (certainly not acted on), uncertain',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const runsFinished = new Counter({
    name: `${p}job_runs_finished_total`,
    help: 'Remote job runs seen in a final status, by status',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const cost = new Counter({
    name: `${p}estimated_cost_total`,
    help: 'Estimated cost of finished runs (executionTime x configured price), by GPU tier',
    labelNames: ['tier'] as const,
    registers: [registry],
  });

  const batchItems = new Counter({
    name: `${p}batch_items_finished_total`,
    help: 'Batch items by final outcome (completed, failed, timed_out, expired, cancelled, uncertain, rejected)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const routeWithdrawals = new Counter({
    name: `${p}route_withdrawals_total`,
    help: 'Queued jobs of starved endpoints looked at to be withdrawn, by outcome (withdrawn, stopped, started)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const routeHops = new Counter({
    name: `${p}route_hops_total`,
    help: 'Jobs submitted to another endpoint of their route, by reason (starved, capacity-failure)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: `${p}jobs_in_flight`,
    help: 'Remote jobs submitted or retried and not yet seen finished, as this process saw them (sum over workers)',
    registers: [registry],
  });
  const aliases = new Map(Object.entries(options.endpointLabels ?? {}));
  const inFlightByEndpoint =
    aliases.size === 0
      ? undefined
      : new Gauge({
          name: `${p}jobs_in_flight_by_endpoint`,
          help: 'jobs_in_flight for the endpoints named in WORKER_METRICS_ENDPOINT_LABELS, by their alias',
          labelNames: ['endpoint'] as const,
          registers: [registry],
        });
  // The endpoint's gate: an alias for the endpoints WORKER_METRICS_ENDPOINT_LABELS names, `other` for
  // the rest; the fairness key as the workloads name it ('' for none: a bounded set of tenants).
  const endpointLabel = (endpointId: string) => aliases.get(endpointId) ?? 'other';
  const grants = new Counter({
    name: `${p}gate_requests_total`,
    help: "Requests submits asked their endpoint's gate room for, by endpoint alias, fairness key and outcome (granted: sent now; refused: no room in time, planned again; ungated: the gate did not answer, sent under this process's limiter)",
    labelNames: ['endpoint', 'fairness_key', 'outcome'] as const,
    registers: [registry],
  });
  const waiting = new Gauge({
    name: `${p}gate_requests_waiting`,
    help: "Requests of this process waiting at their endpoint's gate, by endpoint alias and fairness key",
    labelNames: ['endpoint', 'fairness_key'] as const,
    registers: [registry],
  });
  // Named endpoints show 0 from the start rather than nothing.
  for (const alias of aliases.values()) inFlightByEndpoint?.set({ endpoint: alias }, 0);

  const metrics: LibraryMetrics = {
    httpCall(operation, outcome, seconds) {
      httpCalls.inc({ operation, outcome });
      httpSeconds.observe({ operation }, seconds);
    },
    rateLimitDelay(operation, delayMs) {
      rateLimited.inc({ operation });
      rateLimitDelay.inc({ operation }, delayMs / 1000);
    },
    poll: () => polls.inc(),
    webhook(verdict) {
      webhooksReceived.inc();
      webhooks.inc({ result: verdict.accepted ? 'accepted' : 'refused', reason: verdict.reason });
    },
    submission: (outcome) => submissions.inc({ outcome }),
    jobRunFinished: (status) => runsFinished.inc({ status }),
    estimatedCost: (tier, amount) => cost.inc({ tier }, amount),
    batchItemFinished: (outcome) => batchItems.inc({ outcome }),
    routeWithdrawal: (outcome) => routeWithdrawals.inc({ outcome }),
    routeHop: (reason) => routeHops.inc({ reason }),
    sendGrant(endpointId, fairnessKey, outcome, requests) {
      grants.inc({ endpoint: endpointLabel(endpointId), fairness_key: fairnessKey, outcome }, requests);
    },
    sendWaiting(endpointId, fairnessKey, delta) {
      waiting.inc({ endpoint: endpointLabel(endpointId), fairness_key: fairnessKey }, delta);
    },
    jobsInFlight(endpointId, delta) {
      inFlight.inc(delta);
      const alias = aliases.get(endpointId);
      if (alias !== undefined) inFlightByEndpoint?.inc({ endpoint: alias }, delta);
    },
  };
  return { metrics, registry };
}

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464; the scrape path is /metrics. */
  url: string;
  close(): Promise<void>;
}

/** `GET /metrics` in the Prometheus text format; anything else is a 404. */
export async function startMetricsServer(options: {
  registry: Registry;
  host: string;
  port: number;
}): Promise<MetricsServer> {
  const { registry } = options;
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
