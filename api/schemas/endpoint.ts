import { z } from 'zod';
import { pathSegmentSchema } from './path-segment';

export const gpuIdSchema = z.enum(
  ['AMPERE_16', 'AMPERE_24', 'ADA_24', 'AMPERE_48', 'ADA_48_PRO', 'AMPERE_80', 'ADA_80_PRO'],
  { error: 'must be one of AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO' },
);
export const locationSchema = z.enum(['CZ', 'FR', 'GB', 'NO', 'RO', 'US'], {
  error: 'must be one of CZ, FR, GB, NO, RO, US',
});
export const endpointTypeSchema = z.enum(['QB', 'LB'], { error: "must be 'QB' or 'LB'" });
export const scalerTypeSchema = z.enum(['QUEUE_DELAY', 'REQUEST_COUNT'], {
  error: "must be 'QUEUE_DELAY' or 'REQUEST_COUNT'",
});
// The only value the spec shows; it is written bare in GraphQL, so nothing else may pass.
export const flashBootTypeSchema = z.enum(['FLASHBOOT'], { error: "must be 'FLASHBOOT'" });

/** Empty means any region; otherwise one location, or several joined by commas. */
export const locationsSchema = z
  .string({ error: 'must be a string' })
  .refine(
    (value) => value === '' || value.split(',').every((part) => locationSchema.safeParse(part).success),
    {
      error: 'must be empty or comma-separated values of CZ, FR, GB, NO, RO, US',
    },
  );

// GraphQL Int is 32-bit signed.
const gqlCount = z
  .number({ error: 'must be an integer between 0 and 2147483647' })
  .int({ error: 'must be an integer between 0 and 2147483647' })
  .min(0, { error: 'must be an integer between 0 and 2147483647' })
  .max(2_147_483_647, { error: 'must be an integer between 0 and 2147483647' });

const nonEmpty = z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' });

export const saveEndpointInputSchema = z
  .strictObject({
    id: nonEmpty.optional(),
    name: nonEmpty,
    templateId: nonEmpty,
    gpuIds: gpuIdSchema,
    type: endpointTypeSchema.default('QB'),
    idleTimeout: gqlCount.optional(),
    locations: locationsSchema.nullable().optional(),
    flashBootType: flashBootTypeSchema.nullable().optional(),
    scalerType: scalerTypeSchema.optional(),
    scalerValue: gqlCount.optional(),
    workersMin: gqlCount.optional(),
    workersMax: gqlCount.optional(),
    networkVolumeId: nonEmpty.nullable().optional(),
  })
  .refine(
    (input) =>
      input.workersMin === undefined ||
      input.workersMax === undefined ||
      input.workersMin <= input.workersMax,
    { error: 'must not exceed workersMax', path: ['workersMin'] },
  );

export const podSchema = z.looseObject({
  // Values not shown by the spec.
  desiredStatus: z.string().nullish(),
});

// What the service returns for the selected fields. Optional fields may come back null.
export const endpointSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string(),
  templateId: z.string(),
  gpuIds: gpuIdSchema,
  type: endpointTypeSchema.nullish(),
  idleTimeout: z.number().int().nullish(),
  locations: locationsSchema.nullish(),
  // Values other than FLASHBOOT are not shown by the spec: accept them when reading.
  flashBootType: z.string().nullish(),
  scalerType: scalerTypeSchema.nullish(),
  scalerValue: z.number().int().nullish(),
  workersMin: z.number().int().nullish(),
  workersMax: z.number().int().nullish(),
  networkVolumeId: z.string().nullish(),
  pods: z.array(podSchema).nullish(),
});

export const serverlessDiscountSchema = z.looseObject({
  discountFactor: z.number().nullish(),
  type: z.string().nullish(),
  expirationDate: z.union([z.string(), z.number()]).nullish(),
});

export const accountSchema = z.looseObject({
  endpoints: z.array(endpointSchema),
  serverlessDiscount: serverlessDiscountSchema.nullable(),
});

export const restCreateEndpointSchema = z.strictObject({
  name: nonEmpty,
  templateId: nonEmpty,
  // In priority order: the service takes the first type that is available.
  gpuTypeIds: z
    .array(nonEmpty, { error: 'must be an array of strings' })
    .min(1, { error: 'must not be empty' })
    .optional(),
  workersMin: z.number().int().nonnegative().optional(),
  workersMax: z.number().int().nonnegative().optional(),
  idleTimeout: z.number().int().nonnegative().optional(),
});

// The response body is not shown by the spec: only an id is required, the rest is kept as sent.
export const restEndpointSchema = z.looseObject({ id: z.string().min(1) });

export const networkVolumeIdSchema = pathSegmentSchema;

export type GpuId = z.infer<typeof gpuIdSchema>;
export type Location = z.infer<typeof locationSchema>;
export type EndpointType = z.infer<typeof endpointTypeSchema>;
export type ScalerType = z.infer<typeof scalerTypeSchema>;
export type FlashBootType = z.infer<typeof flashBootTypeSchema>;
export type SaveEndpointInput = z.input<typeof saveEndpointInputSchema>;
export type Pod = z.infer<typeof podSchema>;
export type Endpoint = z.infer<typeof endpointSchema>;
export type ServerlessDiscount = z.infer<typeof serverlessDiscountSchema>;
export type Account = z.infer<typeof accountSchema>;
export type RestCreateEndpointInput = z.input<typeof restCreateEndpointSchema>;
export type RestEndpoint = z.infer<typeof restEndpointSchema>;
export type NetworkVolumeId = z.infer<typeof networkVolumeIdSchema>;
