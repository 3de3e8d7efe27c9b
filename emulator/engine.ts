/**
 * The emulator's parts as one record (the Engine); create-engine.ts builds it. Types only, so that
 * the parts (jobs.ts) can name it without importing what builds them.
 */
import type { Clock } from './clock';
import type { Faults } from './faults';
import type { Scheduler } from './queue/scheduler';
import type { RateLimiter } from './rate-limit';
import type { ResolvedOptions } from './schemas';
import type { Store } from './store';
import type { Webhooks } from './webhooks';

/** Everything the routes and the control handle act on, created once per emulator. */
export interface Engine {
  options: ResolvedOptions;
  clock: Clock;
  store: Store;
  scheduler: Scheduler;
  webhooks: Webhooks;
  faults: Faults;
  rateLimiter: RateLimiter;
  random: () => number;
  /** Aborted by close(): every waiting request lets go. */
  shutdown: AbortController;
}
