/**
 * The batch workflow's input: its schema, the rules of its concurrency in each mode, and its
 * parse. The per-item job options are the job workflow's own fields (same schema, same defaults),
 * taken from its schema so the two can never drift apart. (The shapes the batch shares with its
 * activities are in batch-types.ts; its summary, progress and result lines in batch-summary.ts.)
 *
 * Bundled into workflow code: only zod, api/schemas, input-rules and job-input may be imported here.
 */
import { z } from 'zod';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { emitOnEndSchema } from './automation-input';
import { schedulingSchema } from './endpoint-gate';
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
