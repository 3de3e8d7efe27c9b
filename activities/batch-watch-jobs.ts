/**
 * watchBatchJobs: looks at /status for the jobs in flight and answers with those that finished
 * (COMPLETED results written to the store here); nothing finished, a retryable JobUnchanged whose
 * nextRetryDelay is the next look, so that no slot is held between looks.
 *
 * In steps: a round of looks (`lookRound`), each one job's look (`lookAtJob`) and, for a job that
 * finished, its change and result line (`finishedChange`); the rounds go on until the answer is
 * worth sending (`watchBatchJobs`). When to look and at which jobs, the leases the looks extend,
 * the heartbeats and the JobUnchanged are in batch-watch-pace.ts.
 */
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { sleep } from '../api/backoff';
import { ServiceError } from '../api/errors';
import type { RateLimiter } from '../api/rate-limit';
import type { JobStatus } from '../api/schemas/job';
import type { BatchResultLine } from '../contracts/batch-summary';
import type { ItemChange, LookShare, WatchedItem } from '../contracts/batch-types';
import { roundCost } from '../contracts/cost';
import type { Polling } from '../contracts/job-types';
import { INLINE_BUDGET_MS, INLINE_MAX_INTERVAL_MS } from '../contracts/job-wait-policy';
import { type LookLog, lookLogOf } from '../contracts/look-log';
import { stageLineKey } from '../contracts/pipeline-types';
import { isCapacityFailure } from '../contracts/route';
import { DEFAULT_INLINE_MAX_BYTES, inlineOrStore } from '../stores/result-store';
import type { BatchJobReports } from './batch-job-reports';
import { type BatchShared, batchContext, TERMINAL } from './batch-shared';
import {
  jobsUnchanged,
  keepAlive,
  leaseExtensions,
  lookLimiter,
  REPORTED_HOLD_MS,
  type WatchPace,
  watchPace,
} from './batch-watch-pace';

/** The input of one watcher: the jobs it follows and how. */
export interface WatchBatchJobsInput {
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
  /**
   * Each COMPLETED line written under a key of its own (a pipeline stage's: the next stage reads
   * it by the piece's number), not in a part of the results.
   */
  linePerItem?: boolean;
}

export interface WatchBatchJobsAnswer {
  changes: ItemChange[];
  running: number;
  currency?: string;
  looks?: LookLog;
  /** The jobs of `extend` whose ttl a look set. */
  extended?: number[];
}

/** The first of the route's capacity failure patterns a job's error text contains. */
function capacityPattern(error: string, patterns: readonly string[] | undefined): string | undefined {
  return patterns?.find((pattern) => isCapacityFailure(error, [pattern]));
}

/** What one watcher attempt holds while it looks, round after round. */
interface Watch {
  input: WatchBatchJobsInput;
  signal: AbortSignal;
  shareLimiter: RateLimiter | undefined;
  reports: BatchJobReports | undefined;
  pace: WatchPace;
  extensions: ReturnType<typeof leaseExtensions>;
  inlineMaxBytes: number;
  /** The jobs not yet seen finished, by item index. */
  pending: Map<number, WatchedItem>;
  /** Looked at in the next round whatever the schedule: new here, or whose last look failed. */
  due: Set<number>;
  changes: ItemChange[];
  /** COMPLETED result lines, written as one part once the answer is ready. */
  lines: string[];
  running: number;
  currency?: string;
  completed: number;
}

