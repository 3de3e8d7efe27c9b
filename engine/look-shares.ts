/**
 * A batch shares its endpoint's /status limit among its watchers, wherever they run: each watcher
 * gets a share in proportion to the jobs it follows, out of the most jobs the batch may have in
 * flight, and paces its looks within that share. Its window carries from one of its attempts to the
 * next (the watcher activity seeds it from the heartbeat details), and from one watcher to the next:
 * a watcher that ends hands its window back to the batch (contracts/look-log.ts), and each new one
 * takes over as much of what still counts as its share. While one worker process runs them, its
 * client's limiter, which counts every look of the process, shares the limit among the watchers
 * as their looks come; once the looks come from several (within CLIENT_MEMORY_MS), every watcher
 * counts the looks it took over against its share, and a handoff does not start a window afresh in
 * any process. A watcher cancelled mid-window (the batch continuing as new, or stopping) hands
 * nothing back: its whole share counts as spent at its cancel. Under a submit
 * lease, a submit extends each new job's ttl with a /status call, one per request the /run send
 * window lets out, as many at once as its requests: those take the /run limit's worth of the rate
 * and of the requests in flight first.
 */
import type { EndpointLimit, LookShare } from '../contracts/batch-types';
import { type LookLog, poolLooks, takeLooks } from '../contracts/look-log';

export function lookShare(
  limits: { status: EndpointLimit | undefined; run: EndpointLimit | undefined; leased: boolean },
  jobs: number,
  maxConcurrency: number,
): LookShare | undefined {
  const rate = limits.status?.perTenSeconds;
  if (rate === undefined) return undefined;
  const { leased } = limits;
  const concurrent = limits.status?.concurrent ?? jobs;
  // At least half of each stays with the looks: extensions beyond it wait in their process.
  const pool = Math.max(rate - (leased ? (limits.run?.perTenSeconds ?? 0) : 0), Math.floor(rate / 2));
  const inFlight = Math.max(
    concurrent - (leased ? (limits.run?.concurrent ?? 0) : 0),
    Math.floor(concurrent / 2),
  );
  const part = jobs / Math.max(maxConcurrency, jobs, 1);
  return {
    perTenSeconds: Math.max(1, Math.floor(pool * part)),
    concurrent: Math.max(1, Math.floor(inFlight * part)),
  };
}

/**
 * How long a client that handed looks back counts as one of the batch's: a watcher answers within
 * seconds while its jobs finish, so every process running the batch's watchers shows up well within
 * this, and one that stopped stops counting after it.
 */
const CLIENT_MEMORY_MS = 60_000;

/** An endpoint's pool of the looks its ended watchers made, and the clients that made them lately. */
interface LookPool {
  lookLog?: LookLog;
  lookClients?: Array<[source: string, lastAt: number]>;
}

/** The clients that handed looks back within CLIENT_MEMORY_MS, with when they last did. */
function recentClients(pool: LookPool, now: number): Array<[source: string, lastAt: number]> {
  return (pool.lookClients ?? []).filter(([, lastAt]) => lastAt > now - CLIENT_MEMORY_MS);
}

/**
 * The looks a new watcher starts its window from, taken out of the pool (at most its share), and
 * how many clients handed looks back lately (contracts/look-log.ts says what that changes).
 */
export function looksTakenOver(
  pool: LookPool,
  share: LookShare | undefined,
  now: number,
): { seed: LookLog; sources: number } {
  const sources = recentClients(pool, now).length;
  if (!share || !pool.lookLog) return { seed: [], sources };
  return { seed: takeLooks(pool.lookLog, share.perTenSeconds, now), sources };
}

/** An ended watcher's window, back to the pool for the watchers after it. */
export function looksHandedBack(pool: LookPool, looks: LookLog | undefined, now: number): void {
  if (!looks || looks.length === 0) return;
  pool.lookLog ??= [];
  poolLooks(pool.lookLog, looks, now);
  const clients = new Map(recentClients(pool, now));
  for (const [, , source] of looks) clients.set(source, now);
  pool.lookClients = [...clients];
}

/**
 * A watcher cancelled mid-window: its whole share as looks made now (the most its window can hold,
 * at the latest time), and it stops looking within a second or two of the cancel (the activity
 * asks the server). Under the batch's one client, when one made all the looks lately: a watcher
 * of that client counts them in its limiter already. Otherwise under a name no client has, so every
 * watcher counts them.
 */
export function looksOfCancelled(pool: LookPool, share: LookShare | undefined, now: number): void {
  if (!share) return;
  const clients = recentClients(pool, now);
  const source = clients.length === 1 ? (clients[0]?.[0] ?? CANCELLED_SOURCE) : CANCELLED_SOURCE;
  pool.lookLog ??= [];
  poolLooks(pool.lookLog, [[Math.floor(now / 1_000), share.perTenSeconds, source]], now);
}

const CANCELLED_SOURCE = 'cancelled';
