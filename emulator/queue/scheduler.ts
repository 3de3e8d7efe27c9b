import type { Clock } from '../clock';
import { newShortId } from '../ids';
import type { Endpoint, Job, Worker } from '../store';

// Workers of each endpoint: started within workersMin..workersMax, a cold start (shorter with
// FLASHBOOT) before their first job, stopped after idleTimeout seconds without work. Only jobs that
// are not lowPriority create demand; a lowPriority job waits for a worker that exists anyway.
// A starved endpoint gets no GPU: the workers it wants are `throttled` (counted, never started),
// the ones running finish their job and then wait throttled too; a restore cold-starts them.

export interface SchedulerDeps {
  clock: Clock;
  coldStartMs: number;
  flashBootMs: number;
  /** Called when a worker takes a job off the queue. */
  startJob(endpoint: Endpoint, job: Job, worker: Worker): void;
}

export interface WorkerCounts {
  initializing: number;
  idle: number;
  running: number;
  throttled: number;
}

export interface Scheduler {
  enqueue(endpoint: Endpoint, job: Job): void;
  /** Takes a job out of the queue (cancel, purge, ttl); false when it was not queued. */
  remove(endpoint: Endpoint, job: Job): boolean;
  /** A worker's job ended: it takes the next one, idles, or stops. */
  release(endpoint: Endpoint, worker: Worker): void;
  /** Re-applies the scaling rules, e.g. after workersMin or workersMax changed. */
  reconcile(endpoint: Endpoint): void;
  stopAll(endpoint: Endpoint): void;
  counts(endpoint: Endpoint): WorkerCounts;
  /**
   * Takes the endpoint's GPUs away until `restore` (or service time `until`): idle and starting
   * workers become throttled at once, running ones when their job ends. Starving again replaces `until`.
   */
  starve(endpoint: Endpoint, until: number | null): void;
  /** Gives the GPUs back: throttled workers cold-start and take the queue in order. Idempotent. */
  restore(endpoint: Endpoint): void;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { clock } = deps;

  function counts(endpoint: Endpoint): WorkerCounts {
    const result = { initializing: 0, idle: 0, running: 0, throttled: 0 };
    for (const worker of endpoint.workers.values()) result[worker.state]++;
    return result;
  }

  function boot(endpoint: Endpoint) {
    const worker: Worker = { id: newShortId(), state: 'throttled' };
    endpoint.workers.set(worker.id, worker);
    if (!endpoint.starved) warmUp(endpoint, worker);
  }

  function warmUp(endpoint: Endpoint, worker: Worker) {
    clock.cancel(worker.timer);
    worker.state = 'initializing';
    const startup = endpoint.fields.flashBootType === 'FLASHBOOT' ? deps.flashBootMs : deps.coldStartMs;
    worker.timer = clock.after(startup, () => {
      worker.timer = undefined;
      if (!endpoint.workers.has(worker.id)) return;
      worker.state = 'idle';
      dispatch(endpoint);
    });
  }

  function stop(endpoint: Endpoint, worker: Worker) {
    clock.cancel(worker.timer);
    worker.timer = undefined;
    endpoint.workers.delete(worker.id);
  }

  function remove(endpoint: Endpoint, job: Job): boolean {
    if (!endpoint.queue.delete(job.id)) return false;
    if (!job.lowPriority) endpoint.queuedNormal--;
    return true;
  }

  // A job submitted to an idle worker still answers IN_QUEUE: the hand-over happens on the next
  // tick of the clock, at the same service time, so its delayTime stays 0.
  function scheduleDispatch(endpoint: Endpoint) {
    if (endpoint.dispatchPending) return;
    endpoint.dispatchPending = true;
    clock.after(0, () => {
      endpoint.dispatchPending = false;
      dispatch(endpoint);
    });
  }

