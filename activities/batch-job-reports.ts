/**
 * What the webhook gateway beside a worker hears of batch jobs, for the batch watchers in the same
 * process (worker/run-worker.ts hands one instance to both):
 * - the jobs a watcher here follows: a webhook for one of them needs no question to its batch (the
 *   batch knows the job; only an orphan of an uncertain submit needs a signal), so the gateway
 *   answers it without a query, which would cost the worker a workflow activation per job;
 * - the jobs whose webhook reported an end: a watcher looks at those at once, between the full
 *   looks at every job it follows, so a finished job is seen within a short retry of its webhook
 *   rather than on the polling schedule, with about one /status per job.
 * - a watcher waiting between two looks is woken by the report of one of its jobs' end, so it
 *   looks at once rather than at its next try.
 * - the jobs a submit here created, whose page has not answered yet: no orphan while this process
 *   lives, so the gateway asks the service to call again later (all but its last try) rather than
 *   signal a hint; by then the batch knows the job, or this process died and the retry goes to the
 *   batch.
 * Process-local and bounded. Where the webhook reaches another process (a gateway of its own, a
 * second worker behind one URL), nothing is known here and the watchers poll as they would without
 * webhooks: this only ever makes them look sooner, never later.
 */
import { LRUCache } from 'lru-cache';

export interface BatchJobReports {
  /** A watcher of this process follows these jobs. */
  watching(jobIds: Iterable<string>): void;
  isWatched(jobId: string): boolean;
  /** A webhook said this job reached an end (COMPLETED, FAILED, CANCELLED, TIMED_OUT). */
  ended(jobId: string): void;
  hasEnded(jobId: string): boolean;
  /** A submit of this process created this job: its page's answer will carry its id. */
  created(jobId: string): void;
  /**
   * Whether a webhook of this job may be put off until the service's next try: true for a job
   * created here, for all but the service's last try (answered as usual, here or in another process).
   */
  mayDefer(jobId: string): boolean;
  /** A job was sent again (/retry, same id): its earlier end no longer says anything. */
  forget(jobId: string): void;
  /**
   * Resolves after `ms`, or as soon as the end of one of `jobIds` is reported, or when `signal`
   * aborts (the caller tells which by the signal).
   */
  waitForEnd(jobIds: ReadonlySet<string>, ms: number, signal?: AbortSignal): Promise<void>;
  /** Whether any end was reported within `withinMs`: webhooks reach this process. */
  active(withinMs: number): boolean;
}

/** Enough for the jobs in flight of many large batches; a forgotten entry only costs a poll. */
const REMEMBERED = 200_000;
/** The service calls a webhook three times at most, 10 s apart: the first two may be put off. */
const DEFERRALS = 2;

export function createBatchJobReports(now: () => number = Date.now): BatchJobReports {
  const watched = new LRUCache<string, true>({ max: REMEMBERED });
  const ends = new LRUCache<string, true>({ max: REMEMBERED });
  // The jobs a submit here created, with the webhook calls put off so far for each.
  const deferrals = new LRUCache<string, number>({ max: REMEMBERED });
  let lastEnd = Number.NEGATIVE_INFINITY;
  const waiters = new Set<(jobId: string) => void>();
  return {
    watching(jobIds) {
      for (const jobId of jobIds) watched.set(jobId, true);
    },
    isWatched: (jobId) => watched.has(jobId),
    ended(jobId) {
      ends.set(jobId, true);
      lastEnd = now();
      for (const waiter of [...waiters]) waiter(jobId);
    },
    hasEnded: (jobId) => ends.has(jobId),
    created(jobId) {
      deferrals.set(jobId, 0);
    },
    mayDefer(jobId) {
      const times = deferrals.get(jobId);
      if (times === undefined || times >= DEFERRALS) return false;
      deferrals.set(jobId, times + 1);
      return true;
    },
    forget(jobId) {
      ends.delete(jobId);
    },
    active: (withinMs) => now() - lastEnd <= withinMs,
    waitForEnd(jobIds, ms, signal) {
      return new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const done = () => {
          clearTimeout(timer);
          waiters.delete(onEnd);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const onEnd = (jobId: string) => {
          if (jobIds.has(jobId)) done();
        };
        const timer = setTimeout(done, ms);
        waiters.add(onEnd);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
  };
}