export function watchActivities(shared: BatchShared) {
  const { deps, client, lookSource, store, outputs, shorten, metrics, inFlight, runCost } = shared;

  /** One job's /status (carrying its lease's ttl while unextended): its status, or how the look failed. */
  async function lookAtJob(
    watch: Watch,
    index: number,
    jobId: string,
    background: boolean,
  ): Promise<JobStatus | 'gone' | 'failed'> {
    const { input, signal, shareLimiter, extensions } = watch;
    try {
      const release = await shareLimiter?.acquire(
        input.endpointId,
        'status',
        signal,
        background ? 'background' : 'normal',
      );
      const ttl = extensions.ttlOf(index);
      try {
        const status = await client.jobs.status(input.endpointId, jobId, {
          signal,
          ...(ttl === undefined ? { background } : { ttl }),
        });
        extensions.noteExtended(index);
        return status;
      } finally {
        release?.();
      }
    } catch (error) {
      return error instanceof ServiceError && error.kind === 'NotFound' ? 'gone' : 'failed';
    }
  }

  /**
   * A job seen finished: its change (its error text to the store, its cost) and, when COMPLETED,
   * its result line (its output inline or in the result store).
   */
  async function finishedChange(watch: Watch, item: WatchedItem, status: JobStatus): Promise<void> {
    const { input } = watch;
    const [i, jobId, , attempts, submittedAt, earlierCost, hops] = item;
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
      watch.currency = cost.currency;
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
              watch.inlineMaxBytes,
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
      if (input.linePerItem) await store.writeLines(stageLineKey(input.batchKey, i), [JSON.stringify(line)]);
      else watch.lines.push(JSON.stringify(line));
      watch.completed++;
    }
    watch.changes.push(change);
  }

  /**
   * One round: a look at every job (`full`), or at those reported ended or due. Returns how many
   * jobs it looked at and how many looks failed.
   */
  async function lookRound(watch: Watch, full: boolean): Promise<{ looked: number; errors: number }> {
    const { input, pending, due, reports } = watch;
    watch.running = 0;
    let errors = 0;
    watch.extensions.addDue(due, Date.now());
    const hearing = watch.pace.heard();
    const reported = (jobId: string) => reports?.hasEnded(jobId) === true;
    const looked = [...pending.values()].filter((item) => full || reported(item[1]) || due.has(item[0]));
    due.clear();
    await Promise.all(
      looked.map(async (item) => {
        const [i, jobId] = item;
        // While webhooks are heard, a full look only backs them up: it waits behind the looks at
        // reported jobs (and everything else) in the rate limiter.
        const status = await lookAtJob(watch, i, jobId, hearing && !reported(jobId));
        if (status === 'gone') {
          pending.delete(i);
          inFlight.left(input.endpointId, jobId);
          watch.changes.push({ i, status: 'GONE', gone: true, at: Date.now() });
          return;
        }
        if (status === 'failed') {
          errors++;
          due.add(i);
          return;
        }
        if (!TERMINAL.has(status.status)) {
          if (status.status === 'IN_PROGRESS') watch.running++;
          return;
        }
        pending.delete(i);
        await finishedChange(watch, item, status);
      }),
    );
    return { looked: looked.length, errors };
  }

  return {
    /**
     * One look at every job in flight. Returns the items that finished (and, while more finish,
     * keeps looking for up to holdMs or until returnAfter have); nothing finished: JobUnchanged.
     */
    async watchBatchJobs(input: WatchBatchJobsInput): Promise<WatchBatchJobsAnswer> {
      const { info, runId } = batchContext();
      const shareLimiter =
        input.share &&
        lookLimiter(input.endpointId, input.share, info.heartbeatDetails, {
          log: input.seed ?? [],
          source: lookSource,
          sources: input.seedSources,
        });
      // Every beat says when this attempt looked (the next attempt's window starts from them).
      const beatDetails = () => ({ looks: shareLimiter?.recent(input.endpointId, 'status') ?? [] });
      const cancelled = new AbortController();
      const ctx = Context.current();
      const signal = shareLimiter
        ? AbortSignal.any([ctx.cancellationSignal, cancelled.signal])
        : ctx.cancellationSignal;
      const reports = deps.batchJobReports;
      const pace = watchPace(input.items, input.polling, reports);
      // One listener per status call in flight on this one signal.
      setMaxListeners(2 * input.items.length + 10, signal);
      const pending = new Map(input.items.map((item) => [item[0], item]));
      const watch: Watch = {
        input,
        signal,
        shareLimiter,
        reports,
        pace,
        extensions: leaseExtensions(input.extend ?? [], pending),
        inlineMaxBytes: input.inlineMaxBytes ?? deps.inlineMaxBytes ?? DEFAULT_INLINE_MAX_BYTES,
        pending,
        due: new Set(pace.fresh),
        changes: [],
        lines: [],
        running: 0,
        completed: 0,
      };
      const { changes, extensions } = watch;
      extensions.addDue(watch.due, Date.now());
      const started = Date.now();
      let firstChangeAt: number | undefined;
      let full = info.attempt === 1 ? !pace.heard() : pace.fullLookDue(started - info.scheduledTimestampMs);
      // Between looks: woken by the report of one of the pending jobs' end (looked at at once).
      const pause = async (ms: number) => {
        const wait = extensions.until(ms, Date.now());
        if (reports)
          await reports.waitForEnd(new Set([...pending.values()].map((item) => item[1])), wait, signal);
        else await sleep(wait, signal).catch(() => undefined);
        if (signal.aborted) throw new CancelledFailure('activity cancelled');
      };
      const stopBeating = keepAlive(beatDetails, shareLimiter !== undefined, cancelled);
      try {
        for (;;) {
          const round = await lookRound(watch, full);
          if (signal.aborted) throw new CancelledFailure('activity cancelled');
          if (changes.length === 0 && round.errors > 0 && round.errors === round.looked) {
            throw ApplicationFailure.retryable('no job status could be read', 'StatusUnavailable');
          }
          const enough = changes.length >= input.returnAfter || pending.size === 0;
          if (changes.length > 0) firstChangeAt ??= Date.now();
          // Enough changes answer at once, unless some looks failed: those are tried again first,
          // within the hold (each answer costs the batch history events).
          const held = Date.now() - (firstChangeAt ?? 0) >= input.holdMs;
          if (changes.length > 0 && ((enough && watch.due.size === 0) || held)) break;
          // Leases extended: the batch must know (a next attempt would extend them again).
          if (changes.length === 0 && extensions.extended.length > 0) break;
          if (changes.length === 0) {
            const now = Date.now();
            const delay = extensions.until(pace.retryAfter(now - info.scheduledTimestampMs), now);
            // As the job's wait does: a short interval is waited inside the attempt (a retry's round
            // trip through the server would cost more), within the attempt's inline budget.
            if (delay < INLINE_MAX_INTERVAL_MS && now + delay - started <= INLINE_BUDGET_MS) {
              await pause(delay);
              full = pace.fullLookDue(Date.now() - info.scheduledTimestampMs);
              continue;
            }
            throw await jobsUnchanged(
              shareLimiter ? beatDetails : undefined,
              input.items.length,
              watch.running,
              delay,
            );
          }
          await pause(pace.heard() ? REPORTED_HOLD_MS : Math.min(input.polling.initialIntervalMs, 1_000));
          full = !pace.heard();
        }
      } finally {
        stopBeating();
      }
      if (watch.lines.length > 0) {
        // One part per activity: a retried attempt replaces it (the same jobs are still COMPLETED).
        await store.writeLines(`${input.batchKey}/results/${runId}-${info.activityId}.jsonl`, watch.lines);
      }
      for (let k = 0; k < watch.completed; k++) metrics.batchItemFinished('completed');
      // Its window goes to the batch, for the watchers after it.
      const looks = shareLimiter && lookLogOf(shareLimiter.recent(input.endpointId, 'status'), lookSource);
      const { extended } = extensions;
      return {
        changes,
        running: watch.running,
        ...(watch.currency === undefined ? {} : { currency: watch.currency }),
        ...(looks?.length ? { looks } : {}),
        ...(extended.length === 0 ? {} : { extended }),
      };
    },
  };
}
