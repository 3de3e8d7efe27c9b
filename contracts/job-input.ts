/**
 * The job workflow's input. The client facade parses it before it starts anything and the
 * workflow parses it again (a workflow can be started by anyone: the CLI, `temporal workflow
 * start`, another workflow). Field rules come from api/ so the client and the workflow never
 * disagree about what the service accepts.
 *
 * Bundled into workflow code: only zod, api/schemas, input-rules and the pure contracts/job-types may be
 * imported here.
 */
import { z } from 'zod';
import { JOB_LIMITS } from '../api/schemas/job';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { emitOnEndSchema } from './automation-input';
import { schedulingSchema } from './endpoint-gate';
import { durationBetween, durationSchema, firstIssue } from './input-rules';
import { type Polling, requestRefSchema, streamSinkSchema, submitRequestSchema } from './job-types';
import { type Route, routeSchema } from './route';
import { LEASE_MIN_MS } from './submit-lease';

/** The ttl of a job at the service (10 seconds to 7 days), as a duration. */
export const jobTtlSchema = durationBetween(JOB_LIMITS.ttlMinMs, JOB_LIMITS.ttlMaxMs);
/** A job's execution timeout at the service (5 seconds to 7 days), as a duration. */
export const jobExecutionTimeoutSchema = durationBetween(
  JOB_LIMITS.executionTimeoutMinMs,
  JOB_LIMITS.executionTimeoutMaxMs,
);

