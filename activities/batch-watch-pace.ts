/**
 * The pace of watchBatchJobs (batch-watch-jobs.ts), in named steps with no store and no service
 * call: which jobs a round looks at and when the next round comes (the polling schedule, or the
 * webhooks this process hears), the leases its looks extend, its share of the endpoint's /status
 * limit, its heartbeats, and the retryable JobUnchanged that hands the wait to the server.
 */
import { Context } from '@temporalio/activity';
import { ActivityCancelledError, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { createRateLimiter, type RateLimiter } from '../api/rate-limit';
import type { LookShare, WatchedItem } from '../contracts/batch-types';
import { JOB_UNCHANGED } from '../contracts/failures';
import type { Polling } from '../contracts/job-types';
import { intervalAfter } from '../contracts/job-wait-policy';
import { type LookLog, lookTimes } from '../contracts/look-log';
import type { BatchJobReports } from './batch-job-reports';

/** Webhooks count as heard in this process while one reported an end within this. */
const REPORTS_ACTIVE_MS = 10_000;
/**
 * With the gateway in this process, a watcher tries again within a twentieth of its age and at
 * least this far apart (never later than the polling schedule), looking at the jobs reported ended.
 */
const REPORTED_RETRY_MS = 500;
const REPORTED_RETRY_SHARE = 1 / 20;
/** ...and between the looks of one fuller answer, this far apart. */
export const REPORTED_HOLD_MS = 250;
/** How often a watcher with a share of the /status limit asks the server whether it was cancelled. */
const CANCEL_CHECK_MS = 2_000;
/** While webhooks are heard here, a look at every job (a lost webhook's safety net) at least this far apart. */
const FULL_LOOK_MIN_MS = 5_000;

/**
 * A watcher's share limiter, on the clock of every process (the epoch): an attempt carries on the
 * window of the one before it, which may have run in another process (from its heartbeat
 * details); a first attempt, on the looks the watchers before it handed over (`seed`).
 */
export function lookLimiter(
  endpointId: string,
  share: LookShare,
  details: unknown,
  seed: { log: LookLog; source: string; sources?: number | undefined },
): RateLimiter {
  const limiter = createRateLimiter({ status: share }, { now: () => Date.now() });
  const looks = (details as { looks?: unknown } | undefined)?.looks;
  limiter.seed(
    endpointId,
    'status',
    Array.isArray(looks)
      ? looks.filter((at): at is number => typeof at === 'number')
      : lookTimes(seed.log, seed.source, seed.sources ?? 1),
  );
  return limiter;
}

/** When a watcher looks, and at which jobs. */
export interface WatchPace {
  /** Jobs new to this process and old enough to have ended unheard: looked at in the first round. */
  fresh: number[];
  /** Whether this process hears the batch's webhooks now. */
  heard(): boolean;
  /** The wait before the next look, `elapsed` after the activity was scheduled. */
  retryAfter(elapsed: number): number;
  /** Whether the look at `elapsed` is at every job (else only at those reported ended or due). */
  fullLookDue(elapsed: number): boolean;
}

/**
 * With the gateway here, an attempt looks at the jobs reported ended; at every job on the polling
 * schedule, and only every few seconds while webhooks are heard (a lost one, or one that went to
 * another process). Stateless across attempts: the first try of each period.
 */
export function watchPace(
  items: readonly WatchedItem[],
  polling: Polling,
  reports: BatchJobReports | undefined,
): WatchPace {
  // Jobs no watcher here followed before, submitted at least a polling interval ago (a page that
  // took long to answer: many have ended by now, and their webhooks may be lost), are looked at
  // in the first round, once each, so that one answer carries them rather than one now and one
  // at the next full look. Younger ones are not: a look at every job of every page as it
  // answers would spend the /status limit on jobs still queued.
  const fresh = items
    .filter(
      (item) => reports?.isWatched(item[1]) === false && Date.now() - item[4] >= polling.initialIntervalMs,
    )
    .map((item) => item[0]);
  reports?.watching(items.map((item) => item[1]));
  const retryAfter = (elapsed: number) => {
    const scheduled = intervalAfter(elapsed, polling);
    if (!reports) return scheduled;
    return Math.round(Math.min(scheduled, Math.max(REPORTED_RETRY_MS, elapsed * REPORTED_RETRY_SHARE)));
  };
  // Asked at each look: a watcher that started before the batch's first webhook turns to the
  // reported jobs as soon as webhooks arrive (it would otherwise look at every job all along).
  const heard = () => reports?.active(REPORTS_ACTIVE_MS) === true;
  const fullLookDue = (elapsed: number) =>
    !reports ||
    elapsed % Math.max(intervalAfter(elapsed, polling), heard() ? FULL_LOOK_MIN_MS : 0) < retryAfter(elapsed);
  return { fresh, heard, retryAfter, fullLookDue };
}

/**
 * The leases a watcher's looks extend (contracts/submit-lease.ts): a look at a leased job carries
 * its ttl until one is answered, and one not looked at by its due time is looked at then. An entry
 * leaves once a look has set its ttl.
 */
export function leaseExtensions(
  extend: ReadonlyArray<[index: number, ttl: number, dueAt?: number]>,
  pending: ReadonlyMap<number, WatchedItem>,
) {
  const toExtend = new Map(extend.map(([index, ttl, dueAt]) => [index, { ttl, dueAt: dueAt ?? 0 }]));
  const extended: number[] = [];
  const unextended = () => [...toExtend].filter(([index]) => pending.has(index));
  return {
    extended,
    /** The ttl a look at the item sets, while its lease is not extended. */
    ttlOf: (index: number) => toExtend.get(index)?.ttl,
    /** A look answered with the ttl set. */
    noteExtended(index: number): void {
      if (toExtend.delete(index)) extended.push(index);
    },
    /** Adds the items whose extension fell due to the next round's looks. */
    addDue(due: Set<number>, now: number): void {
      for (const [index, { dueAt }] of unextended()) if (dueAt <= now) due.add(index);
    },
    /** How long until the next extension falls due, at most `ms`. */
    until: (ms: number, now: number) =>
      Math.min(ms, ...unextended().map(([, { dueAt }]) => Math.max(0, dueAt - now))),
  };
}

/**
 * Alive, not progress: a round of looks paced by the client's limiter (429s waited out) can outlast
 * the heartbeat timeout, which exists to notice a dead worker. The SDK passes a cancel on with its
 * next heartbeat to the server, up to 0.8 of the heartbeat timeout away; a watcher with a share asks
 * the server itself every CANCEL_CHECK_MS, as the batch counts a cancelled watcher's share as spent
 * only for one window (engine/look-shares.ts). Returns the stop.
 */
export function keepAlive(
  beatDetails: () => unknown,
  checksCancel: boolean,
  cancelled: AbortController,
): () => void {
  const ctx = Context.current();
  let lastCheck = Date.now();
  const alive = setInterval(() => {
    const details = beatDetails();
    ctx.heartbeat(details);
    if (!checksCancel || Date.now() - lastCheck < CANCEL_CHECK_MS) return;
    lastCheck = Date.now();
    ctx.client.activity.heartbeat(ctx.info.taskToken, details).catch((error: unknown) => {
      // Cancelled, or its run is over (continued as new): either way no one reads its answer.
      if (error instanceof ActivityCancelledError || error instanceof ActivityNotFoundError)
        cancelled.abort();
    });
  }, 1_000);
  return () => clearInterval(alive);
}

/**
 * Nothing finished: a retryable JobUnchanged whose nextRetryDelay is the next look, so that no slot
 * is held between looks. With a share, the server records this attempt's looks first, wherever
 * the next attempt runs: the SDK's throttled beat could arrive late or not at all (the pending one
 * carries the same details, so it cannot erase them).
 */
export async function jobsUnchanged(
  beatDetails: (() => unknown) | undefined,
  watched: number,
  running: number,
  delay: number,
): Promise<ApplicationFailure> {
  if (beatDetails) {
    const ctx = Context.current();
    const details = beatDetails();
    ctx.heartbeat(details);
    await ctx.client.activity.heartbeat(ctx.info.taskToken, details).catch(() => undefined);
  }
  return ApplicationFailure.create({
    type: JOB_UNCHANGED,
    message: `none of ${watched} jobs finished; next look in ${delay} ms`,
    nonRetryable: false,
    nextRetryDelay: delay,
    category: ApplicationFailureCategory.BENIGN,
    details: [{ watched, running }],
  });
}
