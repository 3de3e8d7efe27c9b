/**
 * The per-item engine's states, events and commands (item-engine.ts steps them): an item is
 * `queued`, `uncertain`, `running`, `retry-due` or `ended`, each phase with the fields it needs,
 * named for what they hold. Plain data: a batch carries its items through continue-as-new as is.
 */

import type { DueWork } from '../contracts/activity-summaries';
import type { JobStatusValue } from '../contracts/job-types';
import type { JobRuleOptions, RetryableStatus, SubmitKind, SubmitRejection } from './job-rules';
import { lastLookMarginMs, ttlDeadline } from './job-rules';

/** The caller's options for every item, plus how the driver groups its retries. */
export interface ItemRules extends JobRuleOptions {
  /** How long an uncertain submit (no lease) waits for its orphan's webhook. */
  uncertainSubmitWait: number;
  /** /run jobs keep results 30 min, /runsync jobs 1 min. */
  submitKind: SubmitKind;
  /** Retries fall due on multiples of this (the batch groups retries of close failures into one call). */
  retryGridMs: number;
  /**
   * Uncertain submits' waits end on multiples of this: the batch sends the items of close uncertain
   * pages again as one page, under one timer.
   */
  waitGridMs: number;
  /** Endpoints of the route (1: a single endpoint): a hop goes to the next one while there is one. */
  routeLength: number;
  /** Error texts that mean "no capacity here" (contracts/route.ts isCapacityFailure). */
  capacityFailures: readonly string[];
}

/** What every phase carries: which item, what it has tried and what it has cost so far. */
export interface ItemTally {
  index: number;
  /** Runs: jobs submitted or adopted, and /retry calls. */
  attempts: number;
  /** Submits that may have made a job (uncertain ones included). */
  submissions: number;
  /** /retry calls over the item's life. */
  retries: number;
  /** The estimated cost of its finished runs, when prices are known. */
  cost?: number;
  /**
   * Its endpoint's position in the route (absent: the first). Queued, where it goes next (a
   * batch may pick another with room); from its submit on, where its job is.
   */
  endpoint?: number;
  /** Moves to another endpoint of the route (withdrawn when starved, or a capacity failure). */
  hops?: number;
}

/** A submit under a lease: the job's ttl is the lease until its extension is settled. */
export interface ItemLease {
  ttlMs: number;
  /** When the submit answered: the service started the lease no later than that. */
  answeredAt: number;
}

export interface QueuedItem extends ItemTally {
  phase: 'queued';
  /** Certain (not sent) rejections of the submit in a row. */
  rejectedTries: number;
  notBefore?: number;
  /** Tries in a row the endpoint's gate had no room for: not rejections, and never the item's end. */
  noRoomTries?: number;
}

export interface UncertainItem extends ItemTally {
  phase: 'uncertain';
  sentAt: number;
  waitUntil: number;
  webhookArmed: boolean;
  /** The caller's ttl, when the submit said it. */
  ttlMs?: number;
  lease?: ItemLease;
}

/** A job known by its id, from its submit (or adoption) to its terminal status. */
export interface KnownJob extends ItemTally {
  jobId: string;
  /** Workflow time of its submit (before the call: the earliest the service can have counted from). */
  submittedAt: number;
  /** The caller's ttl (the service's deadline once the lease is extended). */
  ttlMs: number;
  adopted: boolean;
  /** The last time the job was known to exist (its submit's answer, its adoption, its /retry). */
  aliveAt: number;
}

export interface RunningItem extends KnownJob {
  phase: 'running';
  status: JobStatusValue;
  /** Set while the lease is not extended; `unsettled`: tried, neither made nor refused. */
  lease?: ItemLease & { unsettled?: boolean };
}

export interface RetryDueItem extends KnownJob {
  phase: 'retry-due';
  status: RetryableStatus;
  finishedAt: number;
  retryAt: number;
}

/** How an item ended: the batch's counters are named the same. */
export type ItemOutcome =
  | 'completed'
  | 'failed'
  | 'timedOut'
  | 'expired'
  | 'cancelled'
  | 'uncertain'
  | 'rejected';

export interface EndedItem extends ItemTally {
  phase: 'ended';
  outcome: ItemOutcome;
  /** The status its result line shows: the job's, or EXPIRED, UNCERTAIN, REJECTED. */
  status: string;
  /** Why it ended, in words (none for a completed item). */
  reason?: string;
  /** A rejection's failure type (BadRequest, RateLimited, ...), for the job's typed failure. */
  failureType?: string;
  /** Expired because its ttl passed or its results were deleted. */
  expired?: 'ttl' | 'results';
  jobId?: string;
  submittedAt?: number;
  endedAt: number;
}

export type ItemState = QueuedItem | UncertainItem | RunningItem | RetryDueItem | EndedItem;

