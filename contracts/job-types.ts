/**
 * The shapes that cross between the job workflow and its activities. This module is pure (zod and
 * api/schemas only, no I/O, no clock), so the workflow reuses these schemas for its own input and
 * the bundle stays free of anything non-deterministic; test/workflows/job-bundle.test.ts guards that.
 */
import { z } from 'zod';
import { jobRequestSchema, jobStatusValueSchema, ttlSchema, waitSchema } from '../api/schemas/job';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import type { CostEstimate } from './cost';
import { schedulingSchema } from './endpoint-gate';

export type { JobStatusValue } from '../api/schemas/job';

/** A large output lives in the result store; the workflow carries this instead. */
export const resultRefSchema = z.strictObject({
  kind: z.literal('serverless-result-ref'),
  /** Which store holds it (`local` for the directory store). */
  store: z.string().min(1),
  key: z.string().min(1),
  bytes: z.int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/** How the wait activity spaces its /status calls: from `initialIntervalMs`, growing by the coefficient. */
export const pollingSchema = z.strictObject({
  initialIntervalMs: z.int().min(10).max(3_600_000),
  maxIntervalMs: z.int().min(10).max(3_600_000),
  backoffCoefficient: z.number().min(1).max(10),
});

// A plain file name: the directory is the worker's (configured), never the caller's.
const sinkFileNameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, {
  error: 'must be a plain file name (letters, digits, . _ -), at most 200 characters',
});

/**
 * Where streamed chunks go. `file`: JSON lines appended to a file of that name in the worker's
 * stream directory. `signal`: each batch is signalled (jobStreamChunksSignal) to that workflow;
 * the job workflow fills in its parent when workflowId is left out. `function`: a sink function
 * the worker registered under that name (createJobActivities({ streamSinks })).
 */
export const streamSinkSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('file'), name: sinkFileNameSchema }),
  z.strictObject({
    kind: z.literal('signal'),
    workflowId: z.string().min(1).optional(),
    runId: z.string().min(1).optional(),
  }),
  z.strictObject({ kind: z.literal('function'), name: z.string().min(1).max(200) }),
]);

/** The job request as the workflow passes it: the caller's object as given (no webhook: the worker adds it). */
export const submitRequestSchema = jobRequestSchema.omit({ webhook: true });

/** A key in the batch store: a relative path of plain segments (no `..`, no leading slash). */
export const storeKeySchema = z
  .string()
  .max(500)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/, {
    error: 'must be a relative path of letters, digits, . _ - segments (no leading dot)',
  });

/**
 * Where a job's request lives instead of the input: line `index` (0-based) of a manifest in the
 * batch store. The batch engine's child mode starts its jobs so, and no request enters history.
 */
export const requestRefSchema = z.strictObject({
  manifestKey: storeKeySchema,
  index: z.int().min(0),
});
export type RequestRef = z.infer<typeof requestRefSchema>;

const inlineMaxBytesSchema = z.int().min(0).max(2_000_000);

export const submitJobInputSchema = z.strictObject({
  endpointId: pathSegmentSchema,
  /** The request, or (requestRef) where the activity reads it. */
  request: z.unknown().optional(),
  requestRef: requestRefSchema.optional(),
  inlineMaxBytes: inlineMaxBytesSchema.optional(),
  /** Submit under this ttl instead of the request's (contracts/submit-lease.ts), maybe only with a webhook. */
  lease: z.strictObject({ ttlMs: ttlSchema, onlyWithWebhook: z.boolean() }).optional(),
  /** Fields this endpoint of a route sets in the job's input (contracts/route.ts requestFor). */
  inputOverrides: z.record(z.string(), z.unknown()).optional(),
  /** The job moved here from another endpoint of its route, and why (counted once it is accepted). */
  hop: z.enum(['starved', 'capacity-failure']).optional(),
  /** Its priority and fairness key at the endpoint's gate (contracts/endpoint-gate.ts). */
  scheduling: schedulingSchema.optional(),
});

export const runJobSyncInputSchema = submitJobInputSchema.extend({ wait: waitSchema.optional() });

const jobRefFields = { endpointId: pathSegmentSchema, jobId: pathSegmentSchema };

