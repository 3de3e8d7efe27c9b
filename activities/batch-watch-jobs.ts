/**
 * watchBatchJobs: looks at /status for the jobs in flight and answers with those that finished
 * (COMPLETED results written to the store here); nothing finished, a retryable JobUnchanged whose
 * nextRetryDelay is the next look, so that no slot is held between looks.
 */
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import { ActivityCancelledError, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory, CancelledFailure } from '@temporalio/common';
import { sleep } from '../api/backoff';
import { ServiceError } from '../api/errors';
import { createRateLimiter, type RateLimiter } from '../api/rate-limit';
import type { BatchResultLine } from '../contracts/batch-summary';
import type { ItemChange, LookShare, WatchedItem } from '../contracts/batch-types';
import { roundCost } from '../contracts/cost';
import { JOB_UNCHANGED } from '../contracts/failures';
import type { Polling } from '../contracts/job-types';
import { INLINE_BUDGET_MS, INLINE_MAX_INTERVAL_MS, intervalAfter } from '../contracts/job-wait-policy';
import { type LookLog, lookLogOf, lookTimes } from '../contracts/look-log';
import { isCapacityFailure } from '../contracts/route';
import { type BatchShared, batchContext, TERMINAL } from './batch-shared';
import { DEFAULT_INLINE_MAX_BYTES, inlineOrStore } from './result-store';

/** Webhooks count as heard in this process while one reported an end within this. */
const REPORTS_ACTIVE_MS = 10_000;
/**
 * With the gateway in this process, a watcher tries again within a twentieth of its age and at
 * least this far apart (never later than the polling schedule), looking at the jobs reported ended.
 */
const REPORTED_RETRY_MS = 500;
const REPORTED_RETRY_SHARE = 1 / 20;
/** ...and between the looks of one fuller answer, this far apart. */
const REPORTED_HOLD_MS = 250;
/** How often a watcher with a share of the /status limit asks the server whether it was cancelled. */
const CANCEL_CHECK_MS = 2_000;
/** While webhooks are heard here, a look at every job (a lost webhook's safety net) at least this far apart. */
const FULL_LOOK_MIN_MS = 5_000;

/** The first of the route's capacity failure patterns a job's error text contains. */
function capacityPattern(error: string, patterns: readonly string[] | undefined): string | undefined {
  return patterns?.find((pattern) => isCapacityFailure(error, [pattern]));
}

