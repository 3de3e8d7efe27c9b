/**
 * The batch workflow: many items on one endpoint, each a remote job, in a sliding window of at most
 * `maxConcurrency` jobs in flight, at the pace of the client's rate limiter.
 *
 * - Items live in the batch store (a manifest); the workflow carries a cursor. A page of items is
 *   submitted by one activity, and watcher activities (up to MAX_WATCHERS, each on jobs no other
 *   one covers) follow the jobs in flight; outputs go from the watchers to the results file.
 *   History holds indexes, job ids, statuses and counters.
 * - Each item follows the job workflow's rules (job-rules.ts): /retry of FAILED and TIMED_OUT while
 *   results are kept, the ttl deadline, expiry (onExpired), uncertain submits (onUncertainSubmit,
 *   uncertainSubmitWait, maxSubmissions). An orphan of an uncertain submit reports itself by
 *   webhook (its URL names the item) and is adopted, then confirmed by /status like any job.
 * - Under a submit lease (contracts/submit-lease.ts, the job workflow's rules): each job goes out
 *   with ttl = the lease and is extended to the caller's ttl by one activity for the jobs of a page
 *   (a 404: the lease ran out, the item is submitted again). An uncertain submit waits (a due time,
 *   no worker slot) for the lease and the webhook window: a reporting orphan is adopted (then
 *   extended), else the item is submitted again. Batches started before it ('batch-submit-lease')
 *   replay without it.
 * - Failures beyond the tolerance stop new submissions; jobs in flight finish and are recorded, and
 *   the batch fails with BatchToleranceExceeded carrying the summary.
 * - Cost: the watcher estimates each finished run (contracts/cost.ts) and the workflow keeps the
 *   running total (one number in its state). A `budget` lets no item start that would take the
 *   total past it (the jobs under way counted at the mean cost so far); the batch then fails with
 *   BatchBudgetExceeded carrying the summary.
 * - The run continues as new when Temporal suggests it or after maxEventsPerRun events, carrying
 *   the cursor, the items in flight and the counters, once its activities and handlers are done.
 * - Cancelling the workflow cancels every job in flight (within the /cancel limits), records them
 *   and ends the batch as cancelled.
 * - `mode: 'children'` runs a job workflow per item instead (workflows/batch-children.ts).
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batch';
import { JOB_LIMITS } from '../api/schemas/job';
import {
  BATCH_FAILURE,
  type BatchCost,
  type BatchCounts,
  type BatchInput,
  type BatchLeaseCounts,
  type BatchProgress,
  type BatchResultLine,
  type BatchSummary,
  concurrencySchema,
  type ItemChange,
  type ParsedBatchInput,
  type PendingResultLine,
  parseBatchInput,
  type SubmitItemResult,
  type WatchedItem,
} from '../contracts/batch-input';
import { batchCurrentDetails } from '../contracts/current-details';
import type { Polling } from '../contracts/job-types';
import {
  extensionTtl,
  leaseEndsBy,
  leaseRequest,
  orphanWaitUntil,
  type SubmitLeaseSetting,
  unreportedLeaseTtl,
} from '../contracts/submit-lease';
import { type ChildBatchState, runChildBatch } from './batch-children';
import {
  type BatchHintAnswer,
  batchProgressQuery,
  batchSummaryQuery,
  batchWantsHintQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from './batch-definitions';
import {
  emptyCounts,
  endWith,
  failureCount,
  resultsRefs,
  roundCost,
  toleranceExceeded,
} from './batch-outcomes';
import { jobWebhookSignal } from './definitions';
import { emitOnEnd, failureData, isEnd } from './emit-on-end';
import { leaseAttemptMs } from './job-activities';
import { activityOutcome } from './job-failures';
import {
  afterTerminal,
  goneBeforeRetry,
  onExpired,
  onUncertainSubmit,
  resubmitAfterLease,
  resultsExpireAt,
  submitRetryDelayMs,
  ttlDeadline,
  whyGone,
} from './job-rules';

export type { BatchInput, BatchProgress, BatchSummary } from '../contracts/batch-input';

/** The batch's default look at its jobs: quick at first, then every 10 s at most. */
const BATCH_POLLING: Polling = { initialIntervalMs: 1_000, maxIntervalMs: 10_000, backoffCoefficient: 1.5 };
/** Submits that may run at once: one sending while the next is scheduled keeps the limiter busy. */
const PARALLEL_SUBMITS = 2;
/**
 * A watcher holds its answer this long after its first finished job, while more finish (fewer,
 * fuller answers), or until a tenth of its jobs did: each place it frees waits for the answer.
 */
const WATCH_HOLD_MS = 500;
const WATCH_RETURN_SHARE = 10;
/**
 * Watchers that may run at once, each on the jobs no other one covers. A watcher looks only at the
 * jobs it was started with and is retried with the same list while none of them finishes, so jobs
 * submitted after it started get a watcher of their own rather than waiting for an older job to
 * finish (an hour, if those are hour-long). Between looks a watcher holds no worker slot (a look
 * due within a second is waited for inside the attempt, for at most 5 s, as a job's wait does). Enough
 * for a window of several pages: a page's jobs otherwise wait for an older watcher to answer.
 */
const MAX_WATCHERS = 8;
const MAX_PENDING_HINTS = 1_000;
const RECORD_CHUNK = 2_000;
const RETRY_GRID_MS = 1_000;
const CANCEL_CHUNK = 1_000;

/** A job in flight (or finished and waiting for its /retry). */
interface Item {
  i: number;
  id: string;
  st: string;
  /** Attempts (submissions and retries), submissions, retries of this item. */
  a: number;
  n: number;
  r: number;
  /** Submitted at (workflow time), ttl. */
  t: number;
  ttl: number;
  /** Finished at (FAILED/TIMED_OUT waiting for a retry) and when the retry is due. */
  fin?: number;
  retryAt?: number;
  /** Its /retry is under way. */
  rq?: boolean;
  /** Submitted under a lease and not extended yet: the lease (its ttl now) and when it answered. */
  ls?: number;
  ans?: number;
  /** Its extension is under way; it was tried and neither made nor refused (the watcher decides). */
  xr?: boolean;
  xd?: boolean;
  /** The estimated cost of its runs so far (set once a run had an estimate). */
  c?: number;
}

