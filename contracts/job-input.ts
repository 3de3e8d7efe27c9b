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
import { JOB_LIMITS, waitSchema } from '../api/schemas/job';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { emitOnEndSchema } from './automation-input';
import { durationSchema, firstIssue } from './input-rules';
import { pollingSchema, requestRefSchema, streamSinkSchema, submitRequestSchema } from './job-types';
import { LEASE_MIN_MS } from './submit-lease';

/** Polling schedules by mode; a caller's `polling` overrides field by field. */
export const POLLING_DEFAULTS = {
  // Long jobs: a lost webhook costs at most ~30 s, and a 1-hour job ~130 status calls.
  async: { initialIntervalMs: 1_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 },
  // Short jobs (and /runsync jobs, whose results are kept for 1 minute only): answer fast.
  sync: { initialIntervalMs: 200, maxIntervalMs: 2_000, backoffCoefficient: 1.5 },
} as const;

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
    endpointId: pathSegmentSchema,
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
    /** runsync: how long the service holds the response (ms, 1000 to 300000). */
    runsyncWait: waitSchema.optional(),
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
    /** Fresh submissions allowed in total (first one, resubmits after expiry or an uncertain submit). */
    maxSubmissions: z.int().min(1).max(20).default(3),
    /**
     * Room beyond maxSubmissions for sending again after an uncertain submit's lease ran out with no
     * orphan reporting: no copy of the job can be live then (deleted at its lease, or never made),
     * so these do not spend the caller's maxSubmissions (workflows/job-rules.ts).
     */
    maxLeaseResubmits: z.int().min(0).max(20).default(5),
    /** Override of the mode's polling schedule. */
    polling: pollingSchema.partial().optional(),
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
    /** Send an event to this automation when the job ends (chaining; workflows/emit-on-end.ts). */
    emitOnEnd: emitOnEndSchema.optional(),
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
/** The input with defaults filled in and durations in ms. */
export type ParsedJobWorkflowInput = z.infer<typeof jobWorkflowInputSchema>;
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
  polling: z.infer<typeof pollingSchema>;
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
  const options = result.data;
  const polling = {
    ...POLLING_DEFAULTS[options.mode === 'async' ? 'async' : 'sync'],
    ...options.polling,
  };
  if (polling.maxIntervalMs < polling.initialIntervalMs) {
    return { ok: false, field: 'polling.maxIntervalMs', rule: 'must not be below initialIntervalMs' };
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
