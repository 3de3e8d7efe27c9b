/**
 * The gateway's replay guard: which event ids (per source) are being delivered or were delivered
 * lately. It answers a sender's retry of a delivered event with 200 and no signal, and a request
 * racing another with the same id with 409.
 *
 * How it relates to the automation's own de-duplication: the automation workflow remembers every
 * event id it took for its `dedupeWindow` (24 h by default), in workflow state, which every gateway
 * replica signals into. That is the durable guard: an event replayed to another replica, or after
 * a gateway restart, is signalled once more and dropped by the workflow, and starts nothing. This
 * guard is the fast path in front of it, saving that signal (a history event) for the common case
 * of a sender retrying against the same replica. A deployment that wants the fast path shared
 * across replicas passes a `ReplayGuard` backed by a shared store; the in-memory one is the
 * default.
 */
import { LRUCache } from 'lru-cache';

export const DEFAULT_REPLAY_CACHE_SIZE = 100_000;
/** How long a delivered id is remembered by the in-memory guard (the workflow keeps it longer). */
export const DEFAULT_REPLAY_WINDOW_SECONDS = 3_600;

export type ReplayState = 'new' | 'pending' | 'delivered';

export interface ReplayGuard {
  /** Claims `id` when it is new (then 'new'); otherwise tells how it stands. */
  claim(id: string): Promise<ReplayState>;
  /** The claimed id was delivered: later claims answer 'delivered' for the window. */
  delivered(id: string): Promise<void>;
  /** The claimed id was not delivered (Temporal unavailable): the sender's retry may claim it again. */
  release(id: string): Promise<void>;
}

export function memoryReplayGuard(
  options: { size?: number; windowSeconds?: number; now?: () => number } = {},
): ReplayGuard {
  const seen = new LRUCache<string, 'pending' | 'delivered'>({
    max: options.size ?? DEFAULT_REPLAY_CACHE_SIZE,
    ttl: (options.windowSeconds ?? DEFAULT_REPLAY_WINDOW_SECONDS) * 1000,
    ...(options.now ? { perf: { now: options.now } } : {}),
  });
  return {
    async claim(id) {
      const state = seen.get(id);
      if (state) return state;
      seen.set(id, 'pending');
      return 'new';
    },
    async delivered(id) {
      seen.set(id, 'delivered');
    },
    async release(id) {
      seen.delete(id);
    },
  };
}
