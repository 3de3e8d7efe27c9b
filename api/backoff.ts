import { z } from 'zod';

export const retry429Schema = z.object({
  maxRetries: z.number().int().min(0),
  baseDelayMs: z.number().min(0),
  maxDelayMs: z.number().min(0),
});
export type Retry429Policy = z.infer<typeof retry429Schema>;

// Five retries of up to 8 s each: bounded at well under a minute, short next to an
// activity's timeouts, long enough to ride out a burst over the service's window.
export const DEFAULT_RETRY_429: Retry429Policy = { maxRetries: 5, baseDelayMs: 250, maxDelayMs: 8_000 };

/**
 * Delay before retry number `attempt + 1` after a 429, or undefined when the budget is
 * spent. Full jitter (a random delay up to the exponential ceiling) spreads out
 * clients that were refused together. A Retry-After longer than maxDelayMs ends the
 * budget too: waiting that long is the caller's decision, and the error carries it.
 */
export function delayBefore429Retry(
  attempt: number,
  retryAfterMs: number | undefined,
  policy: Retry429Policy,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= policy.maxRetries) return undefined;
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxDelayMs) return undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.max(retryAfterMs ?? 0, random() * ceiling);
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