/** Polling schedules by mode; a caller's `polling` overrides field by field. */
export const POLLING_DEFAULTS = {
  // Long jobs: a lost webhook costs at most ~30 s, and a 1-hour job ~130 status calls.
  async: { initialIntervalMs: 1_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 },
  // Short jobs (and /runsync jobs, whose results are kept for 1 minute only): answer fast.
  sync: { initialIntervalMs: 200, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
} as const;

const pollingIntervalSchema = durationBetween(10, 3_600_000);

/**
 * A caller's polling schedule, field by field over the mode's: durations as everywhere else,
 * parsed to the activities' schedule (contracts/job-types.ts pollingSchema, in ms).
 */
export const pollingInputSchema = z
  .strictObject({
    /** The first pause between two /status calls. */
    initialInterval: pollingIntervalSchema.optional(),
    /** The longest pause; the pause grows by backoffCoefficient up to it. */
    maxInterval: pollingIntervalSchema.optional(),
    backoffCoefficient: z.number().min(1).max(10).optional(),
  })
  .refine(
    (p) =>
      p.initialInterval === undefined || p.maxInterval === undefined || p.maxInterval >= p.initialInterval,
    { error: 'must not be below initialInterval', path: ['maxInterval'] },
  )
  .transform(
    ({ initialInterval, maxInterval, backoffCoefficient }): Partial<Polling> => ({
      ...(initialInterval === undefined ? {} : { initialIntervalMs: initialInterval }),
      ...(maxInterval === undefined ? {} : { maxIntervalMs: maxInterval }),
      ...(backoffCoefficient === undefined ? {} : { backoffCoefficient }),
    }),
  );

/** What a caller writes for a polling schedule (durations as given). */
export type PollingInput = z.input<typeof pollingInputSchema>;

/**
 * A parsed polling schedule written back as input, for a workflow that starts a job with options
 * it parsed itself (the batch's child mode): the job workflow parses it again.
 */
export function pollingInputOf(polling: Partial<Polling>): PollingInput {
  return {
    ...(polling.initialIntervalMs === undefined ? {} : { initialInterval: polling.initialIntervalMs }),
    ...(polling.maxIntervalMs === undefined ? {} : { maxInterval: polling.maxIntervalMs }),
    ...(polling.backoffCoefficient === undefined ? {} : { backoffCoefficient: polling.backoffCoefficient }),
  };
}

export const jobRetrySchema = z
  .strictObject({
    /** /retry calls in the whole workflow (same job id, original input); 0 = never retry. */
    maxRetries: z.int().min(0).max(100).default(0),
    /** Backoff before the first /retry; then times backoffCoefficient per retry, capped at maximumInterval. */
    initialInterval: durationSchema.default(1_000),
    backoffCoefficient: z.number().min(1).max(100).default(2),
    /** Cap on the backoff; default 10 minutes, or initialInterval when that is longer. */
    maximumInterval: durationSchema.optional(),
    /** Which terminal statuses are retried. */
    on: z
      .array(z.enum(['FAILED', 'TIMED_OUT']))
      .min(1)
      .default(['FAILED', 'TIMED_OUT']),
  })
  .refine((retry) => retry.maximumInterval === undefined || retry.maximumInterval >= retry.initialInterval, {
    error: 'must not be below initialInterval',
    path: ['maximumInterval'],
  });

export const jobWorkflowInputSchema = z
  .strictObject({
    /** The endpoint the job runs on (exactly one of endpointId and route). */
    endpointId: pathSegmentSchema.optional(),
    /**
     * Or endpoints to fall back through (contracts/route.ts): submitted to the first; withdrawn
     * from one that starves it in the queue, or moved on a capacity failure, to the next.
     */
    route: routeSchema.optional(),
    /** The job request without `webhook`: the worker adds its own per-workflow URL. */
    request: submitRequestSchema.optional(),
    /** Or where the worker reads it (exactly one of request and requestRef). */
    requestRef: requestRefSchema.optional(),
    /**
     * `async` (default): POST /run, then webhook and polling. `sync`: the same with fast polling,
     * for short jobs; durable like async. `runsync`: POST /runsync. Its job id arrives only in
     * the response: if that response is lost, so is the job (unless its webhook reports it), and
     * its results are kept for 1 minute only. Prefer `sync` unless you know you need this.
     */
    mode: z.enum(['async', 'sync', 'runsync']).default('async'),
    /** runsync: how long the service holds the response (1 second to 5 minutes). */
    runsyncWait: durationBetween(JOB_LIMITS.waitMinMs, JOB_LIMITS.waitMaxMs).optional(),
    retry: jobRetrySchema.prefault({}),
    /** When the job is gone (ttl passed, results expired before a retry): submit afresh or fail with JobExpired. */
    onExpired: z.enum(['fail', 'resubmit']).default('fail'),
    /**
     * When a submit may have reached the service but its answer was lost: fail with
     * SubmitUncertain (never two jobs by accident), or submit again (at-least-once).
     */
    onUncertainSubmit: z.enum(['fail', 'resubmit']).default('fail'),
    /**
     * How long, after an uncertain submit, to wait for the orphan job's webhook (it arrives when
     * that job finishes) before acting on onUncertainSubmit. Useful only with webhooks.
     */
    uncertainSubmitWait: durationSchema.default(0),
    /**
     * Submit under a short ttl (the lease), extended to the request's ttl once the job id is known,
     * so an uncertain submit resolves itself: its orphan either reports by webhook within the lease
     * (adopted) or is deleted by the service, and the job is submitted again (see
     * contracts/submit-lease.ts). 'auto' (default): a 60-second lease when the worker arms webhooks,
     * none otherwise. A duration (at least 10 s, the service's minimum ttl; above the request's ttl
     * means the request's ttl): always, even without webhooks. false: off, onUncertainSubmit decides.
     * Modes async and sync only.
     */
    submitLease: z
      .union(
        [
          z.literal(['auto', false]),
          durationSchema.pipe(
            z
              .number()
              .min(LEASE_MIN_MS, { error: "must be at least 10 seconds (the service's minimum ttl)" }),
          ),
        ],
        { error: "must be 'auto', false or a duration of at least 10 seconds" },
      )
      .default('auto'),
    /**
     * How its submit shares the endpoint with other work: priority 1 (first) to 5 (last), default
     * 3, and a fairness key (a tenant) with its weight (contracts/endpoint-gate.ts).
     */
    ...schedulingSchema.shape,
    /** Fresh submissions allowed in total (first one, resubmits after expiry or an uncertain submit). */
    maxSubmissions: z.int().min(1).max(20).default(3),
    /**
     * Room beyond maxSubmissions for sending again after an uncertain submit's lease ran out with no
     * orphan reporting: no copy of the job can be live then (deleted at its lease, or never made),
     * so these do not spend the caller's maxSubmissions (engine/job-rules.ts).
     */
    maxLeaseResubmits: z.int().min(0).max(20).default(5),
    /** Override of the mode's polling schedule. */
    polling: pollingInputSchema.optional(),
    /** Stream the job's chunks into a sink (not in runsync mode). The output still comes from /status. */
    stream: z.strictObject({ sink: streamSinkSchema }).optional(),
    /** Outputs larger than this (JSON bytes) go to the result store; default: the worker's. */
    outputInlineMaxBytes: z.int().min(0).max(2_000_000).optional(),
    /** Start-to-close timeout of one submit; past it, the submit counts as uncertain. */
    submitTimeout: durationSchema
      .pipe(z.number().min(1_000, { error: 'must be at least 1 second' }))
      .default(2 * 60_000),
    /** Write the Serverless* search attributes; turn off on a namespace that lacks them. */
    searchAttributes: z.boolean().default(true),
    /**
     * Record the job's start in the workflow: its snapshot, its ServerlessJobStatus search attribute
     * and its details in the UI say IN_PROGRESS while it runs, at seven history events a job. Off
     * (default): they say IN_QUEUE until the job ends, and `getJobSnapshot(..., { live: true })`
     * shows the start from the wait's last look, at no history cost.
     */
    recordStart: z.boolean().default(false),
    /** Send an event to this automation when the job ends (chaining; workflows/shared/emit-on-end.ts). */
    emitOnEnd: emitOnEndSchema.optional(),
  })
  .refine((input) => (input.endpointId === undefined) !== (input.route === undefined), {
    error: 'exactly one of endpointId and route is required',
    path: ['endpointId'],
  })
  .refine((input) => !(input.route && input.mode === 'runsync'), {
    error: 'a route needs mode async or sync (a /runsync job cannot be withdrawn from the queue)',
    path: ['route'],
  })
  .refine((input) => (input.request === undefined) !== (input.requestRef === undefined), {
    error: 'exactly one of request and requestRef is required',
    path: ['request'],
  })
  .refine((input) => !(input.mode === 'runsync' && input.stream), {
    error: 'streaming needs mode async or sync',
    path: ['stream'],
  })
  .refine(
    (input) => input.mode !== 'runsync' || input.submitLease === 'auto' || input.submitLease === false,
    {
      error:
        'submitLease applies to modes async and sync (a /runsync answer comes only when the job has finished)',
      path: ['submitLease'],
    },
  )
  .refine((input) => input.mode === 'runsync' || input.runsyncWait === undefined, {
    error: 'runsyncWait applies to mode runsync only',
    path: ['runsyncWait'],
  });

/** What callers pass (durations as '10 minutes' or ms, defaults optional). */
export type JobWorkflowInput = z.input<typeof jobWorkflowInputSchema>;
/**
 * The input with defaults filled in and durations in ms; `endpointId` is the job's first endpoint
 * (the route's first when it names a route).
 */
export type ParsedJobWorkflowInput = Omit<z.infer<typeof jobWorkflowInputSchema>, 'endpointId'> & {
  endpointId: string;
};
export type JobRetryOptions = z.infer<typeof jobRetrySchema>;
export type JobMode = ParsedJobWorkflowInput['mode'];

export type InputIssue = { field: string; rule: string };

export type ParsedJobInput = {
  options: ParsedJobWorkflowInput;
  /**
   * The request exactly as the caller gave it. The parsed copy has the policy defaults filled in,
   * and sending an explicit executionTimeout would override the endpoint's own setting. Absent
   * with a requestRef: the submit activity reads it from the batch store.
   */
  request?: z.input<typeof submitRequestSchema>;
  /** The ttl the service applies (its default when the caller set none; a requestRef's is read first). */
  ttlMs: number;
  polling: Polling;
};

/** Parses the input; the first problem comes back as a field path and a rule. */
export function parseJobWorkflowInput(
  raw: unknown,
): { ok: true; value: ParsedJobInput } | ({ ok: false } & InputIssue) {
  const result = jobWorkflowInputSchema.safeParse(raw);
  if (!result.success) {
    const { field, rule } = firstIssue(result.error);
    const issue = result.error.issues[0];
    const hint =
      issue?.code === 'unrecognized_keys' && issue.keys.includes('webhook')
        ? ' (the worker sets the webhook itself)'
        : '';
    return { ok: false, field, rule: `${rule}${hint}` };
  }
  const options = { ...result.data, endpointId: firstEndpoint(result.data) };
  const polling = {
    ...POLLING_DEFAULTS[options.mode === 'async' ? 'async' : 'sync'],
    ...options.polling,
  };
  if (polling.maxIntervalMs < polling.initialIntervalMs) {
    const rule = `must not be below initialInterval (${polling.initialIntervalMs} ms)`;
    return { ok: false, field: 'polling.maxInterval', rule };
  }
  const request = (raw as { request?: z.input<typeof submitRequestSchema> }).request;
  return {
    ok: true,
    value: {
      options,
      ...(request === undefined ? {} : { request }),
      ttlMs: options.request?.policy?.ttl ?? JOB_LIMITS.ttlDefaultMs,
      polling,
    },
  };
}

/**
 * The endpoint a job or batch starts on: its own, or its route's first (on a parsed route, the
 * first in price order).
 */
export function firstEndpoint(input: {
  endpointId?: string | undefined;
  route?: { endpoints: ReadonlyArray<{ endpointId: string }> } | undefined;
}): string {
  return input.endpointId ?? (input.route as Route).endpoints[0]!.endpointId;
}