export function watchActivities(shared: BatchShared) {
  const { deps, client, lookSource, store, outputs, shorten, metrics, inFlight, runCost } = shared;

  /**
   * A watcher's share limiter, on the clock of every process (the epoch): an attempt carries on the
   * window of the one before it, which may have run in another process (from its heartbeat
   * details); a first attempt, on the looks the watchers before it handed over (`seed`).
   */
  function lookLimiter(
    endpointId: string,
    share: LookShare,
    details: unknown,
    seed: LookLog,
    seedSources = 1,
  ): RateLimiter {
    const limiter = createRateLimiter({ status: share }, { now: () => Date.now() });
    const looks = (details as { looks?: unknown } | undefined)?.looks;
    limiter.seed(
      endpointId,
      'status',
      Array.isArray(looks)
        ? looks.filter((at): at is number => typeof at === 'number')
        : lookTimes(seed, lookSource, seedSources),
    );
    return limiter;
  }

  return {
    /**
     * One look at every job in flight. Returns the items that finished (and, while more finish,
     * keeps looking for up to holdMs or until returnAfter have); nothing finished: JobUnchanged.
     */
    async watchBatchJobs(input: {
      endpointId: string;
      batchKey: string;
      items: WatchedItem[];
      polling: Polling;
      returnAfter: number;
      holdMs: number;
      inlineMaxBytes?: number;
      /** The route's capacityFailures: a FAILED job's error text is matched against them here. */
      capacityFailures?: string[];
      /** The watcher's share of the endpoint's /status limit, which the batch holds for all its workers. */
      share?: LookShare;
      /** The looks of the watchers before it that still count in the service's window (contracts/look-log.ts). */
      seed?: LookLog;
      /** How many clients' looks the batch held when it took the seed (contracts/look-log.ts). */
      seedSources?: number;
      /**
       * Jobs whose lease the looks extend (contracts/submit-lease.ts): the ttl each look sets until
       * one is answered, and the time by which one is looked at whatever the schedule (absent: at
       * once, as for an adopted orphan).
       */
      extend?: Array<[index: number, ttl: number, dueAt?: number]>;
    }): Promise<{
      changes: ItemChange[];
      running: number;
      currency?: string;
      looks?: LookLog;
      /** The jobs of `extend` whose ttl a look set. */
      extended?: number[];
    }> {
      const { info, runId } = batchContext();
      const shareLimiter =
        input.share &&
        lookLimiter(
          input.endpointId,
          input.share,
          info.heartbeatDetails,
          input.seed ?? [],
          input.seedSources,
        );
      // Every beat says when this attempt looked (the next attempt's window starts from them).
      const beatDetails = () => ({ looks: shareLimiter?.recent(input.endpointId, 'status') ?? [] });
      const ctx = Context.current();
      // The SDK passes a cancel on with its next heartbeat to the server, up to 0.8 of the heartbeat
      // timeout away; a watcher with a share asks the server itself every CANCEL_CHECK_MS, as the
      // batch counts a cancelled watcher's share as spent only for one window (engine/look-shares.ts).
      const cancelled = new AbortController();
      const signal = shareLimiter
        ? AbortSignal.any([ctx.cancellationSignal, cancelled.signal])
        : ctx.cancellationSignal;
      const reports = deps.batchJobReports;
      // Jobs no watcher here followed before, submitted at least a polling interval ago (a page that
      // took long to answer: many have ended by now, and their webhooks may be lost), are looked at
      // in the first round, once each, so that one answer carries them rather than one now and one
      // at the next full look. Younger ones are not: a look at every job of every page as it
      // answers would spend the /status limit on jobs still queued.
      const fresh = input.items
        .filter(
          (item) =>
            reports?.isWatched(item[1]) === false && Date.now() - item[4] >= input.polling.initialIntervalMs,
        )
        .map((item) => item[0]);
      reports?.watching(input.items.map((item) => item[1]));
      // With the gateway here, an attempt looks at the jobs reported ended; at every job on the
      // polling schedule, and only every few seconds while webhooks are heard (a lost one, or one
      // that went to another process). Stateless across attempts: the first try of each period.
      const age = Date.now() - info.scheduledTimestampMs;
      const retryAfter = (elapsed: number) => {
        const scheduled = intervalAfter(elapsed, input.polling);
        if (!reports) return scheduled;
        return Math.round(Math.min(scheduled, Math.max(REPORTED_RETRY_MS, elapsed * REPORTED_RETRY_SHARE)));
      };
      // Asked at each look: a watcher that started before the batch's first webhook turns to the
      // reported jobs as soon as webhooks arrive (it would otherwise look at every job all along).
      const heard = () => reports?.active(REPORTS_ACTIVE_MS) === true;
      const fullLookDue = (elapsed: number) =>
        !reports ||
        elapsed % Math.max(intervalAfter(elapsed, input.polling), heard() ? FULL_LOOK_MIN_MS : 0) <
          retryAfter(elapsed);
      let full = info.attempt === 1 ? !heard() : fullLookDue(age);
      // One listener per status call in flight on this one signal.
      setMaxListeners(2 * input.items.length + 10, signal);
      const inlineMaxBytes = input.inlineMaxBytes ?? deps.inlineMaxBytes ?? DEFAULT_INLINE_MAX_BYTES;
      const pending = new Map(input.items.map((item) => [item[0], item]));
      // Jobs looked at in the next round whatever the schedule: new here, or whose last look failed
      // (a 5xx, a dropped answer) rather than at the next full look, so that one answer carries them.
      const due = new Set<number>(fresh);
      // A look at a leased job carries its ttl until one is answered: it extends as it reads. One
      // not looked at by its due time is looked at then.
      // An entry leaves once a look has set its ttl.
      const toExtend = new Map(
        (input.extend ?? []).map(([index, ttl, dueAt]) => [index, { ttl, dueAt: dueAt ?? 0 }]),
      );
      const extended: number[] = [];
      const unextended = () => [...toExtend].filter(([index]) => pending.has(index));
      const addDueExtensions = (now: number) => {
        for (const [index, { dueAt }] of unextended()) if (dueAt <= now) due.add(index);
      };
      /** How long until the next extension falls due, at most `ms`. */
      const untilExtension = (ms: number, now: number) =>
        Math.min(ms, ...unextended().map(([, { dueAt }]) => Math.max(0, dueAt - now)));
      addDueExtensions(Date.now());
      const changes: ItemChange[] = [];
      const lines: string[] = [];
      const started = Date.now();
      let firstChangeAt: number | undefined;
      let running = 0;
      let currency: string | undefined;
      let completed = 0;
      // Between looks: woken by the report of one of the pending jobs' end (looked at at once).
      const pause = async (ms: number) => {
        const wait = untilExtension(ms, Date.now());
        if (reports)
          await reports.waitForEnd(new Set([...pending.values()].map((item) => item[1])), wait, signal);
        else await sleep(wait, signal).catch(() => undefined);
        if (signal.aborted) throw new CancelledFailure('activity cancelled');
      };
      // Alive, not progress: a round of looks paced by the client's limiter (429s waited out) can
      // outlast the heartbeat timeout, which exists to notice a dead worker.
      let lastCheck = Date.now();
      const alive = setInterval(() => {
        const details = beatDetails();
        ctx.heartbeat(details);
        if (!shareLimiter || Date.now() - lastCheck < CANCEL_CHECK_MS) return;
        lastCheck = Date.now();
        ctx.client.activity.heartbeat(info.taskToken, details).catch((error: unknown) => {
          // Cancelled, or its run is over (continued as new): either way no one reads its answer.
          if (error instanceof ActivityCancelledError || error instanceof ActivityNotFoundError)
            cancelled.abort();
        });
      }, 1_000);
      try {
        for (;;) {
          running = 0;
          let errors = 0;
          addDueExtensions(Date.now());
          const hearing = heard();
          const reported = (jobId: string) => reports?.hasEnded(jobId) === true;
          const looked = [...pending.values()].filter(
            (item) => full || reported(item[1]) || due.has(item[0]),
          );
          due.clear();
          await Promise.all(
            looked.map(async ([i, jobId, , attempts, submittedAt, earlierCost, hops]) => {
              let status: Awaited<ReturnType<typeof client.jobs.status>>;
              try {
                // While webhooks are heard, a full look only backs them up: it waits behind the looks
                // at reported jobs (and everything else) in the rate limiter.
                const background = hearing && !reported(jobId);
                const release = await shareLimiter?.acquire(
                  input.endpointId,
                  'status',
                  signal,
                  background ? 'background' : 'normal',
                );
                const ttl = toExtend.get(i)?.ttl;
                try {
                  status = await client.jobs.status(input.endpointId, jobId, {
                    signal,
                    ...(ttl === undefined ? { background } : { ttl }),
                  });
                  if (toExtend.delete(i)) extended.push(i);
                } finally {
                  release?.();
                }
              } catch (error) {
                if (error instanceof ServiceError && error.kind === 'NotFound') {
                  pending.delete(i);
                  inFlight.left(input.endpointId, jobId);
                  changes.push({ i, status: 'GONE', gone: true, at: Date.now() });
                } else {
                  errors++;
                  due.add(i);
                }
                return;
              }
              if (!TERMINAL.has(status.status)) {
                if (status.status === 'IN_PROGRESS') running++;
                return;
              }
              pending.delete(i);
              const at = Date.now();
              const change: ItemChange = { i, status: status.status, at };
              if (status.delayTime !== undefined) change.delayTime = status.delayTime;
              if (status.executionTime !== undefined) change.executionTime = status.executionTime;
              if (status.status === 'FAILED' && status.error !== undefined) {
                // The handler's error text is the caller's data: to the store, a key in history.
                const key = `${input.batchKey}/errors/${i}-${attempts}-${createHash('sha256').update(jobId).digest('hex').slice(0, 16)}`;
                await store.writeLines(key, [JSON.stringify(shorten(status.error))]);
                change.errorRef = key;
                const pattern = capacityPattern(status.error, input.capacityFailures);
                if (pattern !== undefined) change.capacityFailure = pattern;
              }
              const first = inFlight.finished(input.endpointId, jobId);
              if (first) metrics.jobRunFinished(status.status);
              const cost = await runCost(input.endpointId, status.executionTime, first);
              if (cost) {
                change.cost = cost.amount;
                currency = cost.currency;
              }
              // The item's line carries all its runs: the earlier ones of a retried job too.
              const itemCost =
                cost || (earlierCost !== undefined && earlierCost !== null)
                  ? roundCost((cost?.amount ?? 0) + (earlierCost ?? 0))
                  : undefined;
              if (status.status === 'COMPLETED') {
                const output =
                  status.output === undefined
                    ? {}
                    : await inlineOrStore(
                        outputs,
                        `${input.batchKey}/${i}-${jobId}`,
                        status.output,
                        inlineMaxBytes,
                      );
                const line: BatchResultLine = {
                  index: i,
                  jobId,
                  endpointId: input.endpointId,
                  ...(hops ? { hops } : {}),
                  status: 'COMPLETED',
                  ...output,
                  attempts,
                  submissions: 0,
                  ...(change.delayTime !== undefined ? { delayTime: change.delayTime } : {}),
                  ...(change.executionTime !== undefined ? { executionTime: change.executionTime } : {}),
                  ...(itemCost !== undefined ? { cost: itemCost } : {}),
                  submittedAt,
                  finishedAt: at,
                };
                lines.push(JSON.stringify(line));
                completed++;
              }
              changes.push(change);
            }),
          );
          if (signal.aborted) throw new CancelledFailure('activity cancelled');
          if (changes.length === 0 && errors > 0 && errors === looked.length) {
            throw ApplicationFailure.retryable('no job status could be read', 'StatusUnavailable');
          }
          const enough = changes.length >= input.returnAfter || pending.size === 0;
          if (changes.length > 0) firstChangeAt ??= Date.now();
          // Enough changes answer at once, unless some looks failed: those are tried again first,
          // within the hold (each answer costs the batch history events).
          const held = Date.now() - (firstChangeAt ?? 0) >= input.holdMs;
          if (changes.length > 0 && ((enough && due.size === 0) || held)) break;
          // Leases extended: the batch must know (a next attempt would extend them again).
          if (changes.length === 0 && extended.length > 0) break;
          if (changes.length === 0) {
            const now = Date.now();
            const delay = untilExtension(retryAfter(now - info.scheduledTimestampMs), now);
            // As the job's wait does: a short interval is waited inside the attempt (a retry's round
            // trip through the server would cost more), within the attempt's inline budget.
            if (delay < INLINE_MAX_INTERVAL_MS && now + delay - started <= INLINE_BUDGET_MS) {
              await pause(delay);
              full = fullLookDue(Date.now() - info.scheduledTimestampMs);
              continue;
            }
            if (shareLimiter) {
              // The server records this attempt's looks before the next attempt starts, wherever it
              // runs: the SDK's throttled beat could arrive late or not at all (the pending one
              // carries the same details, so it cannot erase them).
              const details = beatDetails();
              ctx.heartbeat(details);
              await ctx.client.activity.heartbeat(info.taskToken, details).catch(() => undefined);
            }
            throw ApplicationFailure.create({
              type: JOB_UNCHANGED,
              message: `none of ${input.items.length} jobs finished; next look in ${delay} ms`,
              nonRetryable: false,
              nextRetryDelay: delay,
              category: ApplicationFailureCategory.BENIGN,
              details: [{ watched: input.items.length, running }],
            });
          }
          await pause(heard() ? REPORTED_HOLD_MS : Math.min(input.polling.initialIntervalMs, 1_000));
          full = !heard();
        }
      } finally {
        clearInterval(alive);
      }
      if (lines.length > 0) {
        // One part per activity: a retried attempt replaces it (the same jobs are still COMPLETED).
        await store.writeLines(`${input.batchKey}/results/${runId}-${info.activityId}.jsonl`, lines);
      }
      for (let k = 0; k < completed; k++) metrics.batchItemFinished('completed');
      // Its window goes to the batch, for the watchers after it.
      const looks = shareLimiter && lookLogOf(shareLimiter.recent(input.endpointId, 'status'), lookSource);
      return {
        changes,
        running,
        ...(currency === undefined ? {} : { currency }),
        ...(looks?.length ? { looks } : {}),
        ...(extended.length === 0 ? {} : { extended }),
      };
    },
  };
}
