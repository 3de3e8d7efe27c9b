/**
 * A route: an ordered list of endpoints running the same worker image (different GPU types, data
 * centres or prices) that a job or a batch names instead of one endpoint. Work goes to the first
 * endpoint with room; a job that waits IN_QUEUE past `queueDelayLimit` while the endpoint has no
 * idle worker is withdrawn there (cancelled, and moved only once the service confirms it never
 * started) and submitted to the next one; a failure the caller calls a capacity failure (an
 * out-of-memory error, say) moves to the next endpoint instead of being retried on the same one.
 *
 * The schema and the pure rules, shared by workflows, activities and the client. Bundled into
 * workflow code: zod, api/schemas and input-rules only.
 */
import { z } from 'zod';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { durationBetween } from './input-rules';

/** Endpoints a route may name: each is a window and a watcher of its own in a batch. */
export const MAX_ROUTE_ENDPOINTS = 8;

/** What a route does not say: a job's wait in a queue before a look, an endpoint's drain. */
export const ROUTE_DEFAULTS = { queueDelayLimit: 60_000, recheckAfter: 60_000 } as const;

const jsonObjectSchema = z.record(z.string(), z.unknown());

export const routeEndpointSchema = z.strictObject({
  endpointId: pathSegmentSchema,
  /** Its share of a batch's window against the others' weights (default: 1 each). */
  weight: z.number().positive({ error: 'must be a number > 0' }).max(1_000).optional(),
  /** Its price per second of a running job: a batch fills the cheaper endpoints first. */
  pricePerSecond: z.number().min(0, { error: 'must be a price >= 0' }).finite().optional(),
  /** The largest share (0 to 1] of a batch's jobs in flight it may hold. */
  maxShare: z.number().gt(0, { error: 'must be above 0 and at most 1' }).max(1).optional(),
  /** Fields set in every job's input on this endpoint (when its handler expects other ones). */
  inputOverrides: jsonObjectSchema.optional(),
});

export const routeSchema = z
  .strictObject({
    endpoints: z
      .array(routeEndpointSchema)
      .min(1, { error: 'must name at least one endpoint' })
      .max(MAX_ROUTE_ENDPOINTS, { error: `must name at most ${MAX_ROUTE_ENDPOINTS} endpoints` }),
    /**
     * How long a job may wait IN_QUEUE while its endpoint shows no idle worker before it is
     * withdrawn and sent to the next endpoint (5 seconds to 1 day).
     */
    queueDelayLimit: durationBetween(5_000, 86_400_000).default(ROUTE_DEFAULTS.queueDelayLimit),
    /**
     * How long an endpoint that stopped taking work (starved, failing for capacity, deleted) is
     * skipped by a batch before it is tried again.
     */
    recheckAfter: durationBetween(1_000, 86_400_000).default(ROUTE_DEFAULTS.recheckAfter),
    /**
     * Failures that mean "not enough capacity here" rather than "this input fails": a job whose
     * error text contains one of these (case-insensitive) moves to the next endpoint instead of
     * being retried on the same one.
     */
    capacityFailures: z.array(z.string().min(1).max(200)).max(20).default([]),
  })
  .refine(
    (route) =>
      new Set(route.endpoints.map((endpoint) => endpoint.endpointId)).size === route.endpoints.length,
    { error: 'must not name an endpoint twice', path: ['endpoints'] },
  )
  .transform((route) => ({ ...route, endpoints: routeOrder(route.endpoints) }));

/** What a caller writes. */
export type RouteInput = z.input<typeof routeSchema>;
/** A parsed route: its endpoints in the order work goes to them (cheapest first when priced). */
export type Route = z.infer<typeof routeSchema>;
export type RouteEndpoint = z.infer<typeof routeEndpointSchema>;

/**
 * The order work goes to the endpoints: by price, cheapest first, when any price is given (an
 * endpoint without one after the priced ones), otherwise as written. Stable: equal prices keep
 * the caller's order.
 */