export const waitForJobChangeInputSchema = z.strictObject({
  ...jobRefFields,
  /** The status the workflow last recorded. */
  knownStatus: jobStatusValueSchema,
  /**
   * 'change': return as soon as /status says anything but knownStatus. 'end': return only once the
   * job has finished (or is gone, or returnBy came); a start seen meanwhile stays in the wait's
   * details, where the live snapshot reads it, and costs the workflow no history event.
   */
  returnOn: z.enum(['change', 'end']).default('change'),
  /** Epoch ms: return by then even if nothing changed (the ttl deadline, less a margin). */
  returnBy: z.number().int(),
  polling: pollingSchema,
  inlineMaxBytes: inlineMaxBytesSchema.optional(),
});

export const fetchJobStatusInputSchema = z.strictObject({
  ...jobRefFields,
  /** Sets the job's ttl (counted from submission) through /status?ttl=. */
  ttl: ttlSchema.optional(),
  inlineMaxBytes: inlineMaxBytesSchema.optional(),
});

export const jobRefInputSchema = z.strictObject(jobRefFields);

export const streamJobInputSchema = z.strictObject({
  ...jobRefFields,
  /** Resolved by the workflow: a signal sink always names its target here. */
  sink: streamSinkSchema,
  /** Index of the first chunk this call delivers (chunks of earlier attempts already went out). */
  firstIndex: z.int().nonnegative(),
  polling: pollingSchema,
});

/** What the workflow learns from one look at the job; small by construction. */
export interface JobObservation {
  jobId: string;
  status: z.infer<typeof jobStatusValueSchema>;
  /** Epoch ms (the worker's clock) when this status was read. */
  observedAt: number;
  delayTime?: number;
  executionTime?: number;
  /** FAILED: the service's error, shortened. */
  error?: string;
  /** COMPLETED: the output when small enough... */
  output?: unknown;
  /** ...or where the result store keeps it. */
  outputRef?: ResultRef;
  /** IN_PROGRESS: the handler's latest progress update, when small enough. */
  progress?: unknown;
  /** A final status with an executionTime, when prices are configured: this run's estimated cost. */
  cost?: CostEstimate;
}

/** What a submit returns: the job as first seen, whether its request named a webhook, and its lease. */
export interface SubmitResult extends JobObservation {
  webhookArmed: boolean;
  /** The ttl the request carried when it went out under a lease (contracts/submit-lease.ts). */
  leaseTtlMs?: number;
  /** The lease was already extended to the caller's ttl by the submit itself. */
  extended?: true;
}

export interface WaitResult extends JobObservation {
  /** `changed`: the status differs from knownStatus; `deadline`: returnBy came first. */
  reason: 'changed' | 'deadline';
  polls: number;
}

export interface StreamResult {
  /** Chunks this call delivered, and the batches they came in. */
  chunks: number;
  batches: number;
  /** The status that ended the stream. */
  finalStatus?: z.infer<typeof jobStatusValueSchema>;
}

/** What the wait activity heartbeats: enough to resume after a worker restart, and the live progress. */
export const waitHeartbeatSchema = z.object({
  jobId: z.string(),
  knownStatus: jobStatusValueSchema,
  /** The status at the last look, when it is not knownStatus (a start, under returnOn 'end'). */
  status: jobStatusValueSchema.optional(),
  polls: z.int().nonnegative(),
  intervalMs: z.int().positive(),
  progress: z.unknown().optional(),
});

export const streamHeartbeatSchema = z.object({
  jobId: z.string(),
  firstIndex: z.int().nonnegative(),
  chunks: z.int().nonnegative(),
  batches: z.int().nonnegative(),
});

export type ResultRef = z.infer<typeof resultRefSchema>;
export type Polling = z.infer<typeof pollingSchema>;
export type StreamSink = z.infer<typeof streamSinkSchema>;
export type SubmitRequest = z.input<typeof submitRequestSchema>;
export type SubmitJobInput = z.infer<typeof submitJobInputSchema>;
export type RunJobSyncInput = z.infer<typeof runJobSyncInputSchema>;
export type WaitForJobChangeInput = z.input<typeof waitForJobChangeInputSchema>;
export type ParsedWaitForJobChangeInput = z.infer<typeof waitForJobChangeInputSchema>;
export type FetchJobStatusInput = z.infer<typeof fetchJobStatusInputSchema>;
export type JobRefInput = z.infer<typeof jobRefInputSchema>;
export type StreamJobInput = z.infer<typeof streamJobInputSchema>;
export type WaitHeartbeat = z.infer<typeof waitHeartbeatSchema>;
export type StreamHeartbeat = z.infer<typeof streamHeartbeatSchema>;