/** An item waiting to be (re)submitted. */
interface Queued {
  i: number;
  n: number;
  a: number;
  /** Certain (not sent) failures in a row, and the earliest time to try again. */
  tries: number;
  at?: number;
  /** The estimated cost of its earlier runs (an item submitted afresh after its job expired). */
  c?: number;
}

/** An uncertain submit waiting for its orphan's webhook. */
interface Uncertain {
  i: number;
  n: number;
  a: number;
  until: number;
  armed: boolean;
  /** Under a lease: its ttl, when the submit answered (the orphan's lease started before), the caller's ttl. */
  ls?: number;
  ans?: number;
  ttl?: number;
  c?: number;
}

/** Everything a run hands to the next one. */
export interface BatchState {
  batchKey: string;
  manifestKey: string;
  total: number;
  cursor: number;
  queue: Queued[];
  inflight: Item[];
  uncertain: Uncertain[];
  /** Lines of items that ended without output, not yet written. */
  lines: PendingResultLine[];
  hints: Array<{ jobId: string; item?: number }>;
  counts: BatchCounts;
  submissions: number;
  uncertainSubmits: number;
  /** The lease's counts (absent in states carried from runs before it). */
  uncertainAdopted?: number;
  resubmittedAfterLease?: number;
  leaseLapses?: number;
  retries: number;
  webhooks: number;
  maxConcurrency: number;
  paused: boolean;
  stopping: boolean;
  startedAt: number;
  runs: number;
  /** History events of the earlier runs. */
  events: number;
  /** The running cost estimate (absent in states carried from runs before it). */
  cost?: BatchCost;
  /** The budget stopped the submissions. */
  budgetExceeded?: boolean;
}

const stageActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: ['BadRequest'] },
});
const shortActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});
/**
 * Reads are harmless to repeat: unlimited attempts, and JobUnchanged says when to look again. The
 * watcher beats every second while it runs, so a dead worker's watcher is noticed in 30 s (its jobs
 * are looked at again by a new one) rather than in minutes.
 */
const watchActivities = proxyActivities<BatchActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
/** Never retried by Temporal: a submit cut off after sending could run its jobs twice. */
function submitActivities(submitTimeoutMs: number, pageSize: number) {
  return proxyActivities<BatchActivities>({
    startToCloseTimeout: submitTimeoutMs + pageSize * 200,
    // A dead worker is noticed within this; its last heartbeat names the jobs it had created.
    heartbeatTimeout: Math.min(submitTimeoutMs, 30_000),
    retry: { maximumAttempts: 1 },
  });
}

/**
 * The extension of a page's leases: the activity tries each job until its lease would end. Its
 * heartbeat timeout is the job workflow's try length for the shortest lease: a worker that dies
 * holding it is noticed while the leases still run, and the items are tried again.
 */
function leaseActivities(untilMs: number, heartbeatMs: number) {
  return proxyActivities<BatchActivities>({
    startToCloseTimeout: Math.max(untilMs, 1_000) + 30_000,
    heartbeatTimeout: heartbeatMs,
    retry: { maximumAttempts: 1 },
  });
}

type Created = { i: number; id: string; ttl?: number; lease?: number };

/** The jobs a submit that never answered had created, from its last heartbeat. */
function createdBeforeTimeout(error: unknown): Map<number, Created> {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  const details =
    cause instanceof TimeoutFailure ? (cause.lastHeartbeatDetails as { created?: unknown }) : undefined;
  const created = Array.isArray(details?.created) ? details.created : [];
  const out = new Map<number, Created>();
  for (const entry of created as Array<{ i?: unknown; id?: unknown; ttl?: unknown; lease?: unknown }>) {
    if (typeof entry?.i === 'number' && typeof entry.id === 'string') {
      out.set(entry.i, {
        i: entry.i,
        id: entry.id,
        ...(typeof entry.ttl === 'number' ? { ttl: entry.ttl } : {}),
        ...(typeof entry.lease === 'number' ? { lease: entry.lease } : {}),
      });
    }
  }
  return out;
}

/**
 * The batch workflow's one argument: the caller's input and, from the second run on, the state the
 * run before carried through continue-as-new (as Temporal's batch-sliding-window sample carries it).
 * Callers never set `carried`: the client starts a batch with a BatchInput.
 */
export type BatchRunInput = BatchInput & {
  carried?: { activities: BatchState } | { children: ChildBatchState };
};

export async function serverlessBatch(input: BatchRunInput): Promise<BatchSummary> {
  const { carried, ...callerInput } = input;
  const parsed = parseBatchInput(callerInput);
  if (!parsed.ok) {
    throw ApplicationFailure.create({
      type: BATCH_FAILURE.badRequest,
      message: `invalid batch input: ${parsed.field}: ${parsed.rule}`,
      nonRetryable: true,
      details: [{ field: parsed.field, rule: parsed.rule }],
    });
  }
  const o = parsed.value;
  try {
    const summary =
      o.mode === 'children'
        ? await runChildBatch(o, carried && 'children' in carried ? carried.children : undefined)
        : await runActivityBatch(o, carried && 'activities' in carried ? carried.activities : undefined);
    await emitOnEnd(o.emitOnEnd, 'batch.completed', { ...summary });
    return summary;
  } catch (error) {
    if (!(isCancellation(error) && CancellationScope.current().consideredCancelled) && isEnd(error))
      await emitOnEnd(o.emitOnEnd, 'batch.failed', failureData(error));
    throw error;
  }
}

