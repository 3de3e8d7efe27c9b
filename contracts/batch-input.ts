/**
 * The batch workflow's input, and the shapes it shares with its activities and the facade. The
 * per-item job options are the job workflow's own fields (same schema, same defaults), taken from
 * its schema so the two can never drift apart.
 *
 * Bundled into workflow code: only zod, api/schemas, input-rules and job-input may be imported here.
 */
import { z } from 'zod';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { emitOnEndSchema } from './automation-input';
import { type Scheduling, schedulingSchema } from './endpoint-gate';
import { firstIssue } from './input-rules';
import { firstEndpoint, jobWorkflowInputSchema } from './job-input';
import { storeKeySchema, submitRequestSchema } from './job-types';
import { routeSchema } from './route';

export { storeKeySchema } from './job-types';

const job = jobWorkflowInputSchema.shape;

/** Per-item options: the job workflow's fields of the same names, with its defaults. */
export const batchItemOptionsSchema = z.strictObject({
  retry: job.retry,
  onExpired: job.onExpired,
  onUncertainSubmit: job.onUncertainSubmit,
  uncertainSubmitWait: job.uncertainSubmitWait,
  submitLease: job.submitLease,
  maxSubmissions: job.maxSubmissions,
  maxLeaseResubmits: job.maxLeaseResubmits,
  polling: job.polling,
  outputInlineMaxBytes: job.outputInlineMaxBytes,
  submitTimeout: job.submitTimeout,
});

const itemsSchema = z.union(
  [
    z.strictObject({ inline: z.array(submitRequestSchema).min(1, { error: 'must hold at least one item' }) }),
    z.strictObject({ manifest: z.strictObject({ key: storeKeySchema }) }),
    /** The failed items of a finished batch (redriveBatch): its store key. */
    z.strictObject({ redrive: z.strictObject({ key: storeKeySchema }) }),
  ],
  { error: 'must be { inline: [requests] }, { manifest: { key } } or { redrive: { key } }' },
);

export const failureToleranceSchema = z
  .strictObject({
    /** Failed items allowed; one more fails the batch. */
    count: z.int().min(0).optional(),
    /** Failed items allowed as a percentage of all items; above it the batch fails. */
    percentage: z.number().min(0).max(100).optional(),
  })
  .prefault({});

export const MAX_BATCH_CONCURRENCY = 10_000;
export const concurrencySchema = z.int().min(1).max(MAX_BATCH_CONCURRENCY);
/**
 * Child workflows open at once in mode 'children': Temporal refuses a workflow more than 2,000
 * pending children (limit.numPendingChildExecutions), and each child's start and end is history.
 */
export const MAX_CHILD_CONCURRENCY = 1_000;

export type BatchMode = 'activities' | 'children';

/** The concurrency rule of a mode, for the input and for setBatchConcurrency alike: a rule, or undefined when it holds. */
export function concurrencyIssue(mode: BatchMode, value: number): string | undefined {
  if (mode === 'children' && value > MAX_CHILD_CONCURRENCY)
    return `must be at most ${MAX_CHILD_CONCURRENCY} in mode 'children' (child workflows open at once)`;
  return undefined;
}

/**
 * A live change of a running batch's maxConcurrency (setBatchConcurrency): the rule, or undefined
 * when it holds. The client checks it before it sends (it does not know the batch's mode: the
 * general bound); the workflow's update validator checks it again with its mode.
 */
export function concurrencyChangeIssue(value: unknown, mode?: BatchMode): string | undefined {
  const checked = concurrencySchema.safeParse(value);
  if (!checked.success) return checked.error.issues[0]?.message ?? 'is invalid';
  return mode === undefined ? undefined : concurrencyIssue(mode, checked.data);
}

