/**
 * The batch activities: a few activities do the work of many jobs, so a batch holds a handful of
 * worker slots however many items it has, and no item's request or output ever passes through
 * workflow history (the activities read the items from the batch store and write the results
 * there; the workflow sees indexes, job ids and statuses).
 *
 * - stageBatchItems: turns the items (inline, a manifest, the failures of an earlier batch) into a
 *   manifest in the store, checking every line first;
 * - submitBatchPage: POST /run for a page of items to one endpoint (with that endpoint's input
 *   overrides when the batch runs over a route), under the client's rate limiter. Never retried
 *   by Temporal, like the job workflow's submit: per item it answers the job id, a certain failure
 *   or "uncertain" (the request may have created a job whose id never came back). Under a submit
 *   lease (contracts/submit-lease.ts) each request goes out with ttl = the lease;
 * - extendBatchLeases: /status?ttl= sets each new job's ttl to the caller's, tried until its lease
 *   would end (a 404 says it is gone);
 * - watchBatchJobs: one look at /status for every job in flight; it writes COMPLETED results
 *   itself and returns the items that finished. When nothing changed it fails with a retryable
 *   JobUnchanged whose nextRetryDelay is the next polling interval: between looks the server
 *   holds the timer and no worker holds a slot (see job-wait.ts);
 * - retryBatchJobs, cancelBatchJobs: POST /retry and /cancel for a list of jobs;
 * - recordBatchResults: the lines of items that ended without output (failures).
 */
import { createHash, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import { ActivityCancelledError, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory, CancelledFailure } from '@temporalio/common';
import { sleep } from '../api/backoff';
import type { ServiceClient } from '../api/client';
import { ServiceError, ValidationError } from '../api/errors';
import { batchItemOutcome, type LibraryMetrics, noopMetrics } from '../api/metrics';
import { createRateLimiter, type RateLimiter } from '../api/rate-limit';
import { JOB_LIMITS, type JobRequestInput } from '../api/schemas/job';
import {
  type BatchResultLine,
  type EndpointLimit,
  type ItemChange,
  type LookShare,
  type PageSend,
  type PendingResultLine,
  type SubmitItemResult,
  storeKeySchema,
  type WatchedItem,
} from '../contracts/batch-input';
import { roundCost } from '../contracts/cost';
import type { SubmitBeat } from '../contracts/failures';
import { firstIssue } from '../contracts/input-rules';
import { type Polling, submitRequestSchema } from '../contracts/job-types';
import {
  INLINE_BUDGET_MS,
  INLINE_MAX_INTERVAL_MS,
  intervalAfter,
  JOB_UNCHANGED,
} from '../contracts/job-wait-policy';
import { type LookLog, lookLogOf, lookTimes } from '../contracts/look-log';
import { isCapacityFailure, requestFor } from '../contracts/route';
import {
  leaseApplies,
  leaseRequest,
  looksExtendLease,
  type SubmitLeaseSetting,
} from '../contracts/submit-lease';
import type { BatchJobReports } from './batch-job-reports';
import { type BatchStore, batchKeyFor, defaultBatchStore } from './batch-store';
import type { EstimateCost } from './cost-estimator';
import { createInFlightTracker } from './in-flight';
import { retryJobOnService } from './job-retry';
import { extendJobTtl, extendLeaseInSubmit, extensionsNotAfter } from './lease-extend';
import {
  createLocalResultStore,
  DEFAULT_INLINE_MAX_BYTES,
  inlineOrStore,
  type ResultStore,
} from './result-store';
import { beatBeforeSending, waitToSend } from './submit-beat';

export interface BatchActivityDeps {
  /**
   * rateLimit: the /run and /status limits a batch holds and shares for all its workers (the
   * stage reads them); without it, each worker's own limiter alone.
   */
  client: Pick<ServiceClient, 'jobs'> & Partial<Pick<ServiceClient, 'rateLimit'>>;
  /** A batch job's webhook URL: it names the item, and its token expires a margin after the job's ttl. */
  webhookUrlFor?: (workflowId: string, options?: { item?: number; ttlMs?: number }) => string;
  /** Manifests and results; default: a local store in `<resultStoreDir>/batches`. */
  batchStore?: BatchStore;
  /** Large outputs; default: the local result store in resultStoreDir. */
  resultStore?: ResultStore;
  resultStoreDir?: string;
  inlineMaxBytes?: number;
  errorMaxChars?: number;
  /** Finished runs, batch item outcomes and jobs in flight are counted here; default: nowhere. */
  metrics?: LibraryMetrics;
  /** Estimates a finished run's cost (activities/cost-estimator.ts); absent: no estimates. */
  estimateCost?: EstimateCost;
  /** What the webhook gateway in this process heard of batch jobs; absent: the watchers only poll. */
  batchJobReports?: BatchJobReports;
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);
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

function context() {
  const { info } = Context.current();
  const execution = info.workflowExecution;
  if (!execution)
    throw ApplicationFailure.nonRetryable('batch activities run for a workflow only', 'BadRequest');
  return { info, workflowId: execution.workflowId, runId: execution.runId };
}

function badRequest(field: string, rule: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'BadRequest',
    message: `invalid batch items: ${field}: ${rule}`,
    nonRetryable: true,
    details: [{ field, rule }],
  });
}

