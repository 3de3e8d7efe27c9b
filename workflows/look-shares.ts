/**
 * A batch shares its endpoint's /status limit among its watchers, wherever they run: each watcher
 * gets a share in proportion to the jobs it follows, out of the most jobs the batch may have in
 * flight, and paces its looks within that share; its window carries from one of its attempts to the
 * next (the watcher activity seeds it from the heartbeat details). The watchers running at once then stay
 * within the limit together. A watcher that takes over another's jobs starts a window of its own,
 * so across several worker processes the looks can still exceed the limit for a moment (each 429 is
 * waited out); /run, by contrast, is held strictly (send-window.ts). Under a submit lease, a submit
 * extends each new job's ttl with a /status call, one per request the /run send window lets out, as
 * many at once as its requests: those take the /run limit's worth of the rate and of the requests
 * in flight first.
 */
import type { EndpointLimit, LookShare } from '../contracts/batch-input';

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
