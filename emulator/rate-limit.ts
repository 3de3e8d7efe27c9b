import { LIMITS, RATE_LIMITS, type RateOperation } from './limits';

// The spec's table, per account, endpoint and operation: a sliding window of 10 s (service time,
// like every other duration in the emulator) and a cap on requests in flight. The dynamic rule
// raises the window's limit to running workers x requestsPerWorker when that is higher.

export type RateDecision =
  | { ok: true; release: () => void }
  | { ok: false; retryAfterSeconds: number; reason: string; rule: RefusedBy };

/** Which of an operation's two limits refused a request: its window's rate or its requests in flight. */
export type RefusedBy = 'rate' | 'concurrent';

export interface RateLimiter {
  acquire(key: string, operation: RateOperation, runningWorkers: number): RateDecision;
  reset(): void;
}

interface Window {
  /** Acceptance times, oldest first, from `head` on. */
  times: number[];
  head: number;
  inflight: number;
}

export function createRateLimiter(deps: { now: () => number; requestsPerWorker: number }): RateLimiter {
  const windows = new Map<string, Window>();

  return {
    acquire(key, operation, runningWorkers) {
      const rule = RATE_LIMITS[operation];
      const now = deps.now();
      let window = windows.get(key);
      if (!window) {
        window = { times: [], head: 0, inflight: 0 };
        windows.set(key, window);
      }
      const { times } = window;
      while (window.head < times.length && times[window.head]! <= now - LIMITS.rateWindowMs) window.head++;
      if (window.head > 1024 && window.head * 2 > times.length) {
        times.splice(0, window.head);
        window.head = 0;
      }

      const limit = Math.max(rule.perWindow, runningWorkers * deps.requestsPerWorker);
      if (times.length - window.head >= limit) {
        const oldest = times[window.head]!;
        const waitMs = oldest + LIMITS.rateWindowMs - now;
        return {
          ok: false,
          retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
          reason: `rate limit of ${limit} ${operation} requests per 10 seconds exceeded`,
          rule: 'rate',
        };
      }
      if (rule.concurrent !== null && window.inflight >= rule.concurrent) {
        return {
          ok: false,
          retryAfterSeconds: 1,
          reason: `more than ${rule.concurrent} concurrent ${operation} requests`,
          rule: 'concurrent',
        };
      }

      times.push(now);
      window.inflight++;
      let released = false;
      const held = window;
      return {
        ok: true,
        release() {
          if (released) return;
          released = true;
          held.inflight--;
        },
      };
    },
    reset() {
      windows.clear();
    },
  };
}