export function routeOrder<T extends { pricePerSecond?: number | undefined }>(endpoints: readonly T[]): T[] {
  if (!endpoints.some((endpoint) => endpoint.pricePerSecond !== undefined)) return [...endpoints];
  return endpoints
    .map((endpoint, at) => ({ endpoint, at }))
    .sort(
      (a, b) =>
        (a.endpoint.pricePerSecond ?? Number.POSITIVE_INFINITY) -
          (b.endpoint.pricePerSecond ?? Number.POSITIVE_INFINITY) || a.at - b.at,
    )
    .map(({ endpoint }) => endpoint);
}

/** A single endpoint as a route of one (every driver handles both the same way). */
export function singleRoute(endpointId: string): Route {
  return {
    endpoints: [{ endpointId }],
    ...ROUTE_DEFAULTS,
    capacityFailures: [],
  };
}

/** Whether a job's error text is one the caller calls a capacity failure. */
export function isCapacityFailure(error: string | undefined, patterns: readonly string[]): boolean {
  if (error === undefined || patterns.length === 0) return false;
  const text = error.toLowerCase();
  return patterns.some((pattern) => text.includes(pattern.toLowerCase()));
}

/**
 * Jobs queued beyond an endpoint's workers, as a share of them: a worker that frees takes the next
 * job at once instead of waiting for the batch's next page, and no more waits there while another
 * endpoint of the route has idle workers.
 */
export const QUEUED_PER_WORKER = 0.25;

/**
 * The jobs in flight each endpoint of a batch may hold: its weight's share of the window (all of
 * it when no weight is given), capped by its maxShare and, when its maximum worker count is known,
 * by those workers and a quarter more queued (at least one job: an endpoint scaled to no worker
 * still gets one, whose wait in the queue drains it).
 */
export function endpointWindows(
  route: Route,
  maxConcurrency: number,
  workersMax: ReadonlyArray<number | undefined> = [],
): number[] {
  const weighted = route.endpoints.some((endpoint) => endpoint.weight !== undefined);
  const total = route.endpoints.reduce((sum, endpoint) => sum + (endpoint.weight ?? 1), 0);
  return route.endpoints.map((endpoint, at) => {
    const share = weighted ? (endpoint.weight ?? 1) / total : 1;
    const capped = Math.min(share, endpoint.maxShare ?? 1);
    const workers = workersMax[at];
    const byWorkers =
      workers === undefined ? Number.POSITIVE_INFINITY : Math.ceil(workers * (1 + QUEUED_PER_WORKER));
    return Math.max(1, Math.min(Math.floor(maxConcurrency * capped), byWorkers));
  });
}

/** The service's /health counters a route decides on. */
export interface EndpointCapacity {
  idle: number;
  running: number;
  inQueue: number;
  /** Workers the endpoint wants but cannot get (hosts that report it). */
  throttled?: number;
}

/**
 * No idle worker: a job queued past the limit will not start soon here. (A busy endpoint qualifies
 * too: moving queued work to an endpoint with room is what the route is for.)
 */
export function lacksCapacity(capacity: EndpointCapacity): boolean {
  return capacity.idle === 0;
}

/** The job's input on an endpoint: the request with that endpoint's overrides set in its input. */
export function requestFor<T extends { input?: unknown }>(request: T, endpoint: RouteEndpoint): T {
  const overrides = endpoint.inputOverrides;
  if (overrides === undefined) return request;
  const input =
    request.input !== null && typeof request.input === 'object' && !Array.isArray(request.input)
      ? (request.input as Record<string, unknown>)
      : {};
  return { ...request, input: { ...input, ...overrides } };
}

/** One move of a job from an endpoint to another, as results, history and metrics report it. */
export interface RouteHop {
  from: string;
  to: string;
  /** The job withdrawn (or failed) on `from`. */
  jobId: string;
  reason: 'starved' | 'capacity-failure';
  at: number;
}