/** The activities mode: a few activities follow every job. */
async function runActivityBatch(o: ParsedBatchInput, carried: BatchState | undefined): Promise<BatchSummary> {
  const batch = new Batch(o, carried);
  batch.listen();
  try {
    if (!carried) await batch.stage();
    return await batch.run();
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      batch.cancelled = true;
      await CancellationScope.nonCancellable(() => batch.cancelInFlight());
    }
    throw error;
  }
}

class Batch {
  readonly o: ParsedBatchInput;
  s: BatchState;
  private readonly polling: Polling;
  private readonly byIndex = new Map<number, Item>();
  // What runs now (never carried: a run starts with no activity of its own).
  private submitting = 0;
  /** Items of the pages being submitted: an orphan's webhook may come before the submit's answer. */
  private readonly sending = new Set<number>();
  private submitsRunning = 0;
  private retryRunning = false;
  /** Extension activities under way: one per page's worth of new jobs, never waiting for another. */
  private extendsRunning = 0;
  private recordRunning = false;
  /** The lease setting the submits carry; undefined: no lease (off, or a batch from before it). */
  private readonly lease: SubmitLeaseSetting | undefined;
  /** The budget, when one is set (and the batch's code knows budgets: 'batch-budget'). */
  private readonly budget: number | undefined;
  /** Cancelled: what the summary query says once the batch ends so. */
  cancelled = false;
  /** The running watchers, each with the items (index -> job id) it was asked about. */
  private readonly watchers = new Map<CancellationScope, Map<number, string>>();
  /** Items some running watcher covers. */
  private readonly watched = new Set<number>();
  private draining = false;
  private dirty = 0;
  private timer?: { due: number; scope: CancellationScope };

  constructor(options: ParsedBatchInput, carried: BatchState | undefined) {
    this.o = options;
    this.lease = options.job.submitLease !== false ? options.job.submitLease : undefined;
    this.polling = { ...BATCH_POLLING, ...options.job.polling };
    this.budget = options.budget;
    this.s = carried ?? {
      batchKey: '',
      manifestKey: '',
      total: 0,
      cursor: 0,
      queue: [],
      inflight: [],
      uncertain: [],
      lines: [],
      hints: [],
      counts: emptyCounts(),
      submissions: 0,
      uncertainSubmits: 0,
      retries: 0,
      webhooks: 0,
      maxConcurrency: options.maxConcurrency,
      paused: false,
      stopping: false,
      startedAt: Date.now(),
      runs: 1,
      events: 0,
    };
    for (const item of this.s.inflight) {
      delete item.rq;
      delete item.xr;
      this.byIndex.set(item.i, item);
    }
  }

  private bump(): void {
    this.dirty += 1;
  }

