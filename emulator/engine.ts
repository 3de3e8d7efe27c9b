import { type Clock, createClock } from './clock';
import { createFaults, type Faults } from './faults';
import { startJob } from './jobs';
import { createScheduler, type Scheduler } from './queue/scheduler';
import { createRateLimiter, type RateLimiter } from './rate-limit';
import type { ResolvedOptions } from './schemas';
import { createStore, type Store } from './store';
import { createWebhooks, type Webhooks } from './webhooks';

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

export function createEngine(options: ResolvedOptions): Engine {
  const random = options.random ?? Math.random;
  const clock = createClock(options.timeScale);
  const engine: Engine = {
    options,
    clock,
    store: createStore(),
    random,
    shutdown: new AbortController(),
    faults: createFaults(random),
    rateLimiter: createRateLimiter({ now: clock.now, requestsPerWorker: options.requestsPerWorker }),
    webhooks: createWebhooks({
      clock,
      random,
      timeoutMs: options.webhookTimeoutMs,
      logLimit: options.deliveryLogLimit,
    }),
    scheduler: createScheduler({
      clock,
      coldStartMs: options.coldStartMs,
      flashBootMs: options.flashBootMs,
      startJob: (endpoint, job, worker) => startJob(engine, endpoint, job, worker),
    }),
  };
  for (const [gpu, available] of Object.entries(options.gpuAvailability)) {
    engine.store.gpuAvailability.set(gpu, available);
  }
  return engine;
}
