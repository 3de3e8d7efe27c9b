import { z } from 'zod';
import { RESOURCE_ID_PATTERN } from './ids';
import { GPU_TIERS, LIMITS, LOCATIONS, MAX_WORKERS } from './limits';

// The emulator's own reading of SERVICE_SPEC.md. It deliberately shares nothing with api/: a mistake
// in the client's schemas must show up as a failing test, not be mirrored here.

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One-line message from a zod error: "policy.ttl: Too small: expected number to be >=10000". */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

// ---- job operations -------------------------------------------------------------------------------

export const policySchema = z.object({
  executionTimeout: z.int().min(LIMITS.executionTimeoutMinMs).max(LIMITS.executionTimeoutMaxMs).optional(),
  lowPriority: z.boolean().optional(),
  ttl: z.int().min(LIMITS.ttlMinMs).max(LIMITS.ttlMaxMs).optional(),
});

// Extra members (the SDK's objectPath) pass through to the "worker" untouched.
export const s3ConfigSchema = z.looseObject({
  accessId: z.string(),
  accessSecret: z.string(),
  bucketName: z.string(),
  endpointUrl: z.string(),
});

export const jobRequestSchema = z.object({
  // Kept by reference, never copied: the handler sees exactly what was sent.
  input: z.custom<Record<string, unknown>>(isPlainObject, 'input is required and must be a JSON object'),
  webhook: z.url({ protocol: /^https?$/ }).optional(),
  policy: policySchema.optional(),
  s3Config: s3ConfigSchema.optional(),
});
export type JobRequest = z.infer<typeof jobRequestSchema>;

const integerParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, `${name} must be an integer number of milliseconds`)
    .transform(Number)
    .pipe(z.int().min(min).max(max));

export const waitQuerySchema = z.object({
  wait: integerParam('wait', LIMITS.waitMinMs, LIMITS.waitMaxMs).optional(),
});

export const statusQuerySchema = z.object({
  ttl: integerParam('ttl', LIMITS.ttlMinMs, LIMITS.ttlMaxMs).optional(),
});

export const endpointParamsSchema = z.object({ endpointId: z.string().min(1).max(128) });
export const jobParamsSchema = endpointParamsSchema.extend({ jobId: z.string().min(1).max(256) });

// ---- endpoints ------------------------------------------------------------------------------------

export const gpuTierSchema = z.enum(GPU_TIERS);
export const endpointTypeSchema = z.enum(['QB', 'LB']);
export const scalerTypeSchema = z.enum(['QUEUE_DELAY', 'REQUEST_COUNT']);
/** FLASHBOOT is the spec's value; OFF is the emulator's choice for "no FlashBoot". */
export const flashBootTypeSchema = z.enum(['FLASHBOOT', 'OFF']);

/** Empty (any region) or a comma-separated list of the spec's regions. */
export const locationsSchema = z
  .string()
  .refine(
    (value) =>
      value.trim() === '' ||
      value.split(',').every((part) => (LOCATIONS as readonly string[]).includes(part.trim())),
    { message: `locations must be empty or a comma-separated list of ${LOCATIONS.join(', ')}` },
  );

export const resourceIdSchema = z
  .string()
  .regex(RESOURCE_ID_PATTERN, 'ids are 1 to 64 letters, digits, "-" or "_"');

const workerCount = z.int().min(0).max(MAX_WORKERS);

/** Every field an endpoint has, with the emulator's defaults (see README). */
const endpointFieldsShape = {
  name: z.string().min(1).max(191),
  templateId: z.string().min(1).max(191),
  gpuIds: z.string().min(1).default('AMPERE_16'),
  type: endpointTypeSchema.default('QB'),
  idleTimeout: z.int().min(0).max(86_400).default(5),
  locations: locationsSchema.nullable().default(null),
  flashBootType: flashBootTypeSchema.nullable().default(null),
  scalerType: scalerTypeSchema.default('QUEUE_DELAY'),
  scalerValue: z.int().min(1).max(10_000).default(4),
  workersMin: workerCount.default(0),
  workersMax: workerCount.default(3),
  networkVolumeId: z.string().min(1).nullable().default(null),
  /** The endpoint's own execution timeout, which a job's policy overrides. Not in GraphQL. */
  executionTimeoutMs: z
    .int()
    .min(LIMITS.executionTimeoutMinMs)
    .max(LIMITS.executionTimeoutMaxMs)
    .default(LIMITS.executionTimeoutDefaultMs),
};

const workersOrdered = (fields: { workersMin: number; workersMax: number }) =>
  fields.workersMin <= fields.workersMax;
const workersOrderMessage = { message: 'workersMin must not exceed workersMax', path: ['workersMin'] };

export const endpointFieldsSchema = z
  .object({ id: resourceIdSchema.optional(), ...endpointFieldsShape })
  .refine(workersOrdered, workersOrderMessage);
export type EndpointFieldsInput = z.input<typeof endpointFieldsSchema>;
export type EndpointFields = z.output<typeof endpointFieldsSchema> & { id: string };

/** The control handle and seed files name GPU tiers, as GraphQL does. */
export const controlEndpointSchema = z
  .object({
    id: resourceIdSchema.optional(),
    ...endpointFieldsShape,
    gpuIds: gpuTierSchema.default('AMPERE_16'),
  })
  .refine(workersOrdered, workersOrderMessage);