/** The first of the route's capacity failure patterns a job's error text contains. */
function capacityPattern(error: string, patterns: readonly string[] | undefined): string | undefined {
  return patterns?.find((pattern) => isCapacityFailure(error, [pattern]));
}

/** Parses one manifest line into a request; a problem names the line and the field. */
export function requestOf(line: string, index: number): JobRequestInput {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw badRequest(`items line ${index + 1}`, 'must be one JSON object per line');
  }
  const parsed = submitRequestSchema.safeParse(value);
  if (!parsed.success) {
    const { field, rule } = firstIssue(parsed.error);
    throw badRequest(`items line ${index + 1}: ${field}`, rule);
  }
  return value as JobRequestInput;
}

/**
 * Which client made a watcher's looks (contracts/look-log.ts): one name per client object, whose
 * limiter every watcher on it shares.
 */
const lookSources = new WeakMap<object, string>();
function lookSourceOf(client: object): string {
  let source = lookSources.get(client);
  if (source === undefined) {
    source = randomUUID();
    lookSources.set(client, source);
  }
  return source;
}

export function createBatchActivities(deps: BatchActivityDeps) {
  const { client } = deps;
  const lookSource = lookSourceOf(client);
  const resultStoreDir = deps.resultStoreDir ?? '.results';
  const store = deps.batchStore ?? defaultBatchStore(resultStoreDir);
  const outputs = deps.resultStore ?? createLocalResultStore(resultStoreDir);
  const errorMaxChars = deps.errorMaxChars ?? 2_000;
  const shorten = (text: string) => (text.length > errorMaxChars ? `${text.slice(0, errorMaxChars)}…` : text);
  const metrics = deps.metrics ?? noopMetrics;
  const inFlight = createInFlightTracker(metrics);
  const countOutcome = (status: string) => {
    const outcome = batchItemOutcome(status);
    if (outcome) metrics.batchItemFinished(outcome);
  };

  /**
   * One finished run's estimate, as the job activities make it; a failed estimate is none. The
   * counter takes it only at the first look at that run (`first`, from the in-flight tracker).
   */
  async function runCost(endpointId: string, executionTime: number | undefined, first: boolean) {
    if (!deps.estimateCost || executionTime === undefined) return undefined;
    const cost = await deps.estimateCost(endpointId, executionTime).catch(() => undefined);
    if (cost && first) metrics.estimatedCost(cost.tier, cost.amount);
    return cost;
  }

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

  /** A limit of the client's as it crosses into history: no Infinity (JSON has none). */
  function limitInForce(operation: 'run' | 'status'): EndpointLimit {
    const limit = client.rateLimit?.(operation);
    return {
      ...(limit && Number.isFinite(limit.perTenSeconds) ? { perTenSeconds: limit.perTenSeconds } : {}),
      ...(limit?.concurrent === undefined ? {} : { concurrent: limit.concurrent }),
    };
  }

  async function checkLines(key: string, total: number): Promise<void> {
    const page = 1_000;
    for (let from = 0; from < total; from += page) {
      const indexes = Array.from({ length: Math.min(page, total - from) }, (_, k) => from + k);
      const lines = await store.readLines(key, indexes);
      lines.forEach((line, k) => {
        requestOf(line, from + k);
      });
      Context.current().heartbeat(from);
    }
  }

  return {
    /** The batch's manifest: checked line by line before anything is sent. */
    async stageBatchItems(input: {
      items: { inline: unknown[] } | { manifest: { key: string } } | { redrive: { key: string } };
    }): Promise<{
      batchKey: string;
      manifestKey: string;
      total: number;
      runLimit?: EndpointLimit;
      statusLimit?: EndpointLimit;
    }> {
      const { workflowId } = context();
      const batchKey = batchKeyFor(workflowId);
      const items = input.items;
      let manifestKey: string;
      if ('inline' in items) {
        manifestKey = `${batchKey}/items.jsonl`;
        await store.writeLines(
          manifestKey,
          items.inline.map((item) => JSON.stringify(item)),
        );
      } else if ('manifest' in items) {
        if (!storeKeySchema.safeParse(items.manifest.key).success)
          throw badRequest('items.manifest.key', 'must be a key of the batch store');
        manifestKey = items.manifest.key;
      } else {
        // The items of an earlier batch that did not complete (failed or never started), from its manifest.
        const [meta] = await store.readLines(`${items.redrive.key}/meta.jsonl`, [0]);
        const { manifestKey: source, total } = JSON.parse(meta as string) as {
          manifestKey: string;
          total: number;
        };
        const completed = new Set<number>();
        for (const part of await store.list(`${items.redrive.key}/results`)) {
          const count = await store.countLines(part);
          const lines = await store.readLines(
            part,
            Array.from({ length: count }, (_, k) => k),
          );
          for (const line of lines) completed.add((JSON.parse(line) as BatchResultLine).index);
        }
        const failed = Array.from({ length: total }, (_, k) => k).filter((k) => !completed.has(k));
        failed.sort((a, b) => a - b);
        manifestKey = `${batchKey}/items.jsonl`;
        await store.writeLines(manifestKey, failed.length === 0 ? [] : await store.readLines(source, failed));
      }
      let total: number;
      try {
        total = await store.countLines(manifestKey);
      } catch (error) {
        throw badRequest('items.manifest.key', (error as Error).message);
      }
      if (total === 0) throw badRequest('items', 'must hold at least one item');
      await checkLines(manifestKey, total);
      await store.writeLines(`${batchKey}/meta.jsonl`, [JSON.stringify({ manifestKey, total })]);
      // The limits this worker's client keeps to: the batch holds them for all its workers.
      return {
        batchKey,
        manifestKey,
        total,
        runLimit: limitInForce('run'),
        statusLimit: limitInForce('status'),
      };
    },

    /** POST /run for each item of the page, at once, paced by the client's rate limiter. */
    async submitBatchPage(input: {
      endpointId: string;
      manifestKey: string;
      indexes: number[];
      /** Name a webhook (per item) in each request. */
      webhook?: boolean;
      /** The batch's submitLease setting; absent: no lease (batches started before it). */
      submitLease?: SubmitLeaseSetting;
      /** Fields set in every job's input on this endpoint of the batch's route. */
      inputOverrides?: Record<string, unknown>;
      /**
       * The page's share of the endpoint's /run limit, which the batch holds for all its workers
       * (workflows/send-window.ts): its requests go out from `at` until `by` (ms since the epoch),
       * `concurrent` at a time; one that cannot go by then is not sent.
       */
      send?: PageSend;
    }): Promise<{ results: SubmitItemResult[]; unsent?: number[] }> {
      const { workflowId } = context();
      const lines = await store.readLines(input.manifestKey, input.indexes);
      const send = input.send;
      if (send) await waitToSend(send.at);
      const startedAt = Date.now();
      const gate = createRateLimiter(
        send ? { run: { perTenSeconds: Number.POSITIVE_INFINITY, concurrent: send.concurrent } } : false,
      );
      const unsent: number[] = [];
      const webhookUrlFor = input.webhook === false ? undefined : deps.webhookUrlFor;
      const webhook = webhookUrlFor !== undefined;
      // The jobs created so far ride in the heartbeat: if this worker dies, the workflow reads them
      // from the timeout and only the rest of the page counts as uncertain.
      const created: NonNullable<SubmitBeat['created']> = [];
      const ctx = Context.current();
      const notAfter = extensionsNotAfter(startedAt, ctx.info.startToCloseTimeoutMs);
      await beatBeforeSending({ sending: true, created });
      // Every beat repeats that requests may be out: the server keeps only the last details.
      const beat = () => ctx.heartbeat({ sending: true, created });
      const results = await Promise.all(
        input.indexes.map(async (i, k): Promise<SubmitItemResult | undefined> => {
          let request: JobRequestInput;
          try {
            request = requestFor(requestOf(lines[k] as string, i), {
              endpointId: input.endpointId,
              ...(input.inputOverrides === undefined ? {} : { inputOverrides: input.inputOverrides }),
            });
          } catch (error) {
            return {
              i,
              rejected: { type: 'BadRequest', message: (error as Error).message, retryable: false },
            };
          }
          const ttl = request.policy?.ttl;
          // The item rides in the URL (bound by its token) so that an orphan of an uncertain submit names its item.
          const armed = webhookUrlFor
            ? {
                ...request,
                webhook: webhookUrlFor(workflowId, { item: i, ttlMs: ttl ?? JOB_LIMITS.ttlDefaultMs }),
              }
            : request;
          const lease =
            input.submitLease === undefined
              ? undefined
              : leaseRequest(input.submitLease, 'async', ttl ?? JOB_LIMITS.ttlDefaultMs);
          const leaseTtl = leaseApplies(lease, webhook) ? lease.ttlMs : undefined;
          const leased = leaseTtl === undefined ? {} : { lease: leaseTtl };
          const body =
            leaseTtl === undefined ? armed : { ...armed, policy: { ...armed.policy, ttl: leaseTtl } };
          // Past `by` (here or in the client's limiter) the client sends nothing: see the catch.
          const release = await gate.acquire(input.endpointId, 'run');
          const sentAt = Date.now();
          try {
            const submitted = await client.jobs
              .run(input.endpointId, body, send ? { sendBy: send.by } : {})
              .finally(release);
            metrics.submission('accepted');
            inFlight.started(input.endpointId, submitted.id);
            deps.batchJobReports?.created(submitted.id);
            const result: NonNullable<SubmitBeat['created']>[number] = {
              i,
              id: submitted.id,
              ...(ttl === undefined ? {} : { ttl }),
              ...leased,
            };
            created.push(result);
            beat();
            // The lease extended here, as the job's submit does (activities/job.ts): the answer
            // then says no lease, and the workflow has nothing to extend. A long lease is left to
            // the job's watcher, whose looks carry the ttl (contracts/submit-lease.ts says why).
            if (
              leaseTtl !== undefined &&
              !looksExtendLease(leaseTtl) &&
              (await extendLeaseInSubmit(
                client,
                {
                  endpointId: input.endpointId,
                  jobId: submitted.id,
                  leaseTtlMs: leaseTtl,
                  callerTtlMs: ttl,
                  sentAt,
                  notAfter,
                },
                beat,
              ))
            ) {
              delete result.lease;
              beat();
            }
            return result;
          } catch (error) {
            // Its page's time to send was over: sent later, it could crowd a window the batch gave to
            // others. It goes back to the queue.
            if (
              send &&
              error instanceof ServiceError &&
              error.kind === 'Aborted' &&
              !error.mayHaveReachedService &&
              Date.now() > send.by
            ) {
              unsent.push(i);
              return undefined;
            }
            if (error instanceof ValidationError) {
              metrics.submission('refused');
              return { i, rejected: { type: 'BadRequest', message: error.message, retryable: false } };
            }
            if (error instanceof ServiceError && !error.mayHaveReachedService) {
              metrics.submission('refused');
              return {
                i,
                rejected: {
                  type: error.kind,
                  message: error.message,
                  retryable: error.retryable,
                  ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
                },
              };
            }
            metrics.submission('uncertain');
            const message = error instanceof Error ? error.message : String(error);
            return {
              i,
              uncertain: message,
              armed: webhook,
              ...leased,
              ...(ttl === undefined ? {} : { ttl }),
            };
          }
        }),
      );
      const answered = results.filter((result) => result !== undefined);
      return unsent.length === 0 ? { results: answered } : { results: answered, unsent };
    },

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
      const { info, runId } = context();
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
      // batch counts a cancelled watcher's share as spent only for one window (workflows/look-shares.ts).
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
      const ttlToSet = new Map((input.extend ?? []).map(([index, ttl]) => [index, ttl]));
      const extendBy = new Map((input.extend ?? []).map(([index, , dueAt]) => [index, dueAt ?? 0]));
      const extended: number[] = [];
      const unextended = () => [...extendBy].filter(([index]) => ttlToSet.has(index) && pending.has(index));
      const addDueExtensions = (now: number) => {
        for (const [index, at] of unextended()) if (at <= now) due.add(index);
      };
      /** How long until the next extension falls due, at most `ms`. */
      const untilExtension = (ms: number, now: number) =>
        Math.min(ms, ...unextended().map(([, at]) => Math.max(0, at - now)));
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
                const ttl = ttlToSet.get(i);
                try {
                  status = await client.jobs.status(input.endpointId, jobId, {
                    signal,
                    ...(ttl === undefined ? { background } : { ttl }),
                  });
                  if (ttlToSet.delete(i)) extended.push(i);
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

    /**
     * /status?ttl= for each job submitted under a lease: its ttl becomes the caller's (the service
     * counts it from submission). Each is tried, at the client's /status pace, until `until` (when
     * its lease would end): extended, gone (a 404: the lease ran out) or neither (every try failed;
     * the watcher's next looks tell which).
     */
    async extendBatchLeases(input: {
      endpointId: string;
      items: Array<[index: number, jobId: string, ttl: number, until: number]>;
    }): Promise<{ results: Array<{ i: number; extended?: true; gone?: true }> }> {
      const ctx = Context.current();
      const signal = ctx.cancellationSignal;
      setMaxListeners(2 * input.items.length + 10, signal);
      let done = 0;
      // A try can wait out 429s for longer than the heartbeat timeout: the beat says "alive", not
      // "progress", so a dead worker is still noticed within it.
      const beat = setInterval(() => ctx.heartbeat(done), 1_000);
      const results = await Promise.all(
        input.items.map(async ([i, jobId, ttl, until]) => {
          const extension = await extendJobTtl(
            client,
            { endpointId: input.endpointId, jobId, ttl, until, signal },
            undefined,
            (ms) => ctx.sleep(ms).catch(() => undefined),
          );
          ctx.heartbeat(++done);
          if (extension === 'extended') return { i, extended: true as const };
          return extension === 'gone' ? { i, gone: true as const } : { i };
        }),
      ).finally(() => clearInterval(beat));
      if (signal.aborted) throw new CancelledFailure('activity cancelled');
      return { results };
    },

    /**
     * POST /retry for each job (same id, original input), harmless to repeat (see job-retry.ts). A
     * job whose /retry went unanswered in a way a later try may fix (a 5xx, a timeout, a dropped
     * connection: the service may have acted or not) is `unanswered`, and is tried again.
     */
    async retryBatchJobs(input: { endpointId: string; items: Array<[number, string]> }): Promise<{
      results: Array<{ i: number; status?: string; gone?: boolean; unanswered?: boolean; error?: string }>;
    }> {
      const results = await Promise.all(
        input.items.map(async ([i, jobId]) => {
          try {
            // Whether an earlier call tried this job is not known here: a refusal with the job
            // FAILED again ends the item as failed, which it is either way.
            const answer = await retryJobOnService(client.jobs, input.endpointId, jobId, {
              triedBefore: false,
            });
            const status = answer.retried === 'now' ? answer.status : answer.now.status;
            if (!TERMINAL.has(status)) inFlight.started(input.endpointId, jobId);
            // Its next end sends a webhook of its own; the earlier one must not make it look ended.
            deps.batchJobReports?.forget(jobId);
            return { i, status };
          } catch (error) {
            if (error instanceof ServiceError && error.kind === 'NotFound') return { i, gone: true };
            if (error instanceof ServiceError && error.retryable) return { i, unanswered: true };
            return { i, error: shorten(error instanceof Error ? error.message : String(error)) };
          }
        }),
      );
      return { results };
    },

    /** POST /cancel for each job, within the /cancel limits (the client's limiter paces them). */
    async cancelBatchJobs(input: {
      endpointId: string;
      items: Array<[number, string]>;
    }): Promise<{ results: Array<{ i: number; status?: string; gone?: boolean; error?: string }> }> {
      let done = 0;
      const results = await Promise.all(
        input.items.map(async ([i, jobId]) => {
          try {
            const answer = await client.jobs.cancel(input.endpointId, jobId);
            if (TERMINAL.has(answer.status)) inFlight.left(input.endpointId, jobId);
            return { i, status: answer.status };
          } catch (error) {
            if (error instanceof ServiceError && error.kind === 'NotFound') {
              inFlight.left(input.endpointId, jobId);
              return { i, gone: true };
            }
            return { i, error: shorten(error instanceof Error ? error.message : String(error)) };
          } finally {
            Context.current().heartbeat(++done);
          }
        }),
      );
      return { results };
    },

    /**
     * Lines of items that ended, as one part per folder (replaced if retried): COMPLETED ones (the
     * child mode's, whose outputs are references) under results/, the others under failures/.
     */
    async recordBatchResults(input: { batchKey: string; lines: PendingResultLine[] }): Promise<void> {
      const { info, runId } = context();
      const part = `${runId}-${info.activityId}.jsonl`;
      const lines = await Promise.all(input.lines.map(withErrorText));
      const completed = lines.filter((line) => line.status === 'COMPLETED');
      const failed = lines.filter((line) => line.status !== 'COMPLETED');
      const text = (lines: BatchResultLine[]) => lines.map((line) => JSON.stringify(line));
      if (completed.length > 0) await store.writeLines(`${input.batchKey}/results/${part}`, text(completed));
      if (failed.length > 0 || completed.length === 0)
        await store.writeLines(`${input.batchKey}/failures/${part}`, text(failed));
      for (const line of lines) countOutcome(line.status);
    },
  };

  /** A line's error text, read back from where the watcher put it. */
  async function withErrorText({ errorRef, ...line }: PendingResultLine): Promise<BatchResultLine> {
    if (errorRef === undefined) return line;
    try {
      const [text] = await store.readLines(errorRef, [0]);
      return { ...line, error: JSON.parse(text ?? '""') as string };
    } catch (error) {
      return {
        ...line,
        error: `its error text could not be read from the batch store: ${(error as Error).message}`,
      };
    }
  }
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;
