import { z } from 'zod';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// "MB" read as 10^6 bytes: the stricter of the two readings, so a payload this
// client lets through is never refused by the service for its size.
const MB = 1_000_000;

export const JOB_LIMITS = {
  runMaxBytes: 10 * MB,
  runSyncMaxBytes: 20 * MB,
  streamChunkMaxBytes: 1 * MB,
  waitMinMs: 1000,
  waitMaxMs: 300_000,
  waitDefaultMs: 90_000,
  executionTimeoutMinMs: 5 * SECOND,
  executionTimeoutMaxMs: 7 * DAY,
  executionTimeoutDefaultMs: 10 * MINUTE,
  ttlMinMs: 10 * SECOND,
  ttlMaxMs: 7 * DAY,
  ttlDefaultMs: DAY,
  resultRetentionMs: { run: 30 * MINUTE, runSync: 1 * MINUTE, runSyncMaxWithWait: 5 * MINUTE },
  webhookRetries: 2,
  webhookRetryDelayMs: 10 * SECOND,
} as const;

function intBetween(min: number, max: number, unit = 'ms') {
  const rule = `must be an integer between ${min} and ${max} ${unit}`;
  return z.number({ error: rule }).int({ error: rule }).min(min, { error: rule }).max(max, { error: rule });
}

export const executionTimeoutSchema = intBetween(
  JOB_LIMITS.executionTimeoutMinMs,
  JOB_LIMITS.executionTimeoutMaxMs,
);
export const ttlSchema = intBetween(JOB_LIMITS.ttlMinMs, JOB_LIMITS.ttlMaxMs);
export const waitSchema = intBetween(JOB_LIMITS.waitMinMs, JOB_LIMITS.waitMaxMs);

// The defaults describe what the service applies when a field is left out; the
// client sends only what the caller set, because an explicit executionTimeout
// overrides the endpoint's own setting.
export const jobPolicySchema = z.strictObject({
  executionTimeout: executionTimeoutSchema.default(JOB_LIMITS.executionTimeoutDefaultMs),
  lowPriority: z.boolean({ error: 'must be a boolean' }).default(false),
  ttl: ttlSchema.default(JOB_LIMITS.ttlDefaultMs),
});

export const s3ConfigSchema = z.strictObject({
  accessId: z.string({ error: 'must be a string' }),
  accessSecret: z.string({ error: 'must be a string' }),
  bucketName: z.string({ error: 'must be a string' }),
  endpointUrl: z.string({ error: 'must be a string' }),
});

export const jobRequestSchema = z.strictObject({
  input: z.record(z.string(), z.unknown(), { error: 'must be a JSON object' }),
  webhook: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  policy: jobPolicySchema.optional(),
  s3Config: s3ConfigSchema.optional(),
});

export const jobStatusValueSchema = z.enum([
  'IN_QUEUE',
  'IN_PROGRESS',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
]);

export const terminalStatusSchema = jobStatusValueSchema.extract([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
]);

/** Typed wide so that `terminalStatuses.includes(status)` accepts any status. */
export const terminalStatuses: readonly JobStatusValue[] = terminalStatusSchema.options;

export function isTerminalStatus(status: JobStatusValue): status is TerminalStatus {
  return terminalStatusSchema.safeParse(status).success;
}

const duration = z.number().int().nonnegative();

// Responses: what the spec states is checked; keys it does not mention are never a reason to fail a call
// that may already have created a job.
export const jobSubmittedSchema = z.object({
  id: z.string().min(1),
  status: jobStatusValueSchema,
});

export const jobStatusSchema = z.looseObject({
  id: z.string().min(1),
  status: jobStatusValueSchema,
  output: z.unknown().optional(),
  delayTime: duration.optional(),
  executionTime: duration.optional(),
  // Not shown by the spec; a string when present, anything else is kept as its JSON text.
  error: z
    .unknown()
    .transform((value) =>
      value == null ? undefined : typeof value === 'string' ? value : JSON.stringify(value),
    )
    .optional(),
});

export const streamMetricsSchema = z.looseObject({
  avg_gen_throughput: z.number().optional(),
  avg_prompt_throughput: z.number().optional(),
  cpu_kv_cache_usage: z.number().optional(),
  gpu_kv_cache_usage: z.number().optional(),
  input_tokens: z.number().int().optional(),
  output_tokens: z.number().int().optional(),
  pending: z.number().int().optional(),
  running: z.number().int().optional(),
  stream_index: z.number().int().optional(),
  swapped: z.number().int().optional(),
  scenario: z.string().optional(),
});

// output is handler-defined: an object for the spec's text handler, a bare string on some hosted handlers.
export const streamChunkSchema = z.looseObject({
  output: z.unknown(),
  metrics: streamMetricsSchema.optional(),
});

/** The spec's bare array, or the `{ status, stream }` object the hosted service is seen to send. */
export const streamResponseSchema = z
  .union([
    z.array(streamChunkSchema),
    z
      .looseObject({ status: jobStatusValueSchema.optional(), stream: z.array(streamChunkSchema).optional() })
      .refine((body) => body.status !== undefined || body.stream !== undefined, {
        error: 'expected a status or a stream array',
      }),
  ])
  .transform((body): { status?: JobStatusValue; chunks: StreamChunk[] } =>
    Array.isArray(body)
      ? { chunks: body }
      : body.status === undefined
        ? { chunks: body.stream ?? [] }
        : { status: body.status, chunks: body.stream ?? [] },
  );

export const purgeResponseSchema = z.object({
  removed: z.number().int().nonnegative(),
  status: z.string(),
});

const counter = z.number().int().nonnegative();

export const healthResponseSchema = z.looseObject({
  jobs: z.looseObject({
    completed: counter,
    failed: counter,
    inProgress: counter,
    inQueue: counter,
    retried: counter,
  }),
  // Hosts report more worker counters (initializing, throttled, ...) than the spec names.
  workers: z.looseObject({ idle: counter, running: counter }),
});

export type JobPolicy = z.infer<typeof jobPolicySchema>;
export type JobPolicyInput = z.input<typeof jobPolicySchema>;
export type S3Config = z.infer<typeof s3ConfigSchema>;
export type JobRequest = z.infer<typeof jobRequestSchema>;
export type JobRequestInput = z.input<typeof jobRequestSchema>;
export type JobStatusValue = z.infer<typeof jobStatusValueSchema>;
export type TerminalStatus = z.infer<typeof terminalStatusSchema>;
export type JobSubmitted = z.infer<typeof jobSubmittedSchema>;
export type JobStatus = z.infer<typeof jobStatusSchema>;
export type StreamMetrics = z.infer<typeof streamMetricsSchema>;
export type StreamChunk = z.infer<typeof streamChunkSchema>;
export type StreamResponse = z.infer<typeof streamResponseSchema>;
export type PurgeResponse = z.infer<typeof purgeResponseSchema>;
export type HealthResponse = z.infer<typeof healthResponseSchema>;