/** GraphQL saveEndpoint input after graphql-js has checked the types. */
export const saveEndpointInputSchema = z.object({
  id: z.string().min(1).nullish(),
  name: z.string().min(1).max(191),
  templateId: z.string().min(1).max(191),
  gpuIds: gpuTierSchema,
  type: endpointTypeSchema.nullish(),
  idleTimeout: z.int().min(0).max(86_400).nullish(),
  locations: locationsSchema.nullish(),
  flashBootType: flashBootTypeSchema.nullish(),
  scalerType: scalerTypeSchema.nullish(),
  scalerValue: z.int().min(1).max(10_000).nullish(),
  workersMin: workerCount.nullish(),
  workersMax: workerCount.nullish(),
  networkVolumeId: z.string().min(1).nullish(),
});

/** REST POST /v1/endpoints. Required: name, templateId, gpuTypeIds (the emulator's choice). */
export const restCreateEndpointSchema = z.object({
  name: z.string().min(1).max(191),
  templateId: z.string().min(1).max(191),
  gpuTypeIds: z.array(z.string().min(1)).min(1),
  workersMin: workerCount.optional(),
  workersMax: workerCount.optional(),
  idleTimeout: z.int().min(0).max(86_400).optional(),
  networkVolumeId: z.string().min(1).optional(),
  flashBootType: flashBootTypeSchema.optional(),
});

export const volumeParamsSchema = z.object({
  networkVolumeId: resourceIdSchema,
});

export const graphqlBodySchema = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});

export const graphqlQuerySchema = z.object({ api_key: z.string().min(1) });

// ---- accounts, seed file, options -----------------------------------------------------------------

export const serverlessDiscountSchema = z.object({
  discountFactor: z.number().nullable().default(null),
  type: z.string().nullable().default(null),
  expirationDate: z.string().nullable().default(null),
});
export type ServerlessDiscount = z.output<typeof serverlessDiscountSchema>;

export const accountOptionSchema = z.object({
  apiKey: z.string().min(1),
  id: z.string().min(1).optional(),
});

export const seedFileSchema = z.object({
  accounts: z
    .array(
      z.object({
        apiKey: z.string().min(1),
        id: z.string().min(1).optional(),
        serverlessDiscount: serverlessDiscountSchema.nullable().default(null),
        networkVolumes: z.array(z.union([resourceIdSchema, z.object({ id: resourceIdSchema })])).default([]),
        endpoints: z.array(controlEndpointSchema).default([]),
      }),
    )
    .default([]),
  gpuAvailability: z.record(z.string(), z.boolean()).default({}),
});
export type SeedFile = z.input<typeof seedFileSchema>;

export const emulatorOptionsSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.int().min(0).max(65_535).default(0),
  accounts: z.array(accountOptionSchema).optional(),
  timeScale: z.number().positive().max(1e9).default(1),
  seed: z
    .union([z.string().min(1), z.custom<SeedFile>(isPlainObject, 'seed must be an object or a path')])
    .optional(),
  requestsPerWorker: z.int().min(0).default(10),
  rateLimits: z.boolean().default(true),
  streamShape: z.enum(['array', 'object']).default('array'),
  logger: z.boolean().default(false),
  coldStartMs: z.number().min(0).default(5000),
  flashBootMs: z.number().min(0).default(500),
  gpuAvailability: z.record(z.string(), z.boolean()).default({}),
  webhookTimeoutMs: z.int().min(1).default(10_000),
  streamWaitMs: z.number().min(0).default(5000),
  tombstoneLimit: z.int().min(0).default(10_000),
  deliveryLogLimit: z.int().min(1).default(10_000),
  random: z.custom<() => number>((value) => typeof value === 'function').optional(),
});
export type EmulatorOptions = z.input<typeof emulatorOptionsSchema>;
export type ResolvedOptions = z.output<typeof emulatorOptionsSchema>;

// ---- control handle inputs ------------------------------------------------------------------------

export const FAULT_OPERATIONS = [
  'run',
  'runsync',
  'status',
  'stream',
  'cancel',
  'retry',
  'purge-queue',
  'health',
  'requests',
  'openai',
  'graphql',
  'rest-create-endpoint',
  'rest-delete-volume',
  '*',
] as const;
export type FaultOperation = (typeof FAULT_OPERATIONS)[number];

export const faultRuleSchema = z.object({
  operation: z.enum(FAULT_OPERATIONS),
  endpointId: z.string().min(1).optional(),
  kind: z.enum(['status', 'drop-before', 'drop-after', 'slow']),
  httpStatus: z.int().min(400).max(599).optional(),
  retryAfterSeconds: z.int().min(0).optional(),
  delayMs: z.number().min(0).optional(),
  probability: z.number().min(0).max(1).default(1),
  times: z.int().min(1).optional(),
});
export type FaultRuleInput = z.input<typeof faultRuleSchema>;
export type FaultRule = z.output<typeof faultRuleSchema>;

export const webhookFaultSchema = z.object({
  lose: z.number().min(0).max(1).default(0),
  duplicate: z.number().min(0).max(1).default(0),
  delayMs: z.number().min(0).default(0),
});
export type WebhookFaultInput = z.input<typeof webhookFaultSchema>;
export type WebhookFault = z.output<typeof webhookFaultSchema>;

/** control.starveEndpoint: `until` is a service time still to come. */
export const starveOptionsSchema = (now: number) =>
  z.object({
    until: z
      .number()
      .refine(Number.isFinite, 'until must be a finite service time in ms')
      .refine((until) => until > now, `until must be later than the emulator's now (${now})`)
      .optional(),
  });
