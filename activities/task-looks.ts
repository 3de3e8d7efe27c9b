/**
 * The jobs that a workflow task of this worker is about to look at, or is looking at, itself: a
 * look run as a local activity (the check of a webhook's claim) holds its workflow task open until
 * it answers. The webhook gateway beside the worker notes a job when it signals the job's end to
 * its workflow (worker/run-worker.ts hands one instance to both); the look notes it as it begins.
 *
 * Should the job's poller answer meanwhile, its answer reaches the server during that task: when
 * the task then ends the workflow, the server refuses it (new events came), and the worker runs the
 * whole workflow again from its history. Under a burst of short jobs that was a quarter of them. So
 * for a short while after the signal, or after the look began, the poller leaves the job to it: it
 * looks again once the while is over (job-wait.ts), and finds the workflow done, or answers as ever
 * should the workflow have gone on waiting. It costs a job at most HELD_MS, and only when the look
 * it waits for did not end the wait.
 *
 * Process-local and bounded: a poller attempt in another process answers as it would without it.
 */
import { LRUCache } from 'lru-cache';

/** How long after a job was noted the job's poller leaves it to its workflow task. */
export const HELD_MS = 2_000;

/** Enough for the looks of a busy worker within HELD_MS; a forgotten one costs a refused task. */
const REMEMBERED = 50_000;

export interface TaskLooks {
  /** A workflow task will look at this job itself (its end was signalled), or its look began. */
  began(jobId: string): void;
  /** Until when the job's poller leaves it to that task (epoch ms); undefined: no hold. */
  heldUntil(jobId: string): number | undefined;
}

export function createTaskLooks(now: () => number = Date.now): TaskLooks {
  const beganAt = new LRUCache<string, number>({ max: REMEMBERED });
  return {
    began(jobId) {
      beganAt.set(jobId, now());
    },
    heldUntil(jobId) {
      const at = beganAt.get(jobId);
      if (at === undefined) return undefined;
      const until = at + HELD_MS;
      if (until > now()) return until;
      beganAt.delete(jobId);
      return undefined;
    },
  };
}
