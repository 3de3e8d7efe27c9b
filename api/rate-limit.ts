import { z } from 'zod';

export const jobOperationSchema = z.enum([
  'run',
  'runSync',
  'status',
  'stream',
  'cancel',
  'retry',
  'purgeQueue',
  'health',
]);
export type JobOperation = z.infer<typeof jobOperationSchema>;

export const rateLimitSchema = z.object({
  // Infinity lifts the rate but keeps the concurrency cap. The finite bound keeps the
  // per-lane window (one timestamp per allowed request) small.
  perTenSeconds: z.union([z.number().int().min(1).max(1_000_000), z.literal(Number.POSITIVE_INFINITY)], {
    error: 'must be an integer from 1 to 1000000',
  }),
  concurrent: z.number({ error: 'must be an integer of at least 1' }).int().min(1).optional(),
});
export type RateLimit = z.infer<typeof rateLimitSchema>;

export const rateLimitsSchema = z.union([
  z.literal(false),
  z.partialRecord(jobOperationSchema, rateLimitSchema),
]);
export type RateLimits = z.infer<typeof rateLimitsSchema>;

/** The service's documented base limits, per endpoint and operation. retry and health have none. */
export const DEFAULT_RATE_LIMITS: Readonly<Partial<Record<JobOperation, RateLimit>>> = {
  runSync: { perTenSeconds: 2000, concurrent: 400 },
  run: { perTenSeconds: 1000, concurrent: 200 },
  status: { perTenSeconds: 2000, concurrent: 400 },
  stream: { perTenSeconds: 2000, concurrent: 400 },
  cancel: { perTenSeconds: 100, concurrent: 20 },
  purgeQueue: { perTenSeconds: 2 },
};

const WINDOW_MS = 10_000;

/** Gives back the slot taken by acquire; calling it more than once is harmless. */
export type Release = () => void;

/**
 * Which waiting calls go first: 'urgent' waits behind urgent calls only (calls whose lateness costs
 * more than a wait: a lease's extension, which the service deletes the job without); 'background'
 * behind every other (a look that only backs up another, such as a watcher's full look for a lost
 * webhook); 'normal' between the two. Within a priority, first come, first served.
 */
export type RequestPriority = 'urgent' | 'normal' | 'background';

const RANK: Record<RequestPriority, number> = { urgent: 0, normal: 1, background: 2 };

export interface RateLimiter {
  /**
   * Waits for a concurrency slot and then for room in the rate window, in the order of `priority`
   * (default 'normal'); rejects with the signal's reason.
   */
  acquire(
    endpointId: string,
    operation: JobOperation,
    signal?: AbortSignal,
    priority?: RequestPriority,
  ): Promise<Release>;
  /** The times (on the limiter's clock) of the grants still in the rate window, oldest first. */
  recent(endpointId: string, operation: JobOperation): number[];
  /**
   * Counts grants made elsewhere at these times (on the limiter's clock) in the rate window: a
   * limiter that carries on another's window, in another process.
   */
  seed(endpointId: string, operation: JobOperation, times: readonly number[]): void;
}

interface Waiter {
  rank: number;
  resolve(release: Release): void;
  reject(reason: unknown): void;
  detach(): void;
}

interface Lane {
  // A sliding-window log: the times of the last `limit` grants, as a ring. A request may
  // go when the oldest of them left the window. Unlike a token bucket this never lets
  // more than `limit` requests into any 10-second window, which is what the service counts.
  grants: Float64Array | undefined;
  head: number;
  maxActive: number;
  active: number;
  queue: Waiter[];
  timer: NodeJS.Timeout | undefined;
}

/** The limits a client keeps to: the service's, each operation's replaced by an override; none for false. */
export function effectiveRateLimits(
  limits: RateLimits | undefined,
): Partial<Record<JobOperation, RateLimit>> {
  return limits === false ? {} : { ...DEFAULT_RATE_LIMITS, ...rateLimitsSchema.parse(limits ?? {}) };
}

