/**
 * How many more jobs the service's queue for an endpoint should take now: the rule that makes
 * priority hold at the service as well as at the gate.
 *
 * The service's queue is first in, first out. A job sent behind a backfill's thousand queued jobs
 * waits for all of them, whatever its priority at the gate. So once the endpoint has every worker
 * it may have (`idle + running` at `workersMax`), the gate lets the service hold a job for each
 * idle worker and one more per worker waiting in its queue: enough for each worker to find its
 * next job as it ends one, and a job granted next (the highest priority waiting) waits about one
 * job's time for a worker. The rest waits in Temporal, where priority and fair shares order it.
 * Jobs shorter than the time between two readings would drain such a queue before the next one
 * (workers idle, the batch below the service's floor), so the queue also holds what the workers
 * take in QUEUE_COVER_MS, as the gate measures it between readings: the job granted next then
 * waits at most about that long.
 *
 * While the endpoint has fewer workers than it may have (starting, or scaling up), or without a
 * recent reading, the queue is not held: jobs queued are what makes the service scale up, and a
 * rule that relies on readings must not stop anything when they stop coming.
 *
 * The queue is read by the asking processes (activities/service-queue-look.ts) and sent with their
 * asks; the gate counts what it granted since the reading on top of it.
 *
 * Pure: no clock of its own; the gate passes the time in.
 */
import type { ServiceQueue } from '../contracts/endpoint-gate';
import type { SendLog } from './send-window';

/**
 * The queue holds at least what the workers take in this long: two readings apart (processes read
 * every 500 ms), so it does not run dry between them.
 */
export const QUEUE_COVER_MS = 1_000;
/**
 * Two readings closer than this say too little of how fast the workers take jobs: over half a
 * second, two workers of two-second jobs take none or two, read as 0 or 4 a second.
 */
export const TAKEN_SPAN_MS = 2_000;
/** A reading older than this holds nothing back (its readers have stopped asking). */
export const QUEUE_READING_FRESH_MS = 3_000;
/** How soon an ask held back by the queue asks again (with a newer reading). */
export const QUEUE_RETRY_MS = 500;
/**
 * How far past the queue's size asks that go before the other waiting work by priority alone may
 * go, as a share of the endpoint's workers (at least one job): an interactive job beside a
 * backfill goes out at once, and a stream of them cannot fill the queue.
 */
export const QUEUE_JUMP_SHARE = 0.1;

/** Keeps the newer of two readings. */
export function newerReading(
  held: ServiceQueue | undefined,
  read: ServiceQueue | undefined,
): ServiceQueue | undefined {
  if (read === undefined) return held;
  return held === undefined || read.at > held.at ? read : held;
}

/**
 * Jobs the workers took from the queue per second between two readings: what waited at the first,
 * plus what the gate granted between them, less what waits at the second. Undefined for readings
 * too close together. A granted job not yet at the service counts as taken: an estimate on the
 * high side, which only lets the queue hold more.
 */
export function takenPerSecond(older: ServiceQueue, newer: ServiceQueue, log: SendLog): number | undefined {
  const span = newer.at - older.at;
  if (span < TAKEN_SPAN_MS) return undefined;
  let granted = 0;
  for (const [at, count] of log) if (at > older.at && at <= newer.at) granted += count;
  return Math.max(0, older.inQueue + granted - newer.inQueue) / (span / 1_000);
}

/** Whether a reading holds the queue: recent, and the endpoint has every worker it may have. */
export function holdsQueue(reading: ServiceQueue | undefined, now: number): reading is ServiceQueue {
  if (reading === undefined || now - reading.at > QUEUE_READING_FRESH_MS) return false;
  const { workersMax } = reading;
  return workersMax !== undefined && workersMax > 0 && reading.idle + reading.running >= workersMax;
}

/**
 * The jobs the service may take now: unbounded while the queue is not held, else one per idle
 * worker and, to wait in the queue, one per worker or what the workers take in QUEUE_COVER_MS
 * (`perSecond`, from `takenPerSecond`), whichever is more, less what waits in it and what was
 * granted since the reading. `jumping`: for an ask that goes before the other waiting work by
 * priority alone (`outranks`), QUEUE_JUMP_SHARE of the workers more.
 */
export function queueRoom(
  reading: ServiceQueue | undefined,
  log: SendLog,
  now: number,
  perSecond = 0,
  jumping = false,
): number {
  if (!holdsQueue(reading, now)) return Number.POSITIVE_INFINITY;
  let grantedSince = 0;
  for (const [at, count] of log) if (at > reading.at) grantedSince += count;
  const workersMax = reading.workersMax ?? 0;
  const queued = Math.max(workersMax, Math.ceil((perSecond * QUEUE_COVER_MS) / 1_000));
  const jump = jumping ? Math.max(1, Math.ceil(workersMax * QUEUE_JUMP_SHARE)) : 0;
  return Math.max(0, queued + jump + reading.idle - reading.inQueue - grantedSince);
}

/**
 * Whether `ask` goes before other waiting work by priority alone (some waiting ask has a lower
 * priority, and none a higher one): then it need not wait for the queue to have room. Its wait for
 * room (the next reading, QUEUE_RETRY_MS at most) would come on top of its wait in the service's
 * queue; going a few jobs past the queue's size costs the work already queued nothing, and the
 * gate takes the overshoot out of the room the next asks find (QUEUE_JUMP_SHARE bounds it). An
 * ask alone, or among asks of its own priority, keeps to the queue's size.
 */
export function outranks(ask: { priority: number }, waiting: ReadonlyArray<{ priority: number }>): boolean {
  return (
    waiting.some((other) => other.priority > ask.priority) &&
    waiting.every((other) => other.priority >= ask.priority)
  );
}