  function dispatch(endpoint: Endpoint) {
    if (endpoint.deleted) return;
    if (endpoint.starved) {
      reconcile(endpoint);
      return;
    }
    for (const worker of endpoint.workers.values()) {
      if (endpoint.queue.size === 0) break;
      if (worker.state !== 'idle') continue;
      const job = endpoint.queue.values().next().value as Job;
      remove(endpoint, job);
      clock.cancel(worker.timer);
      worker.timer = undefined;
      worker.state = 'running';
      worker.job = job;
      deps.startJob(endpoint, job, worker);
    }
    reconcile(endpoint);
  }

  function reconcile(endpoint: Endpoint) {
    if (endpoint.deleted) return;
    const { workersMin, workersMax, idleTimeout } = endpoint.fields;
    while (endpoint.workers.size < workersMin) boot(endpoint);

    const now = counts(endpoint);
    let deficit = endpoint.queuedNormal - now.idle - now.initializing - now.throttled;
    while (deficit > 0 && endpoint.workers.size < workersMax) {
      boot(endpoint);
      deficit--;
    }

    // Above the maximum (it was lowered): idle and starting workers go now, busy ones on release.
    let excess = endpoint.workers.size - workersMax;
    for (const state of ['throttled', 'idle', 'initializing'] as const) {
      for (const worker of [...endpoint.workers.values()]) {
        if (excess <= 0) break;
        if (worker.state !== state) continue;
        stop(endpoint, worker);
        excess--;
      }
    }

    // A throttled worker no longer wanted goes like an idle one.
    const waiting = (worker: Worker) => worker.state === 'idle' || worker.state === 'throttled';
    for (const worker of endpoint.workers.values()) {
      if (!waiting(worker)) continue;
      const mayStop = endpoint.workers.size > workersMin && endpoint.queue.size === 0;
      if (mayStop && !worker.timer) {
        worker.timer = clock.after(idleTimeout * 1000, () => {
          worker.timer = undefined;
          if (waiting(worker) && endpoint.workers.size > endpoint.fields.workersMin) {
            stop(endpoint, worker);
          }
        });
      } else if (!mayStop && worker.timer) {
        clock.cancel(worker.timer);
        worker.timer = undefined;
      }
    }
  }

  function restore(endpoint: Endpoint) {
    if (!endpoint.starved || endpoint.deleted) return;
    clock.cancel(endpoint.starved.timer);
    endpoint.starved = undefined;
    for (const worker of endpoint.workers.values()) {
      if (worker.state === 'throttled') warmUp(endpoint, worker);
    }
    reconcile(endpoint);
    scheduleDispatch(endpoint);
  }

  return {
    enqueue(endpoint, job) {
      endpoint.queue.set(job.id, job);
      if (!job.lowPriority) endpoint.queuedNormal++;
      reconcile(endpoint);
      scheduleDispatch(endpoint);
    },
    remove,
    release(endpoint, worker) {
      worker.job = undefined;
      if (!endpoint.workers.has(worker.id)) return;
      if (endpoint.deleted || endpoint.workers.size > endpoint.fields.workersMax) {
        stop(endpoint, worker);
        return;
      }
      worker.state = endpoint.starved ? 'throttled' : 'idle';
      dispatch(endpoint);
    },
    reconcile(endpoint) {
      reconcile(endpoint);
      scheduleDispatch(endpoint);
    },
    stopAll(endpoint) {
      clock.cancel(endpoint.starved?.timer);
      for (const worker of [...endpoint.workers.values()]) stop(endpoint, worker);
    },
    counts,
    starve(endpoint, until) {
      clock.cancel(endpoint.starved?.timer);
      endpoint.starved = { until };
      if (until !== null) endpoint.starved.timer = clock.at(until, () => restore(endpoint));
      for (const worker of endpoint.workers.values()) {
        if (worker.state !== 'idle' && worker.state !== 'initializing') continue;
        clock.cancel(worker.timer);
        worker.timer = undefined;
        worker.state = 'throttled';
      }
      reconcile(endpoint);
    },
    restore,
  };
}
