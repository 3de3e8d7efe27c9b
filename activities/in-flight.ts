/**
 * The jobs-in-flight gauge's bookkeeping (api/metrics.ts `jobsInFlight`), and the answer to "is
 * this the first time this worker sees that run finished?" for the finished-run and cost counters.
 * +1 when this process submits or retries a job, -1 the first time it sees that run end. The same
 * final status is often read more than once (a webhook and a poll, a snapshot, a retried
 * activity), so each run counts once here. The count is per worker process: a job submitted by one
 * worker and seen finished by another leaves +1 on the first and -1 on the second, so only the sum
 * over workers is meaningful; a run whose final status two workers read is counted by each.
 */
import { LRUCache } from 'lru-cache';
import type { LibraryMetrics } from '../api/metrics';

export interface InFlightTracker {
  started(endpointId: string, jobId: string): void;
  /**
   * The run's final status was read. True the first time this worker reads it for this run (a
   * retry under the same id is a new run): the caller counts the finished run and its cost then.
   */
  finished(endpointId: string, jobId: string): boolean;
  /**
   * The run left without its final status being read here (a 404, a cancel's answer): the gauge
   * goes down, but the finished-run count waits for a look at the status (if any comes).
   */
  left(endpointId: string, jobId: string): void;
}

/** Enough to tell repeats apart; an older entry forgotten only risks one miscount. */
const REMEMBERED = 50_000;

/** 'left': the gauge is down, the run not counted yet; 'counted': both done. */
type Ended = 'left' | 'counted';

export function createInFlightTracker(metrics: Pick<LibraryMetrics, 'jobsInFlight'>): InFlightTracker {
  const live = new LRUCache<string, true>({ max: REMEMBERED });
  const ended = new LRUCache<string, Ended>({ max: REMEMBERED });
  const keyOf = (endpointId: string, jobId: string) => `${endpointId}\n${jobId}`;
  const end = (endpointId: string, key: string, as: Ended) => {
    if (!ended.has(key)) metrics.jobsInFlight(endpointId, -1);
    ended.set(key, as);
    live.delete(key);
  };
  return {
    started(endpointId, jobId) {
      const key = keyOf(endpointId, jobId);
      if (live.has(key)) return;
      live.set(key, true);
      // A retried job runs again under the same id.
      ended.delete(key);
      metrics.jobsInFlight(endpointId, 1);
    },
    finished(endpointId, jobId) {
      const key = keyOf(endpointId, jobId);
      if (ended.get(key) === 'counted') return false;
      end(endpointId, key, 'counted');
      return true;
    },
    left(endpointId, jobId) {
      const key = keyOf(endpointId, jobId);
      if (!ended.has(key)) end(endpointId, key, 'left');
    },
  };
}
