/**
 * The shapes that cross between the batch workflow and its activities: the items a watcher
 * follows and the changes it reports, a submit's answers, the lines handed to be recorded, and the
 * share of an endpoint's limits a page or a watcher keeps to. Compact: each is written to history.
 *
 * Types only, with one type import: nothing of it reaches the workflow bundle.
 */
import type { BatchResultLine } from './batch-summary';
import type { Scheduling } from './endpoint-gate';

/** One item in flight, as the watcher needs it: [index, jobId, last known status]. */
export type WatchedItem = [
  index: number,
  jobId: string,
  status: string,
  attempts: number,
  submittedAt: number,
  /** The estimated cost of its earlier runs (a retried job), so its line carries the sum. */
  earlierCost?: number | null,
  /** Its moves between the route's endpoints, so its line says them (absent: none). */
  hops?: number,
];

/** A submit's answer for one item. */
export type SubmitItemResult =
  /** ttl: the caller's (the request's policy.ttl); lease: the ttl it went out with under a lease. */
  | { i: number; id: string; ttl?: number; lease?: number }
  /** The service certainly did not act on it (retryAfterMs: a 429's Retry-After). */
  | { i: number; rejected: { type: string; message: string; retryable: boolean; retryAfterMs?: number } }
  /** It may have created a job whose id never arrived (under a lease: lease is its ttl). */
  | { i: number; uncertain: string; armed: boolean; lease?: number; ttl?: number };

/** A status change the watcher saw (COMPLETED lines are already written by it). */
export interface ItemChange {
  i: number;
  status: string;
  /** A FAILED run's error text: carried only by watchers from before errorRef (old histories). */
  error?: string;
  /** Where a FAILED run's error text is in the batch store: the text itself never enters history. */
  errorRef?: string;
  delayTime?: number;
  executionTime?: number;
  /** 404: the service no longer knows the job. */
  gone?: boolean;
  /**
   * A FAILED run whose error text contains one of the route's capacityFailures: the pattern it
   * matched (the caller's words, never the service's text).
   */
  capacityFailure?: string;
  at: number;
  /** This run's estimated cost (when the worker has prices), in the watch answer's currency. */
  cost?: number;
}

/** A line as the workflow hands it to be recorded: its error text may still be in the store. */
export type PendingResultLine = BatchResultLine & { errorRef?: string };

/**
 * A limit a worker's client keeps to for one operation on each endpoint (absent: none): a batch
 * holds its endpoint's /run limit and shares its /status limit among all the workers that run its activities
 * (engine/send-window.ts, engine/look-shares.ts).
 */
export interface EndpointLimit {
  perTenSeconds?: number;
  concurrent?: number;
}

/** A watcher's share of its endpoint's /status limit: its looks, at most these, whatever else runs. */
export interface LookShare {
  perTenSeconds: number;
  concurrent: number;
}

/** How a page's requests go out: `concurrent` at a time, each within the room its endpoint's gate grants. */
export interface PageSend {
  concurrent: number;
  /** The batch's priority and fairness key at the endpoint's gate. */
  scheduling: Scheduling;
}
