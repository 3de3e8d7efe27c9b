/**
 * The jobs-in-flight gauge's bookkeeping (api/metrics.ts `jobsInFlight`): +1 when this process
 * submits or retries a job, -1 the first time it sees that run finished. The same final status is
 * often read more than once (a webhook and a poll, a snapshot, a retried activity), so each run
 * counts once here. The count is per worker process: a job submitted by one worker and seen finished
 * by another leaves +1 on the first and -1 on the second, so only the sum over workers is meaningful.
 */
import { LRUCache } from 'lru-cache';
import type { LibraryMetrics } from '../api/metrics';

export interface InFlightTracker {
  started(endpointId: string, jobId: string): void;
  finished(endpointId: string, jobId: string): void;
}

/** Enough to tell repeats apart; an older entry forgotten only risks one miscount. */
const REMEMBERED = 50_000;

export function createInFlightTracker(metrics: Pick<LibraryMetrics, 'jobsInFlight'>): InFlightTracker {
  const live = new LRUCache<string, true>({ max: REMEMBERED });
  const ended = new LRUCache<string, true>({ max: REMEMBERED });
  const keyOf = (endpointId: string, jobId: string) => `${endpointId}\n${jobId}`;
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
      if (ended.has(key)) return;
      ended.set(key, true);
      live.delete(key);
      metrics.jobsInFlight(endpointId, -1);
    },
  };
}
