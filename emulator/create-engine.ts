/** Builds the emulator's Engine: its clock, store, scheduler, webhooks, faults and rate limiter. */
import { createClock } from './clock';
import type { Engine } from './engine';
import { createFaults } from './faults';
import { startJob } from './jobs';
import { createScheduler } from './queue/scheduler';
import { createRateLimiter } from './rate-limit';
import type { ResolvedOptions } from './schemas';
import { createStore } from './store';
import { createWebhooks } from './webhooks';

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
