/**
 * The route activities (contracts/route.ts): how much room an endpoint has (/health), and the
 * withdrawal of queued jobs from an endpoint that starves them. A job is cancelled only while
 * /status shows it IN_QUEUE, and it counts as withdrawn only once /status confirms it ended
 * CANCELLED without running (executionTime 0): a job that started meanwhile is left where it runs,
 * so moving work never runs one job twice.
 */
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import type { ServiceClient } from '../api/client';
import { ServiceError } from '../api/errors';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { type EndpointCapacity, MAX_ROUTE_ENDPOINTS } from '../contracts/route';
import { parsed, toApplicationFailure } from './failures';
import { createInFlightTracker } from './in-flight';

export interface RouteActivityDeps {
  client: ServiceClient;
  metrics?: LibraryMetrics;
}

const endpointCapacityInputSchema = z.strictObject({ endpointId: pathSegmentSchema });

const endpointWorkersInputSchema = z.strictObject({
  endpointIds: z.array(pathSegmentSchema).min(1).max(MAX_ROUTE_ENDPOINTS),
});

const withdrawInputSchema = z.strictObject({
  endpointId: pathSegmentSchema,
  /** [item index, job id] of each queued job to withdraw. */
  jobs: z
    .array(z.tuple([z.int().min(0), z.string().min(1).max(1024)]))
    .min(1)
    .max(1_000),
});

export type WithdrawJobsInput = z.input<typeof withdrawInputSchema>;

/**
 * What became of one job: `withdrawn` (cancelled, confirmed never started), `stopped` (cancelled
 * as it started: it ran only that long), `started` (seen running: left there), `ended` (it
 * finished first: its watcher reports it), `gone` (the service no longer knows it).
 */
export type WithdrawalOutcome = 'withdrawn' | 'stopped' | 'started' | 'ended' | 'gone';

export interface WithdrawJobsResult {
  results: Array<{ i: number; jobId: string; outcome: WithdrawalOutcome }>;
}

/** What an attempt has done, in its heartbeat: a retried attempt goes on from there. */
interface WithdrawProgress extends WithdrawJobsResult {
  /** The job whose /cancel was about to be sent. */
  cancelling?: string;
}

export function createRouteActivities(deps: RouteActivityDeps) {
  const { client } = deps;
  const metrics = deps.metrics ?? noopMetrics;
  // A withdrawn job leaves the in-flight gauge here; the sum over trackers stays right.
  const inFlight = createInFlightTracker(metrics);

  async function call<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T | 'gone'> {
    const signal = Context.current().cancellationSignal;
    try {
      return await fn(signal);
    } catch (error) {
      if (error instanceof ServiceError && error.kind === 'NotFound') return 'gone';
      throw toApplicationFailure(error, { jobOperation: true, signal });
    }
  }

  /**
   * `cancelledBefore`: an earlier attempt sent this job's /cancel and died before its answer was
   * confirmed, so a CANCELLED status now is that cancel's, not someone else's.
   */
  async function withdrawOne(
    endpointId: string,
    jobId: string,
    cancelledBefore: boolean,
    beforeCancel: () => void,
  ): Promise<WithdrawalOutcome> {
    const before = await call((signal) => client.jobs.status(endpointId, jobId, { signal }));
    if (before === 'gone') return 'gone';
    if (before.status === 'CANCELLED' && cancelledBefore) return confirmed(endpointId, jobId, before);
    if (before.status === 'IN_PROGRESS') return 'started';
    if (before.status !== 'IN_QUEUE') return 'ended';
    beforeCancel();
    const cancelled = await call((signal) => client.jobs.cancel(endpointId, jobId, { signal }));
    if (cancelled === 'gone') return 'gone';
    const after = await call((signal) => client.jobs.status(endpointId, jobId, { signal }));
    // Cancelled and then deleted before the look: whether it had started is unknown, so it counts
    // as a run that was stopped (it moves all the same; nothing of it runs on).
    if (after === 'gone') return 'stopped';
    if (after.status !== 'CANCELLED') return after.status === 'IN_PROGRESS' ? 'started' : 'ended';
    return confirmed(endpointId, jobId, after);
  }

  /** A job our /cancel ended: withdrawn if it never ran, stopped if it had started. */
  function confirmed(
    endpointId: string,
    jobId: string,
    status: { executionTime?: number },
  ): WithdrawalOutcome {
    inFlight.left(endpointId, jobId);
    return (status.executionTime ?? 0) > 0 ? 'stopped' : 'withdrawn';
  }

  return {
    /** GET /health: the counters a route decides on. */
    async endpointCapacity(input: z.input<typeof endpointCapacityInputSchema>): Promise<EndpointCapacity> {
      const { endpointId } = parsed(endpointCapacityInputSchema, input, 'input');
      const signal = Context.current().cancellationSignal;
      try {
        const health = await client.jobs.health(endpointId, { signal });
        const throttled = (health.workers as { throttled?: unknown }).throttled;
        return {
          idle: health.workers.idle,
          running: health.workers.running,
          inQueue: health.jobs.inQueue,
          ...(typeof throttled === 'number' ? { throttled } : {}),
        };
      } catch (error) {
        throw toApplicationFailure(error, { signal });
      }
    },

    /**
     * The endpoints' maximum worker counts (one GraphQL listing of the account's endpoints): an
     * endpoint the listing lacks is left out.
     */
    async endpointWorkers(
      input: z.input<typeof endpointWorkersInputSchema>,
    ): Promise<{ workersMax: Record<string, number> }> {
      const { endpointIds } = parsed(endpointWorkersInputSchema, input, 'input');
      const signal = Context.current().cancellationSignal;
      try {
        const listed = await client.endpoints.list({ signal });
        const wanted = new Set(endpointIds);
        const workersMax: Record<string, number> = {};
        for (const endpoint of listed) {
          if (wanted.has(endpoint.id) && typeof endpoint.workersMax === 'number')
            workersMax[endpoint.id] = endpoint.workersMax;
        }
        return { workersMax };
      } catch (error) {
        throw toApplicationFailure(error, { signal });
      }
    },

    /**
     * Withdraws queued jobs from an endpoint, one at a time (the service allows 100 /cancel calls
     * per 10 s), heartbeating what is done so a retried attempt does not look at them again.
     */
    async withdrawQueuedJobs(input: WithdrawJobsInput): Promise<WithdrawJobsResult> {
      const { endpointId, jobs } = parsed(withdrawInputSchema, input, 'input');
      const context = Context.current();
      const earlier = context.info.heartbeatDetails as WithdrawProgress | undefined;
      const results = [...(earlier?.results ?? [])];
      const seen = new Set(results.map((result) => result.jobId));
      for (const [index, jobId] of jobs) {
        if (seen.has(jobId)) continue;
        const outcome = await withdrawOne(endpointId, jobId, earlier?.cancelling === jobId, () =>
          context.heartbeat({ results, cancelling: jobId } satisfies WithdrawProgress),
        );
        if (outcome === 'withdrawn' || outcome === 'stopped' || outcome === 'started')
          metrics.routeWithdrawal(outcome);
        results.push({ i: index, jobId, outcome });
        context.heartbeat({ results } satisfies WithdrawProgress);
      }
      return { results };
    },
  };
}

export type RouteActivities = ReturnType<typeof createRouteActivities>;
