/**
 * The per-job rules, shared by the job workflow (one job) and the batch workflow (many): when a
 * FAILED or TIMED_OUT job is retried and after how long, when a job counts as gone (its ttl
 * deadline, its results' retention), and what an expired job or an uncertain submit leads to.
 * Pure functions of numbers and options: no clock, no Temporal calls, so both workflows (and unit
 * tests) get the same answers from the same inputs. The workflows own the clock and the commands.
 */
import type { JobRetryOptions } from '../contracts/job-input';

/** How long the service keeps a finished job's results (and with them, the chance of a /retry). */
export const RETENTION_MS = { run: 30 * 60_000, runsync: 60_000 } as const;
/** The cap on the retry backoff when the caller set none (or the initial interval, if larger). */
export const DEFAULT_MAX_RETRY_INTERVAL_MS = 10 * 60_000;

export type SubmitKind = keyof typeof RETENTION_MS;
export type RetryableStatus = 'FAILED' | 'TIMED_OUT';
export type ResubmitChoice = 'fail' | 'resubmit';

/** What the rules need of the caller's options (the job workflow's and a batch's per-item ones). */
export interface JobRuleOptions {
  retry: JobRetryOptions;
  onExpired: ResubmitChoice;
  onUncertainSubmit: ResubmitChoice;
  maxSubmissions: number;
  maxLeaseResubmits: number;
}

/** Backoff of the workflows' own retries of a submit that certainly was not sent. */
export const SUBMIT_RETRY = {
  maximumAttempts: 8,
  initialIntervalMs: 1_000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60_000,
};

/** A submit the service certainly did not act on: whether it may be sent again, and when. */
export interface SubmitRejection {
  retryable: boolean;
  /** The service's Retry-After (a 429), in ms. */
  retryAfterMs?: number;
  /** Nothing was refused: the endpoint's gate had no room (noRoomRetryDelayMs). */
  noRoom?: boolean;
}

/**
 * After `triesSoFar` tries of a submit, the last one rejected: the pause before the next try (the
 * backoff, or the service's Retry-After when longer), or undefined when it is not tried again.
 */
export function submitRetryDelayMs(rejection: SubmitRejection, triesSoFar: number): number | undefined {
  if (!rejection.retryable || triesSoFar >= SUBMIT_RETRY.maximumAttempts) return undefined;
  return Math.max(submitBackoffMs(triesSoFar), rejection.retryAfterMs ?? 0);
}

/**
 * After `triesSoFar` tries in a row that the endpoint's gate had no room for (the endpoint paused,
 * or its window taken by work that goes first): the pause before the next try. Such a try is no
 * rejection: nothing was refused by the service, so it is tried for as long as the gate has no
 * room, at most a minute apart (a job waiting out a pause costs a try a minute in history).
 */
export function noRoomRetryDelayMs(triesSoFar: number): number {
  return submitBackoffMs(triesSoFar);
}

function submitBackoffMs(triesSoFar: number): number {
  return Math.min(
    SUBMIT_RETRY.initialIntervalMs * SUBMIT_RETRY.backoffCoefficient ** (triesSoFar - 1),
    SUBMIT_RETRY.maximumIntervalMs,
  );
}

/** The backoff before the next /retry, after `retriesSoFar` retries. */
export function retryBackoffMs(retry: JobRetryOptions, retriesSoFar: number): number {
  const { initialInterval, backoffCoefficient, maximumInterval } = retry;
  return Math.min(
    initialInterval * backoffCoefficient ** retriesSoFar,
    maximumInterval ?? Math.max(DEFAULT_MAX_RETRY_INTERVAL_MS, initialInterval),
  );
}

export type TerminalDecision =
  | { kind: 'completed' }
  /** Cancelled by someone else: never retried. */
  | { kind: 'cancelled' }
  | { kind: 'retry'; backoffMs: number }
  | { kind: 'give-up'; status: RetryableStatus };