export type ItemEvent =
  /** The submit made job `jobId`; `leaseTtlMs`: under that lease, `extended`: already extended. */
  | {
      kind: 'submitted';
      jobId: string;
      ttlMs: number;
      sentAt: number;
      answeredAt: number;
      leaseTtlMs?: number;
      extended?: boolean;
      /** The route position it went to (absent: where the item said). */
      endpoint?: number;
    }
  /** The service certainly did not act on the submit. */
  | { kind: 'rejected'; rejection: SubmitRejection & { type: string; message: string }; now: number }
  /** The submit may have made a job whose id never came. */
  | {
      kind: 'uncertain';
      sentAt: number;
      answeredAt: number;
      webhookArmed: boolean;
      ttlMs?: number;
      leaseTtlMs?: number;
      /** The route position it went to (absent: where the item said). */
      endpoint?: number;
    }
  /** An orphan reported itself by webhook and was confirmed; `extendedTo`: the look extended it. */
  | { kind: 'orphan-reported'; jobId: string; now: number; defaultTtlMs: number; extendedTo?: number }
  /** An uncertain submit's wait ended with no orphan. */
  | { kind: 'wait-over'; stopping: boolean }
  | { kind: 'lease-extended'; ttlMs?: number }
  | { kind: 'lease-unsettled' }
  /** A non-terminal status. */
  | { kind: 'observed'; status: JobStatusValue }
  /** A terminal status; `cost`: this run's estimate. */
  | {
      kind: 'finished';
      status: 'COMPLETED' | 'FAILED' | 'TIMED_OUT' | 'CANCELLED';
      now: number;
      cost?: number;
      error?: string;
    }
  /** A 404 while following the job (or its lease's extension): the service no longer has it. */
  | { kind: 'gone'; now: number; lastAliveAt?: number; stopping: boolean }
  /** The ttl deadline came and the last look found the job unfinished (or found nothing). */
  | { kind: 'deadline'; now: number; status?: JobStatusValue; stopping: boolean }
  /**
   * The answer of a withdrawal (its endpoint starved it in the queue): `withdrawn`, cancelled and
   * confirmed never started; `stopped`, the cancel came as it started (it ran only that long);
   * `started`, seen IN_PROGRESS before any cancel (it stays).
   */
  | { kind: 'withdrawn'; outcome: 'withdrawn' | 'stopped' | 'started'; now: number }
  /** The ttl was extended by the caller (counted from submission). */
  | { kind: 'ttl-extended'; ttlMs: number }
  /** A retry's due time came. */
  | { kind: 'retry-time'; now: number; stopping: boolean }
  /** /retry answered: the job runs again. */
  | { kind: 'retried'; status: JobStatusValue; now: number }
  /** /retry answered 404. */
  | { kind: 'retry-gone'; now: number; stopping: boolean }
  /** /retry failed for good. */
  | { kind: 'retry-failed'; now: number; error: string }
  /** The /retry call itself went unanswered: tried again after a pause. */
  | { kind: 'retry-unanswered'; now: number; pauseMs: number }
  /**
   * The work around the item was cancelled: a job in flight ends CANCELLED (or with the status its
   * /cancel answered), one waiting for a retry with its last status, an uncertain submit UNCERTAIN.
   */
  | { kind: 'abandoned'; now: number; reason: string; status?: string };

/** Counters an event moves (the batch sums them; the job shows them). */
export type ItemCount =
  | 'submission'
  | 'uncertainSubmit'
  | 'uncertainAdopted'
  | 'resubmittedAfterLease'
  | 'leaseLapse'
  | 'retry'
  /** A move to another endpoint of the route. */
  | 'hop';

export type ItemCommand =
  /** Call /retry now. */
  | { kind: 'retry' }
  /** Cancel a job that is being replaced (it may still be queued or running). */
  | { kind: 'cancel'; jobId: string };

export interface ItemStep {
  item: ItemState;
  counts: ItemCount[];
  commands: ItemCommand[];
}

/** A new item, before its first submit. */
export function queuedItem(index: number): QueuedItem {
  return { phase: 'queued', index, attempts: 0, submissions: 0, retries: 0, rejectedTries: 0 };
}

/** The item's endpoint's position in the route. */
export function endpointOf(item: ItemState): number {
  return item.endpoint ?? 0;
}

/** The moment the service deletes the job: its ttl (the lease's, until extended) from submission. */
export function deadlineOf(item: RunningItem | RetryDueItem): number {
  const lease = item.phase === 'running' ? item.lease : undefined;
  return ttlDeadline(item.submittedAt, lease ? lease.ttlMs : item.ttlMs);
}

/** When the job is looked at for the last time before its deadline: one look must still find it. */
export function lastLookAt(item: RunningItem | RetryDueItem): number {
  return deadlineOf(item) - lastLookMarginMs(item.ttlMs);
}

/** What falls due for an item without any event: its submit, the end of its orphan wait, its retry. */
export interface ItemDue {
  at: number;
  work: DueWork;
}

/** When the item next needs the driver without any event, and for what. */
export function dueOf(item: ItemState): ItemDue | undefined {
  if (item.phase === 'queued')
    return item.notBefore === undefined ? undefined : { at: item.notBefore, work: 'submit' };
  if (item.phase === 'uncertain') return { at: item.waitUntil, work: 'orphan-wait-end' };
  if (item.phase === 'retry-due') return { at: item.retryAt, work: 'retry' };
  return undefined;
}
