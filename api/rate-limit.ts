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

/**
 * Gives back the slot taken by acquire; calling it more than once is harmless. `sent: false` says
 * the request never went out: it leaves the rate window as if it had never been granted, so a
 * window counts only the requests sent in it.
 */
export type Release = (options?: { sent?: boolean }) => void;

/**
 * Which waiting calls go first: 'urgent' waits behind urgent calls only (calls whose lateness costs
 * more than a wait: a lease's extension, which the service deletes the job without); 'background'
 * behind every other (a look that only backs up another, such as a watcher's full look for a lost
 * webhook); 'normal' between the two. Within a priority, first come, first served.
 */
export type RequestPriority = 'urgent' | 'normal' | 'background';

const RANK: Record<RequestPriority, number> = { urgent: 0, normal: 1, background: 2 };

/** The refusal of a call whose time to be sent passed while it waited: it was never counted. */
export class SendTimePassed extends Error {
  constructor() {
    super('its time to be sent passed while it waited for the rate limit');
    this.name = 'SendTimePassed';
  }
}

export interface RateLimiter {
  /**
   * Waits for a concurrency slot and then for room in the rate window, in the order of `priority`
   * (default 'normal'); rejects with the signal's reason. With `late`, a waiter for which it
   * answers true when its turn comes is refused with SendTimePassed and takes no room at all.
   */
  acquire(
    endpointId: string,
    operation: JobOperation,
    signal?: AbortSignal,
    priority?: RequestPriority,
    late?: () => boolean,
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
  late: (() => boolean) | undefined;
  resolve(release: Release): void;
  reject(reason: unknown): void;
  detach(): void;
}

interface Lane {
  // A sliding-window log: the times of the grants still in the window, oldest first (`head` is
  // the first still in it). A request may go while fewer than `limit` are in the window. Unlike a
  // token bucket this never lets more than `limit` requests into any 10-second window, which is
  // what the service counts. Undefined: no rate, only the concurrency cap.
  times: number[] | undefined;
  head: number;
  limit: number;
  maxActive: number;
  active: number;
  queue: Waiter[];
  timer: NodeJS.Timeout | undefined;
}

/** The first index in the sorted `times` (from `from`) of a value at or above `at`. */
function lowerBound(times: number[], from: number, at: number): number {
  let low = from;
  let high = times.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((times[middle] as number) < at) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Records a grant at `at`, keeping the log sorted. */
function insertTime(lane: Lane & { times: number[] }, at: number): void {
  const { times } = lane;
  if (times.length === lane.head || (times.at(-1) as number) <= at) times.push(at);
  else times.splice(lowerBound(times, lane.head, at), 0, at);
}

/** Forgets one grant at `at`; false if none is in the log (it has left the window). */
function removeTime(lane: Lane & { times: number[] }, at: number): boolean {
  const index = lowerBound(lane.times, lane.head, at);
  if (lane.times[index] !== at) return false;
  lane.times.splice(index, 1);
  return true;
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
        times: finite ? [] : undefined,
        head: 0,
        limit: limit.perTenSeconds,
        maxActive: limit.concurrent ?? Number.POSITIVE_INFINITY,
        active: 0,
        queue: [],
        timer: undefined,
      };
      lanes.set(key, lane);
    }
    return lane;
  }

  /** Drops the grants that have left the window (compacting the log now and then). */
  function prune(lane: Lane, now: number): void {
    const { times } = lane;
    if (!times) return;
    while (lane.head < times.length && (times[lane.head] as number) <= now - WINDOW_MS) lane.head++;
    if (lane.head > 1024 && lane.head * 2 > times.length) {
      times.splice(0, lane.head);
      lane.head = 0;
    }
  }

  function waitMs(lane: Lane, now: number): number {
    const { times } = lane;
    if (!times) return 0;
    prune(lane, now);
    const held = times.length - lane.head;
    if (held < lane.limit) return 0;
    // The oldest grants leave the window one by one until one more fits.
    return Math.max(0, (times[times.length - lane.limit] as number) + WINDOW_MS - now);
  }

  function grant(lane: Lane, now: number): Release {
    if (lane.times) insertTime(lane as Lane & { times: number[] }, now);
    lane.active++;
    let released = false;
    return ({ sent = true } = {}) => {
      if (released) return;
      released = true;
      if (lane.times) {
        const log = lane as Lane & { times: number[] };
        // Never sent: out of the window, as if never granted. Sent: the service counts a request
        // from its arrival, some time after its grant and before its answer; counted from the
        // answer, a request that reached the service late cannot share the service's window with
        // the one granted in its place 10 s after its grant.
        if (removeTime(log, now) && sent) insertTime(log, Math.max(now, clock.now()));
      }
      lane.active--;
      pump(lane);
    };
  }

  function pump(lane: Lane) {
    while (lane.queue.length > 0 && lane.active < lane.maxActive) {
      // Waiters whose time to be sent has passed leave unsent and uncounted: their callers plan
      // them again, and none is sent late into a window that was meant for others.
      if (lane.queue.some((waiter) => waiter.late?.())) {
        for (const waiter of lane.queue.filter((queued) => queued.late?.())) {
          lane.queue.splice(lane.queue.indexOf(waiter), 1);
          waiter.detach();
          waiter.reject(new SendTimePassed());
        }
        continue;
      }
      const first = lane.queue[0] as Waiter;
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
      lane.queue.shift();
      first.detach();
      first.resolve(grant(lane, now));
    }
  }

  return {
    recent(endpointId, operation) {
      const lane = laneFor(endpointId, operation);
      if (!lane?.times) return [];
      prune(lane, clock.now());
      return lane.times.slice(lane.head);
    },
    seed(endpointId, operation, times) {
      const lane = laneFor(endpointId, operation);
      if (!lane?.times) return;
      const since = clock.now() - WINDOW_MS;
      for (const at of times) if (at > since) insertTime(lane as Lane & { times: number[] }, at);
    },
    acquire(endpointId, operation, signal, priority = 'normal', late) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const lane = laneFor(endpointId, operation);
      if (!lane) return Promise.resolve(() => {});
      if (late?.()) return Promise.reject(new SendTimePassed());
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
          late,
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