/** What a job's terminal status leads to, given the retries it already had. */
export function afterTerminal(
  status: 'COMPLETED' | 'CANCELLED' | RetryableStatus,
  retry: JobRetryOptions,
  retriesSoFar: number,
): TerminalDecision {
  if (status === 'COMPLETED') return { kind: 'completed' };
  if (status === 'CANCELLED') return { kind: 'cancelled' };
  if (!retry.on.includes(status) || retriesSoFar >= retry.maxRetries) return { kind: 'give-up', status };
  return { kind: 'retry', backoffMs: retryBackoffMs(retry, retriesSoFar) };
}

/**
 * Whether a /retry can still find the job at `now`: not past its ttl deadline (a hard limit from
 * submission; /retry does not reset it) and its results still kept. Undefined: it can.
 */
export function goneBeforeRetry(
  now: number,
  deadline: number,
  resultsExpireAt: number,
): 'ttl' | 'results' | undefined {
  if (now >= deadline) return 'ttl';
  if (now >= resultsExpireAt) return 'results';
  return undefined;
}

/** The ttl deadline: the service counts the ttl from submission, queue time included. */
export function ttlDeadline(submittedAt: number, ttlMs: number): number {
  return submittedAt + ttlMs;
}

/** How long before its deadline a job is looked at for the last time (one look must still find it). */
export function lastLookMarginMs(ttlMs: number): number {
  return Math.min(5_000, ttlMs / 10);
}

/** When a job that finished at `finishedAt` loses its results (an estimate: the look came later). */
export function resultsExpireAt(finishedAt: number, kind: SubmitKind): number {
  return finishedAt + RETENTION_MS[kind];
}

/**
 * A 404 from a job: before its last look (item-state.ts lastLookAt: the deadline less the last
 * look's margin), and with no sight of the job for a whole retention period, its results expired
 * unseen; otherwise the ttl deleted it.
 */
export function whyGone(
  now: number,
  lastLookAt: number,
  lastAliveAt: number | undefined,
  kind: SubmitKind,
): 'ttl' | 'results' {
  const ttlPassed = now >= lastLookAt;
  const seenRecently = lastAliveAt !== undefined && now - lastAliveAt < RETENTION_MS[kind];
  return ttlPassed || seenRecently ? 'ttl' : 'results';
}

/** An expired job: submitted afresh, or the end, as the caller chose and the submissions allow. */
export function onExpired(options: JobRuleOptions, submissionsSoFar: number): ResubmitChoice {
  return options.onExpired === 'resubmit' && submissionsSoFar < options.maxSubmissions ? 'resubmit' : 'fail';
}

/**
 * After an uncertain submit under a lease that no orphan answered within the lease and the webhook
 * window: send again while submissions are left, counting maxLeaseResubmits on top of
 * maxSubmissions, since such a resend cannot make a second live job (see contracts/submit-lease.ts).
 */
export function resubmitAfterLease(options: JobRuleOptions, submissionsSoFar: number): boolean {
  return submissionsSoFar < options.maxSubmissions + options.maxLeaseResubmits;
}

/**
 * After an uncertain submit that no orphan's webhook resolved: send again (at-least-once) only if
 * the caller chose so and submissions are left; `why` says why not, for the failure message.
 */
export function onUncertainSubmit(
  options: JobRuleOptions,
  submissionsSoFar: number,
): { choice: 'resubmit' } | { choice: 'fail'; why: string } {
  if (options.onUncertainSubmit === 'resubmit' && submissionsSoFar < options.maxSubmissions) {
    return { choice: 'resubmit' };
  }
  return {
    choice: 'fail',
    why:
      options.onUncertainSubmit === 'resubmit'
        ? `maxSubmissions (${options.maxSubmissions}) is reached`
        : 'onUncertainSubmit is fail, so it was not sent again (a second job could run twice)',
  };
}