  listen(): void {
    setHandler(batchProgressQuery, () => this.progress());
    setHandler(batchSummaryQuery, () => this.summary(this.cancelled));
    setHandler(batchWantsHintQuery, ({ item, jobId }) => this.wantsHint(item, jobId));
    setHandler(pauseBatchSignal, () => {
      this.s.paused = true;
      this.bump();
    });
    setHandler(resumeBatchSignal, () => {
      this.s.paused = false;
      this.bump();
    });
    setHandler(
      setBatchConcurrencyUpdate,
      (value) => {
        const previous = this.s.maxConcurrency;
        this.s.maxConcurrency = value;
        this.bump();
        return previous;
      },
      {
        validator: (value) => {
          const checked = concurrencySchema.safeParse(value);
          if (!checked.success) throw new Error(`maxConcurrency: ${checked.error.issues[0]?.message}`);
        },
      },
    );
    setHandler(jobWebhookSignal, (hint) => {
      const { jobId, item } = (hint ?? {}) as { jobId?: unknown; item?: unknown };
      if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 1024) return;
      this.s.webhooks += 1;
      // Only an orphan (a job id no item has, naming an item waiting on an uncertain submit) matters:
      // every known job is looked at by the watcher anyway.
      if (typeof item !== 'number' || !this.wantsHint(item, jobId)) return;
      this.s.hints.push({ jobId, item });
      if (this.s.hints.length > MAX_PENDING_HINTS) this.s.hints.shift();
      this.bump();
    });
  }

  private wantsHint(item: number, jobId: string): BatchHintAnswer {
    if (this.s.inflight.some((known) => known.id === jobId)) return false;
    if (this.s.uncertain.some((u) => u.i === item)) return true;
    // Its page has not answered: most such jobs will be known when it does (no signal needed).
    return this.sending.has(item) ? 'wait' : false;
  }

  async stage(): Promise<void> {
    const staged = await stageActivities.stageBatchItems({ items: this.o.items });
    this.s.batchKey = staged.batchKey;
    this.s.manifestKey = staged.manifestKey;
    this.s.total = staged.total;
  }

  // -------------------------------------------------------------------------------------------
  // The loop: start whatever can start, then sleep until something happens or falls due.

  async run(): Promise<BatchSummary> {
    for (;;) {
      const now = Date.now();
      this.adoptOrphans();
      this.settleUncertain(now);
      if (!this.s.stopping && this.exceeded()) {
        this.s.stopping = true;
        log.warn('failure tolerance exceeded: no more submissions; jobs in flight finish', {
          failures: this.failures(),
        });
      }
      if (!this.s.stopping && this.overBudget() && this.waiting()) {
        this.s.stopping = true;
        this.s.budgetExceeded = true;
        log.warn('budget reached: no more submissions; jobs in flight finish', {
          estimate: this.cost().amount,
          budget: this.budget,
        });
      }
      if (!this.draining && this.runIsFull()) this.draining = true;
      if (this.draining) {
        this.cancelWatchers();
        if (this.idle()) await this.continueAsNew();
      } else {
        this.startSubmits(now);
        this.startRetries(now);
        this.startExtensions();
        this.startWatch();
        this.startRecord();
      }
      // The UI's current details: no history event, so every turn may refresh them.
      setCurrentDetails(batchCurrentDetails(this.progress(), now));
      if (this.finished()) return this.finish();
      const seen = this.dirty;
      this.wakeAt(this.nextDue());
      await condition(() => this.dirty !== seen);
    }
  }

  /**
   * One timer for the next due time, kept while that time stands: a timer per loop turn would add
   * two events to every workflow task.
   */
  private wakeAt(due: number | undefined): void {
    if (due === this.timer?.due) return;
    this.timer?.scope.cancel();
    this.timer = undefined;
    if (due === undefined) return;
    const scope = new CancellationScope();
    const timer = { due, scope };
    this.timer = timer;
    scope
      .run(() => sleep(Math.max(due - Date.now(), 1)))
      .then(
        () => {
          if (this.timer === timer) this.timer = undefined;
          this.bump();
        },
        () => undefined,
      );
  }

  private runIsFull(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= this.o.maxEventsPerRun;
  }

  private idle(): boolean {
    return (
      this.submitsRunning === 0 &&
      !this.retryRunning &&
      this.extendsRunning === 0 &&
      !this.recordRunning &&
      this.watchers.size === 0
    );
  }

  private async continueAsNew(): Promise<never> {
    await condition(allHandlersFinished);
    this.s.events += workflowInfo().historyLength;
    this.s.runs += 1;
    // The items are in the store now: the next run starts from the manifest, never the inline list.
    return continueAsNew<typeof serverlessBatch>({ ...this.input(), carried: { activities: this.s } });
  }

  private input(): BatchInput {
    const { items: _items, ...rest } = this.o;
    return { ...rest, items: { manifest: { key: this.s.manifestKey } } } as BatchInput;
  }

  /** Items still to submit (a budget reached after the last submit stops nothing). */
  private waiting(): boolean {
    return this.s.cursor < this.s.total || this.s.queue.length > 0 || this.s.uncertain.length > 0;
  }

  /** The budget stops the batch: reached, or the next item would pass it with nothing under way. */
  private overBudget(): boolean {
    if (this.budget === undefined) return false;
    return this.cost().amount >= this.budget || (this.budgetRoom() === 0 && this.underWay() === 0);
  }

  /**
   * How many more items the budget lets start: as many as fit when every job under way, and each
   * new one, is expected to cost what the finished runs cost on average ("would pass", not "has
   * passed": a window of jobs in flight can no longer overshoot it). Before any run has an estimate
   * there is nothing to go by.
   */
  private budgetRoom(): number {
    if (this.budget === undefined) return Number.POSITIVE_INFINITY;
    const cost = this.cost();
    if (cost.amount >= this.budget) return 0;
    if (cost.items === 0) return Number.POSITIVE_INFINITY;
    const mean = cost.amount / cost.items;
    return Math.max(0, Math.floor((this.budget - cost.amount) / mean) - this.underWay());
  }

  /** Jobs that may still cost: in flight (retries waiting included), uncertain, being submitted. */
  private underWay(): number {
    return this.s.inflight.length + this.s.uncertain.length + this.submitting;
  }

  private cost(): BatchCost {
    this.s.cost ??= { amount: 0, items: 0 };
    return this.s.cost;
  }

  /** A finished run's estimate, counted once (a change the workflow acts on). */
  private addCost(item: Item, amount: number | undefined): void {
    if (amount === undefined) return;
    const cost = this.cost();
    // Rounded like each estimate: float noise would make a sum differ from the lines' sum.
    cost.amount = roundCost(cost.amount + amount);
    cost.items += 1;
    item.c = roundCost((item.c ?? 0) + amount);
  }

  private finished(): boolean {
    const s = this.s;
    const nothingLeft = s.stopping || (s.cursor >= s.total && s.queue.length === 0);
    return (
      nothingLeft &&
      s.inflight.length === 0 &&
      s.uncertain.length === 0 &&
      s.lines.length === 0 &&
      this.idle()
    );
  }

  /** The next time something falls due; what is due already waits for a bump (an activity ending). */
  private nextDue(): number | undefined {
    const now = Date.now();
    let due: number | undefined;
    const consider = (at: number | undefined) => {
      if (at !== undefined && at > now && (due === undefined || at < due)) due = at;
    };
    for (const q of this.s.queue) consider(q.at);
    for (const item of this.s.inflight) if (!item.rq) consider(item.retryAt);
    for (const u of this.s.uncertain) consider(u.until);
    return due;
  }

  // --- submitting

  private startSubmits(now: number): void {
    const s = this.s;
    if (s.paused || s.stopping) return;
    while (this.submitsRunning < PARALLEL_SUBMITS) {
      const free = s.maxConcurrency - s.inflight.length - s.uncertain.length - this.submitting;
      const ready = s.queue.filter((q) => q.at === undefined || q.at <= now).length;
      const waiting = ready + (s.total - s.cursor);
      if (waiting === 0 || free <= 0) return;
      // Not a page per freed slot: wait for a useful page (a sixteenth of the window: every place
      // left empty meanwhile is a service worker idle) unless nothing else is under way.
      const useful = Math.min(this.o.pageSize, Math.max(1, Math.floor(s.maxConcurrency / 16)), waiting);
      if (free < useful && (this.submitsRunning > 0 || s.inflight.length > 0)) return;
      const size = Math.min(this.o.pageSize, free, waiting, this.budgetRoom());
      if (size <= 0) return;
      const page: Queued[] = [];
      for (let k = 0; k < s.queue.length && page.length < size; ) {
        const q = s.queue[k] as Queued;
        if (q.at === undefined || q.at <= now) {
          page.push(q);
          s.queue.splice(k, 1);
        } else k++;
      }
      while (page.length < size && s.cursor < s.total) page.push({ i: s.cursor++, n: 0, a: 0, tries: 0 });
      this.submitPage(page);
    }
  }

  private submitPage(page: Queued[]): void {
    const sentAt = Date.now();
    this.submitting += page.length;
    this.submitsRunning += 1;
    for (const q of page) this.sending.add(q.i);
    const { submitTimeout } = this.o.job;
    CancellationScope.nonCancellable(() =>
      submitActivities(submitTimeout, page.length).submitBatchPage({
        endpointId: this.o.endpointId,
        manifestKey: this.s.manifestKey,
        indexes: page.map((q) => q.i),
        // Only an orphan that may be adopted needs a webhook; every other job is watched.
        webhook: this.o.job.uncertainSubmitWait > 0 || this.lease !== undefined,
        ...(this.lease === undefined ? {} : { submitLease: this.lease }),
      }),
    )
      .then(
        ({ results }) => {
          const byIndex = new Map(page.map((q) => [q.i, q]));
          const answeredAt = Date.now();
          for (const result of results) {
            const entry = byIndex.get(result.i);
            if (entry) this.submitted(entry, result, sentAt, answeredAt);
          }
        },
        (error: unknown) => {
          // The activity never answered (a timeout, a dead worker): the jobs its heartbeat named
          // exist; any other request of the page may have gone out.
          const reason = activityOutcome(error)?.message ?? String(error);
          const created = createdBeforeTimeout(error);
          // The lease of a request that never reported is known only when it applies regardless of
          // webhooks; asked for the longest ttl, it bounds every item's.
          const lease =
            this.lease === undefined
              ? undefined
              : unreportedLeaseTtl(leaseRequest(this.lease, 'async', Number.MAX_SAFE_INTEGER));
          const answeredAt = Date.now();
          for (const entry of page) {
            this.submitted(
              entry,
              created.get(entry.i) ?? {
                i: entry.i,
                uncertain: reason,
                armed: true,
                ...(lease === undefined ? {} : { lease }),
              },
              sentAt,
              answeredAt,
            );
          }
        },
      )
      .finally(() => {
        for (const q of page) this.sending.delete(q.i);
        this.submitting -= page.length;
        this.submitsRunning -= 1;
        this.bump();
      });
  }

  private submitted(entry: Queued, result: SubmitItemResult, sentAt: number, answeredAt: number): void {
    const s = this.s;
    if ('id' in result) {
      s.submissions += 1;
      const item: Item = {
        i: entry.i,
        id: result.id,
        st: 'IN_QUEUE',
        a: entry.a + 1,
        n: entry.n + 1,
        r: 0,
        t: sentAt,
        ttl: result.ttl ?? JOB_LIMITS.ttlDefaultMs,
        ...earlier(entry.c),
      };
      underLease(item, result.lease, answeredAt);
      s.inflight.push(item);
      this.byIndex.set(item.i, item);
      return;
    }
    if ('rejected' in result) {
      const tries = entry.tries + 1;
      const delay = submitRetryDelayMs(result.rejected, tries);
      if (delay !== undefined) {
        s.queue.push({ ...entry, tries, at: Date.now() + delay });
        return;
      }
      this.end('rejected', {
        index: entry.i,
        status: 'REJECTED',
        error: result.rejected.message,
        ...tally(entry),
      });
      return;
    }
    s.submissions += 1;
    s.uncertainSubmits += 1;
    if (result.lease !== undefined) {
      // Under a lease: the orphan reports itself within the lease and the webhook window, or is gone.
      s.uncertain.push({
        i: entry.i,
        n: entry.n + 1,
        a: entry.a,
        until: orphanWaitUntil(answeredAt, result.lease, result.armed),
        armed: result.armed,
        ls: result.lease,
        ans: answeredAt,
        ...(result.ttl === undefined ? {} : { ttl: result.ttl }),
        ...earlier(entry.c),
      });
      return;
    }
    const wait = result.armed ? this.o.job.uncertainSubmitWait : 0;
    s.uncertain.push({
      i: entry.i,
      n: entry.n + 1,
      a: entry.a,
      until: Date.now() + wait,
      armed: result.armed,
      ...earlier(entry.c),
    });
  }

  /** Uncertain submits whose wait is over: sent again or given up, as the caller chose. */
  private settleUncertain(now: number): void {
    const s = this.s;
    const due = s.uncertain.filter((u) => u.until <= now);
    if (due.length === 0) return;
    s.uncertain = s.uncertain.filter((u) => u.until > now);
    for (const u of due) {
      if (u.ls !== undefined) {
        // No orphan reported within its lease and the webhook window: none can still run.
        if (!s.stopping && resubmitAfterLease(this.o.job, u.n)) {
          s.resubmittedAfterLease = (s.resubmittedAfterLease ?? 0) + 1;
          s.queue.push({ i: u.i, n: u.n, a: u.a, tries: 0, ...earlier(u.c) });
        } else
          this.end('uncertain', {
            index: u.i,
            status: 'UNCERTAIN',
            error: s.stopping
              ? 'the submit may have created a job whose id never arrived; the batch stopped'
              : `the submit was uncertain and maxSubmissions (${this.o.job.maxSubmissions}) and ` +
                `maxLeaseResubmits (${this.o.job.maxLeaseResubmits}) are spent; ` +
                'no orphan of it can still run (its lease has run out)',
            ...tally(u),
          });
        continue;
      }
      const decision = onUncertainSubmit(this.o.job, u.n);
      if (decision.choice === 'resubmit' && !s.stopping)
        s.queue.push({ i: u.i, n: u.n, a: u.a, tries: 0, ...earlier(u.c) });
      else
        this.end('uncertain', {
          index: u.i,
          status: 'UNCERTAIN',
          error: `the submit may have created a job whose id never arrived; ${decision.choice === 'fail' ? decision.why : 'the batch stopped'}`,
          ...tally(u),
        });
    }
  }

  /** An orphan's webhook names its item: that job becomes the item's (the watcher confirms it). */
  private adoptOrphans(): void {
    const s = this.s;
    const keep: BatchState['hints'] = [];
    while (s.hints.length > 0) {
      const hint = s.hints.shift() as { jobId: string; item?: number };
      const index = s.uncertain.findIndex((u) => u.i === hint.item);
      if (index < 0 || this.s.inflight.some((item) => item.id === hint.jobId)) {
        // Its submit has not answered yet: kept until it does.
        if (hint.item !== undefined && this.sending.has(hint.item)) keep.push(hint);
        continue;
      }
      const [u] = s.uncertain.splice(index, 1) as [Uncertain];
      log.info('adopted the job of an uncertain submit from its webhook', { item: u.i, jobId: hint.jobId });
      s.uncertainAdopted = (s.uncertainAdopted ?? 0) + 1;
      const item: Item = {
        i: u.i,
        id: hint.jobId,
        st: 'IN_QUEUE',
        a: u.a + 1,
        n: u.n,
        r: 0,
        t: u.ans ?? u.until - (u.armed ? this.o.job.uncertainSubmitWait : 0),
        ttl: u.ttl ?? JOB_LIMITS.ttlDefaultMs,
        ...earlier(u.c),
      };
      // An adopted orphan still runs under its lease: extended like any other.
      if (u.ans !== undefined) underLease(item, u.ls, u.ans);
      s.inflight.push(item);
      this.byIndex.set(item.i, item);
    }
    s.hints.push(...keep);
  }

  // --- watching

  private cancelWatchers(): void {
    for (const scope of this.watchers.keys()) scope.cancel();
  }

  private startWatch(): void {
    while (this.watchers.size < MAX_WATCHERS) {
      const uncovered = this.s.inflight.filter(
        (item) => item.retryAt === undefined && !this.watched.has(item.i),
      );
      if (uncovered.length === 0) return;
      this.startWatcher(uncovered);
    }
  }

  private startWatcher(covered: Item[]): void {
    const items: WatchedItem[] = covered.map((item) =>
      item.c === undefined
        ? [item.i, item.id, item.st, item.a, item.t]
        : [item.i, item.id, item.st, item.a, item.t, item.c],
    );
    const asked = new Map(covered.map((item) => [item.i, item.id]));
    for (const i of asked.keys()) this.watched.add(i);
    const scope = new CancellationScope();
    this.watchers.set(scope, asked);
    scope
      .run(() =>
        watchActivities.watchBatchJobs({
          endpointId: this.o.endpointId,
          batchKey: this.s.batchKey,
          items,
          polling: this.polling,
          returnAfter: Math.max(1, Math.floor(items.length / WATCH_RETURN_SHARE)),
          holdMs: WATCH_HOLD_MS,
          ...(this.o.job.outputInlineMaxBytes === undefined
            ? {}
            : { inlineMaxBytes: this.o.job.outputInlineMaxBytes }),
        }),
      )
      .then(
        ({ changes, currency }) => {
          if (currency !== undefined) this.cost().currency = currency;
          // Only about the job it was asked about: the item may have been submitted again since.
          for (const change of changes)
            if (this.byIndex.get(change.i)?.id === asked.get(change.i)) this.changed(change);
        },
        (error: unknown) => {
          if (!isCancellation(error))
            log.warn('the watcher failed', { error: activityOutcome(error)?.message });
        },
      )
      .finally(() => {
        this.watchers.delete(scope);
        for (const i of asked.keys()) this.watched.delete(i);
        this.bump();
      });
  }

  private changed(change: ItemChange): void {
    const item = this.byIndex.get(change.i);
    if (!item || item.retryAt !== undefined) return;
    const now = Date.now();
    if (change.gone && item.ls !== undefined) {
      this.leaseLapsed(item);
      return;
    }
    if (change.gone) {
      this.expire(item, whyGone(now, ttlDeadline(item.t, item.ttl), item.ttl, undefined, 'run'));
      return;
    }
    const status = change.status as 'COMPLETED' | 'CANCELLED' | 'FAILED' | 'TIMED_OUT';
    this.addCost(item, change.cost);
    const decision = afterTerminal(status, this.o.job.retry, item.r);
    const times = {
      ...(change.delayTime !== undefined ? { delayTime: change.delayTime } : {}),
      ...(change.executionTime !== undefined ? { executionTime: change.executionTime } : {}),
    };
    switch (decision.kind) {
      case 'completed':
        // Its line is already in the results: the watcher wrote it.
        this.remove(item);
        this.s.counts.completed += 1;
        return;
      case 'cancelled':
        this.remove(item);
        this.end('cancelled', { ...lineOf(item, 'CANCELLED', now), ...times });
        return;
      case 'give-up':
        this.remove(item);
        this.end(decision.status === 'FAILED' ? 'failed' : 'timedOut', {
          ...lineOf(item, decision.status, now),
          ...(change.error !== undefined ? { error: change.error } : {}),
          ...(change.errorRef !== undefined ? { errorRef: change.errorRef } : {}),
          ...times,
        });
        return;
      case 'retry':
        item.st = status;
        item.fin = now;
        // On a whole second: the retries of items that failed close together go out as one.
        item.retryAt = Math.ceil((now + decision.backoffMs) / RETRY_GRID_MS) * RETRY_GRID_MS;
    }
  }

  private expire(item: Item, why: 'ttl' | 'results'): void {
    this.remove(item);
    if (onExpired(this.o.job, item.n) === 'resubmit' && !this.s.stopping) {
      this.s.queue.push({ i: item.i, n: item.n, a: item.a, tries: 0, ...earlier(item.c) });
      return;
    }
    this.end('expired', {
      ...lineOf(item, 'EXPIRED', Date.now()),
      error: why === 'ttl' ? 'its ttl passed (the service deleted it)' : 'its results expired before a retry',
    });
  }

  // --- the lease's extension

  /**
   * One activity extends the leases of the new jobs (a page's worth, as they come); it does not wait
   * for an earlier one, which may be trying a job until its lease ends while new leases run.
   */
  private startExtensions(): void {
    const due = this.s.inflight.filter((item) => item.ls !== undefined && !item.xd && !item.xr);
    if (due.length === 0) return;
    this.extendsRunning += 1;
    const items = due.map((item): [number, string, number, number] => [
      item.i,
      item.id,
      item.ttl,
      leaseEndsBy(item.ans ?? item.t, item.ls as number),
    ]);
    for (const item of due) item.xr = true;
    const longest = Math.max(...items.map((entry) => entry[3])) - Date.now();
    const shortest = Math.min(...due.map((item) => item.ls as number));
    const settle = (item: Item) => {
      delete item.xr;
      return this.byIndex.get(item.i) === item;
    };
    leaseActivities(longest, leaseAttemptMs(shortest))
      .extendBatchLeases({ endpointId: this.o.endpointId, items })
      .then(
        ({ results }) => {
          const byIndex = new Map(due.map((item) => [item.i, item]));
          for (const result of results) {
            const item = byIndex.get(result.i);
            if (!item || !settle(item)) continue;
            if (result.extended) {
              delete item.ls;
              delete item.ans;
            } else if (result.gone) this.leaseLapsed(item);
            // Neither: an answer may have been lost after it was made; the watcher's 404 tells.
            else item.xd = true;
          }
        },
        (error: unknown) => {
          // A worker that died mid-extension: whatever lease still runs is tried again at once.
          const retry = activityOutcome(error)?.source === 'timeout';
          const now = Date.now();
          for (const item of due) {
            if (!settle(item)) continue;
            if (!retry || leaseEndsBy(item.ans ?? item.t, item.ls as number) <= now) item.xd = true;
          }
          if (!isCancellation(error))
            log.warn('extending leases failed', { error: activityOutcome(error)?.message, retry });
        },
      )
      .finally(() => {
        this.extendsRunning -= 1;
        this.bump();
      });
  }

  /** The job's lease ran out unextended: the service deleted it, so submitting again is safe. */
  private leaseLapsed(item: Item): void {
    this.remove(item);
    this.s.leaseLapses = (this.s.leaseLapses ?? 0) + 1;
    if (item.n < this.o.job.maxSubmissions && !this.s.stopping) {
      this.s.queue.push({ i: item.i, n: item.n, a: item.a, tries: 0, ...earlier(item.c) });
      return;
    }
    this.end('expired', {
      ...lineOf(item, 'EXPIRED', Date.now()),
      error: `its submit lease ran out before it could be extended, and maxSubmissions (${this.o.job.maxSubmissions}) is reached`,
    });
  }

  private remove(item: Item): void {
    this.byIndex.delete(item.i);
    const at = this.s.inflight.indexOf(item);
    if (at >= 0) this.s.inflight.splice(at, 1);
  }

  // --- retries

  private startRetries(now: number): void {
    if (this.retryRunning) return;
    const due: Item[] = [];
    for (const item of [...this.s.inflight]) {
      if (item.retryAt === undefined || item.retryAt > now) continue;
      const gone = goneBeforeRetry(
        now,
        ttlDeadline(item.t, item.ttl),
        resultsExpireAt(item.fin ?? now, 'run'),
      );
      if (gone) this.expire(item, gone);
      else due.push(item);
    }
    if (due.length === 0) return;
    this.retryRunning = true;
    for (const item of due) item.rq = true;
    shortActivities
      .retryBatchJobs({ endpointId: this.o.endpointId, items: due.map((item) => [item.i, item.id]) })
      .then(
        ({ results }) => {
          for (const result of results) {
            const item = this.byIndex.get(result.i);
            if (!item) continue;
            delete item.rq;
            if (result.status !== undefined) {
              this.s.retries += 1;
              item.r += 1;
              item.a += 1;
              item.st = result.status;
              delete item.retryAt;
              delete item.fin;
            } else if (result.gone) this.expire(item, 'results');
            else {
              this.remove(item);
              this.end(item.st === 'TIMED_OUT' ? 'timedOut' : 'failed', {
                ...lineOf(item, item.st, Date.now()),
                error: `its /retry failed: ${result.error ?? 'unknown error'}`,
              });
            }
          }
        },
        (error: unknown) => {
          // Left as they were: tried again once their retryAt comes round.
          for (const item of due) {
            delete item.rq;
            item.retryAt = Date.now() + 5_000;
          }
          if (!isCancellation(error))
            log.warn('retrying jobs failed', { error: activityOutcome(error)?.message });
        },
      )
      .finally(() => {
        this.retryRunning = false;
        this.bump();
      });
  }

  // --- results and outcomes

  private end(outcome: keyof BatchCounts, line: PendingResultLine): void {
    this.s.counts[outcome] += 1;
    this.s.lines.push(line);
  }

  private startRecord(): void {
    if (this.recordRunning || this.s.lines.length === 0) return;
    const lines = this.s.lines.slice(0, RECORD_CHUNK);
    this.recordRunning = true;
    CancellationScope.nonCancellable(() =>
      shortActivities.recordBatchResults({ batchKey: this.s.batchKey, lines }),
    )
      .then(
        () => {
          this.s.lines.splice(0, lines.length);
        },
        (error: unknown) => log.error('recording results failed', { error: activityOutcome(error)?.message }),
      )
      .finally(() => {
        this.recordRunning = false;
        this.bump();
      });
  }

  private failures(): number {
    return failureCount(this.s.counts);
  }

  private exceeded(): boolean {
    return toleranceExceeded(this.s.counts, this.s.total, this.o.failureTolerance);
  }

  summary(cancelled = false): BatchSummary {
    const s = this.s;
    const failures = this.failures();
    return {
      batchId: workflowInfo().workflowId,
      endpointId: this.o.endpointId,
      total: s.total,
      counts: { ...s.counts },
      failures,
      notStarted: Math.max(0, s.total - s.counts.completed - failures - s.inflight.length),
      submissions: s.submissions,
      uncertainSubmits: s.uncertainSubmits,
      lease: this.leaseCounts(),
      retries: s.retries,
      webhooks: s.webhooks,
      toleranceExceeded: this.exceeded(),
      ...this.budgetFields(),
      ...(this.stoppedBecause(cancelled) ? { stoppedBecause: this.stoppedBecause(cancelled) } : {}),
      cost: { ...this.cost() },
      cancelled,
      ...resultsRefs(s.batchKey),
      manifestKey: s.manifestKey,
      startedAt: s.startedAt,
      elapsedMs: Date.now() - s.startedAt,
      runs: s.runs,
      historyEvents: s.events + workflowInfo().historyLength,
    };
  }

  private leaseCounts(): BatchLeaseCounts {
    const s = this.s;
    return {
      uncertainAdopted: s.uncertainAdopted ?? 0,
      resubmittedAfterLease: s.resubmittedAfterLease ?? 0,
      leaseLapses: s.leaseLapses ?? 0,
    };
  }

  private finish(): BatchSummary {
    return endWith(this.summary());
  }

  progress(): BatchProgress {
    const s = this.s;
    const done = s.counts.completed + this.failures();
    const elapsed = Math.max(Date.now() - s.startedAt, 1);
    const ratePerSecond = (done * 1000) / elapsed;
    const left = s.total - done;
    return {
      batchId: workflowInfo().workflowId,
      total: s.total,
      cursor: s.cursor,
      counts: { ...s.counts },
      done,
      inFlight: s.inflight.length + s.uncertain.length + this.submitting,
      paused: s.paused,
      maxConcurrency: s.maxConcurrency,
      ratePerSecond,
      ...(ratePerSecond > 0 ? { etaMs: Math.round((left / ratePerSecond) * 1000) } : {}),
      submissions: s.submissions,
      uncertainSubmits: s.uncertainSubmits,
      lease: this.leaseCounts(),
      retries: s.retries,
      runs: s.runs,
      historyEvents: s.events + workflowInfo().historyLength,
      startedAt: s.startedAt,
      toleranceExceeded: this.exceeded(),
      ...this.budgetFields(),
      cost: { ...this.cost() },
    };
  }

  private budgetFields(): { budget?: number; budgetExceeded?: boolean } {
    return this.budget === undefined
      ? {}
      : { budget: this.budget, budgetExceeded: this.s.budgetExceeded === true };
  }

  private stoppedBecause(cancelled: boolean): BatchSummary['stoppedBecause'] {
    if (cancelled) return 'cancelled';
    if (!this.s.stopping) return undefined;
    return this.s.budgetExceeded ? 'budget' : 'failure-tolerance';
  }

  // --- cancellation

  /** Every job in flight is cancelled at the service and recorded; then the batch ends cancelled. */
  async cancelInFlight(): Promise<void> {
    this.cancelWatchers();
    // Submits under way finish first: their jobs get ids, and so can be cancelled.
    await condition(() => this.submitsRunning === 0 && !this.retryRunning);
    const s = this.s;
    const now = Date.now();
    const live = s.inflight.filter((item) => item.retryAt === undefined);
    for (let from = 0; from < live.length; from += CANCEL_CHUNK) {
      const chunk = live.slice(from, from + CANCEL_CHUNK);
      let answers: Map<number, { status?: string; gone?: boolean; error?: string }>;
      try {
        const { results } = await shortActivities.cancelBatchJobs({
          endpointId: this.o.endpointId,
          items: chunk.map((item) => [item.i, item.id]),
        });
        answers = new Map(results.map((r) => [r.i, r]));
      } catch (error) {
        answers = new Map();
        log.error('cancelling jobs in flight failed', { error: activityOutcome(error)?.message });
      }
      for (const item of chunk) {
        const answer = answers.get(item.i);
        this.remove(item);
        this.end('cancelled', {
          ...lineOf(item, answer?.status ?? 'CANCELLED', now),
          error: answer?.error
            ? `the batch was cancelled; cancelling the job failed: ${answer.error}`
            : 'the batch was cancelled',
        });
      }
    }
    for (const item of [...s.inflight]) {
      this.remove(item);
      this.end(item.st === 'TIMED_OUT' ? 'timedOut' : 'failed', lineOf(item, item.st, now));
    }
    for (const u of s.uncertain.splice(0)) {
      this.end('uncertain', {
        index: u.i,
        status: 'UNCERTAIN',
        error: 'the batch was cancelled after an uncertain submit',
        ...tally(u),
      });
    }
    s.queue = [];
    s.stopping = true;
    await condition(() => !this.recordRunning);
    while (s.lines.length > 0) {
      const lines = s.lines.splice(0, RECORD_CHUNK);
      await shortActivities.recordBatchResults({ batchKey: s.batchKey, lines });
    }
  }
}

/** A job submitted under a lease needs its extension, unless the lease already is the caller's ttl. */
function underLease(item: Item, lease: number | undefined, answeredAt: number): void {
  if (lease === undefined || extensionTtl(lease, item.ttl) === undefined) return;
  item.ls = lease;
  item.ans = answeredAt;
}

function tally(entry: Queued | Uncertain): { attempts: number; submissions: number; cost?: number } {
  return { attempts: entry.a, submissions: entry.n, ...(entry.c === undefined ? {} : { cost: entry.c }) };
}

/** An item's earlier runs' cost, carried when it is queued or submitted again. */
function earlier(c: number | undefined): { c?: number } {
  return c === undefined ? {} : { c };
}

function lineOf(item: Item, status: string, at: number): BatchResultLine {
  return {
    index: item.i,
    jobId: item.id,
    status,
    attempts: item.a,
    submissions: item.n,
    ...(item.c === undefined ? {} : { cost: item.c }),
    submittedAt: item.t,
    finishedAt: at,
  };
}