export const batchInputSchema = z.strictObject({
  /** The endpoint every item runs on (exactly one of endpointId and route). */
  endpointId: pathSegmentSchema.optional(),
  /**
   * Or endpoints to spread the items over (contracts/route.ts): each with a window of its own;
   * items flow to the endpoints with room, cheaper first when priced; an endpoint that starves
   * its queue, fails for capacity or is deleted is drained and skipped until it recovers.
   */
  route: routeSchema.optional(),
  items: itemsSchema,
  /**
   * 'activities' (default): a few activities follow every job, and history holds counters only.
   * 'children': one serverlessJob child workflow per item (each visible in the UI), in the same
   * sliding window; its request is read from the batch store, its output goes to the result store.
   */
  mode: z.enum(['activities', 'children']).default('activities'),
  /** Options every item's job runs with (the job workflow's; default: its defaults). */
  job: batchItemOptionsSchema.prefault({}),
  /** Jobs in flight at once (submitted and not finished); changeable while running. */
  maxConcurrency: concurrencySchema.default(100),
  /**
   * How its submits share the endpoint with other work: priority 1 (first) to 5 (last), default
   * 3, and a fairness key (a tenant) with its weight (contracts/endpoint-gate.ts).
   */
  ...schedulingSchema.shape,
  /** Failures tolerated before the batch fails (default: none). Either bound can fail it. */
  failureTolerance: failureToleranceSchema,
  /** Items per submit activity. */
  pageSize: z.int().min(1).max(1_000).default(100),
  /** A run continues as new after this many history events (or sooner, when Temporal suggests). */
  maxEventsPerRun: z.int().min(200).max(40_000).default(2_000),
  /**
   * Stop submitting once the estimated cost of the finished runs reaches this amount (in the
   * worker's price table's currency); jobs in flight finish, then BatchBudgetExceeded.
   */
  budget: z
    .number({ error: 'must be a number > 0 (in the price table currency)' })
    .finite({ error: 'must be a finite number > 0' })
    .positive({ error: 'must be a number > 0 (in the price table currency)' })
    .optional(),
  /** Send an event to this automation when the batch ends (chaining; workflows/shared/emit-on-end.ts). */
  emitOnEnd: emitOnEndSchema.optional(),
});

export type BatchInput = z.input<typeof batchInputSchema>;
/** The parsed input; `endpointId` is the first endpoint (the route's first when it names a route). */
export type ParsedBatchInput = Omit<z.infer<typeof batchInputSchema>, 'endpointId'> & { endpointId: string };
export type BatchItemOptions = z.infer<typeof batchItemOptionsSchema>;

export function parseBatchInput(
  raw: unknown,
): { ok: true; value: ParsedBatchInput } | { ok: false; field: string; rule: string } {
  const result = batchInputSchema.safeParse(raw);
  if (!result.success) return { ok: false, ...firstIssue(result.error) };
  if ((result.data.endpointId === undefined) === (result.data.route === undefined))
    return { ok: false, field: 'endpointId', rule: 'exactly one of endpointId and route is required' };
  const tooMany = concurrencyIssue(result.data.mode, result.data.maxConcurrency);
  if (tooMany) return { ok: false, field: 'maxConcurrency', rule: tooMany };
  if (result.data.mode === 'children' && result.data.job.outputInlineMaxBytes !== undefined)
    return {
      ok: false,
      field: 'job.outputInlineMaxBytes',
      rule: "does not apply in mode 'children' (every output goes to the result store)",
    };
  const polling = result.data.job.polling;
  if (polling?.initialIntervalMs !== undefined && polling.maxIntervalMs !== undefined) {
    if (polling.maxIntervalMs < polling.initialIntervalMs)
      return { ok: false, field: 'job.polling.maxIntervalMs', rule: 'must not be below initialIntervalMs' };
  }
  return { ok: true, value: { ...result.data, endpointId: firstEndpoint(result.data) } };
}

// ------------------------------------------------------------------------------------------------
// What crosses between the batch workflow and its activities (compact: it is written to history).

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

/** A page's share of that limit: its requests go out from `at` until `by` (ms since the epoch), `concurrent` at a time. */
/** How a page's requests go out: `concurrent` at a time, each within the room its endpoint's gate grants. */
export interface PageSend {
  concurrent: number;
  /** The batch's priority and fairness key at the endpoint's gate. */
  scheduling: Scheduling;
}

/** The submit lease's counts (contracts/submit-lease.ts), in the summary and the progress. */
export interface BatchLeaseCounts {
  /** Uncertain submits resolved by adopting the orphan that reported itself by webhook. */
  uncertainAdopted: number;
  /** Uncertain submits under a lease resolved by a new submission once the lease was over. */
  resubmittedAfterLease: number;
  /** Jobs whose lease ran out before it could be extended (a 404), submitted again. */
  leaseLapses: number;
}

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

/** A batch's estimated cost: the job's estimate (contracts/cost.ts) summed over its runs. */
export interface BatchCost {
  amount: number;
  /** The price table's currency; absent until a run has an estimate. */
  currency?: string;
  /** Runs with an estimate (a retried item counts once per run). */
  items: number;
}