export function createRateLimiter(
  limits: RateLimits | undefined,
  clock: { now(): number } = performance,
): RateLimiter {
  const config = effectiveRateLimits(limits);
  const lanes = new Map<string, Lane>();

  function laneFor(endpointId: string, operation: JobOperation): Lane | undefined {
    const limit = config[operation];
    if (!limit) return undefined;
    const key = `${operation}\u0000${endpointId}`;
    let lane = lanes.get(key);
    if (!lane) {
      const finite = Number.isFinite(limit.perTenSeconds);
      lane = {
        grants: finite ? new Float64Array(limit.perTenSeconds).fill(Number.NEGATIVE_INFINITY) : undefined,
        head: 0,
        maxActive: limit.concurrent ?? Number.POSITIVE_INFINITY,
        active: 0,
        queue: [],
        timer: undefined,
      };
      lanes.set(key, lane);
    }
    return lane;
  }

  function waitMs(lane: Lane, now: number): number {
    if (!lane.grants) return 0;
    return Math.max(0, (lane.grants[lane.head] ?? Number.NEGATIVE_INFINITY) + WINDOW_MS - now);
  }

  function grant(lane: Lane, now: number): Release {
    const slot = lane.head;
    if (lane.grants) {
      lane.grants[slot] = now;
      lane.head = (lane.head + 1) % lane.grants.length;
    }
    lane.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The service counts a request from its arrival, some time after its grant and before its
      // answer: counted from the answer, a request that reached the service late cannot share the
      // service's window with the one granted in its place 10 s after its grant. (A slot given
      // again meanwhile, under a request slower than the window, keeps its own time.)
      if (lane.grants && lane.grants[slot] === now) lane.grants[slot] = Math.max(now, clock.now());
      lane.active--;
      pump(lane);
    };
  }

  function pump(lane: Lane) {
    while (lane.queue.length > 0 && lane.active < lane.maxActive) {
      const now = clock.now();
      const wait = waitMs(lane, now);
      if (wait > 0) {
        if (!lane.timer) {
          lane.timer = setTimeout(() => {
            lane.timer = undefined;
            pump(lane);
          }, Math.ceil(wait));
        }
        return;
      }
      const waiter = lane.queue.shift()!;
      waiter.detach();
      waiter.resolve(grant(lane, now));
    }
  }

  return {
    recent(endpointId, operation) {
      const lane = laneFor(endpointId, operation);
      if (!lane?.grants) return [];
      const since = clock.now() - WINDOW_MS;
      const { grants, head } = lane;
      const times: number[] = [];
      for (let k = 0; k < grants.length; k++) {
        const at = grants[(head + k) % grants.length] as number;
        if (at > since) times.push(at);
      }
      return times;
    },
    seed(endpointId, operation, times) {
      const lane = laneFor(endpointId, operation);
      if (!lane?.grants) return;
      const since = clock.now() - WINDOW_MS;
      for (const at of [...times].sort((a, b) => a - b)) {
        if (at <= since) continue;
        lane.grants[lane.head] = at;
        lane.head = (lane.head + 1) % lane.grants.length;
      }
    },
    acquire(endpointId, operation, signal, priority = 'normal') {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const lane = laneFor(endpointId, operation);
      if (!lane) return Promise.resolve(() => {});
      const now = clock.now();
      if (lane.queue.length === 0 && lane.active < lane.maxActive && waitMs(lane, now) === 0) {
        return Promise.resolve(grant(lane, now));
      }
      return new Promise<Release>((resolve, reject) => {
        const onAbort = () => {
          const index = lane.queue.indexOf(waiter);
          if (index >= 0) lane.queue.splice(index, 1);
          reject(signal?.reason);
        };
        const waiter: Waiter = {
          rank: RANK[priority],
          resolve,
          reject,
          detach: () => signal?.removeEventListener('abort', onAbort),
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        // Behind the calls of its priority and higher already waiting, ahead of every lower one.
        const firstLower = lane.queue.findIndex((queued) => queued.rank > waiter.rank);
        if (firstLower < 0) lane.queue.push(waiter);
        else lane.queue.splice(firstLower, 0, waiter);
        pump(lane);
      });
    },
  };
}