/** One line of a batch's results (JSONL): what happened to one item. */
export interface BatchResultLine {
  index: number;
  jobId?: string;
  /** The endpoint its (last) job ran on. */
  endpointId?: string;
  /** Its moves between the route's endpoints, when it moved. */
  hops?: number;
  /** COMPLETED, FAILED, TIMED_OUT, CANCELLED, EXPIRED, UNCERTAIN or REJECTED. */
  status: string;
  output?: unknown;
  outputRef?: unknown;
  error?: string;
  attempts: number;
  submissions: number;
  delayTime?: number;
  executionTime?: number;
  /** The estimated cost of the item's runs (all of them, for a retried job), when prices are set. */
  cost?: number;
  submittedAt?: number;
  finishedAt?: number;
}

/** A line as the workflow hands it to be recorded: its error text may still be in the store. */
export type PendingResultLine = BatchResultLine & { errorRef?: string };

/** Where a batch's results live: `<key>/results/*.jsonl` and `<key>/failures/*.jsonl` in the batch store. */
export interface BatchResultsRef {
  kind: 'serverless-batch-results';
  store: string;
  key: string;
}

export interface BatchCounts {
  completed: number;
  failed: number;
  timedOut: number;
  expired: number;
  cancelled: number;
  uncertain: number;
  rejected: number;
}

/** What a batch did on one endpoint of its route. */
export interface BatchEndpointSplit {
  /** Items that completed there. */
  completed: number;
  /** Items that ended there any other way. */
  failed: number;
  /** Jobs moved from there to another endpoint (withdrawn from its queue, capacity failures). */
  moved: number;
  /** The estimated cost of the runs there, when prices are known. */
  cost?: number;
  /** While it is drained (starved, failing for capacity, gone): when it is tried again. */
  drainedUntil?: number;
}

export interface BatchSummary {
  batchId: string;
  endpointId: string;
  total: number;
  counts: BatchCounts;
  /** Items that ended any other way than COMPLETED. */
  failures: number;
  /** Items never submitted (the batch stopped: tolerance exceeded or cancelled). */
  notStarted: number;
  /** POST /run calls that may have created a job, uncertain ones included. */
  submissions: number;
  uncertainSubmits: number;
  /** How the uncertain submits and the lease ended (contracts/submit-lease.ts). */
  lease: BatchLeaseCounts;
  retries: number;
  webhooks: number;
  /** Moves of items to another endpoint of the route (mode 'activities'). */
  hops?: number;
  /** Per endpoint (by id, in route order): what ran and ended there (mode 'activities'). */
  endpoints?: Record<string, BatchEndpointSplit>;
  toleranceExceeded: boolean;
  /** The running estimate reached `budget`: no more submissions (absent when no budget was set). */
  budgetExceeded?: boolean;
  budget?: number;
  /** Why the batch stopped submitting before its last item, when it did. */
  stoppedBecause?: 'failure-tolerance' | 'budget' | 'cancelled';
  cost: BatchCost;
  cancelled: boolean;
  results: BatchResultsRef;
  /** The same store key; readBatchResults(..., { only: 'failures' }) reads only these. */
  failuresRef: BatchResultsRef & { only: 'failures' };
  /** The item list the batch ran (the manifest, or the staged inline items). */
  manifestKey: string;
  startedAt: number;
  elapsedMs: number;
  runs: number;
  /** History events of all the batch's runs together. */
  historyEvents: number;
}

export interface BatchProgress {
  batchId: string;
  total: number;
  /** Items handed to the service so far (next index to submit). */
  cursor: number;
  counts: BatchCounts;
  done: number;
  inFlight: number;
  paused: boolean;
  maxConcurrency: number;
  /** Items done per second since the start, and the time left at that rate. */
  ratePerSecond: number;
  etaMs?: number;
  submissions: number;
  uncertainSubmits: number;
  lease: BatchLeaseCounts;
  retries: number;
  /** Moves of items to another endpoint of the route (mode 'activities'). */
  hops?: number;
  /** Per endpoint (by id, in route order): what ran and ended there so far (mode 'activities'). */
  endpoints?: Record<string, BatchEndpointSplit>;
  runs: number;
  historyEvents: number;
  startedAt: number;
  toleranceExceeded: boolean;
  budgetExceeded?: boolean;
  budget?: number;
  cost: BatchCost;
}
