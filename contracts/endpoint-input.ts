/**
 * Inputs of the endpoint lifecycle workflows. The client facade parses them before it starts
 * anything and the workflows parse them again (a workflow can be started by anyone, e.g. the CLI
 * or `temporal workflow start`). Field rules come from api/ so the two never disagree.
 *
 * Only zod, api/schemas, input-rules and the job and batch workflows' input modules (all pure) are
 * imported: this module is bundled into workflow code.
 */
import { z } from 'zod';
import {
  gpuIdSchema,
  type RestCreateEndpointInput,
  type SaveEndpointInput,
  saveEndpointInputSchema,
} from '../api/schemas/endpoint';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { type BatchInput, batchItemOptionsSchema, parseBatchInput } from './batch-input';
import { positiveDurationSchema } from './input-rules';
import { parseJobWorkflowInput } from './job-input';
import { shortTag } from './short-tag';

export { firstIssue } from './input-rules';

// The refined save schema cannot be picked from (zod forbids pick/omit on refined objects), its shape can.
const save = saveEndpointInputSchema.shape;

const nonEmpty = z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' });

/** The caller's endpoint fields as GraphQL knows them; every one optional. */
const endpointFields = {
  // Unwrapped: the save schema's default ('QB') must not turn an LB endpoint into QB on an update.
  type: save.type.unwrap().optional(),
  idleTimeout: save.idleTimeout,
  locations: save.locations,
  flashBootType: save.flashBootType,
  scalerType: save.scalerType,
  scalerValue: save.scalerValue,
  workersMin: save.workersMin,
  workersMax: save.workersMax,
  networkVolumeId: save.networkVolumeId,
};

function workersOrdered(value: { workersMin?: number | undefined; workersMax?: number | undefined }) {
  return (
    value.workersMin === undefined || value.workersMax === undefined || value.workersMin <= value.workersMax
  );
}
const workersOrder = { error: 'must not exceed workersMax', path: ['workersMin'] };

export const provisionEndpointInputSchema = z
  .strictObject({
    /** Defaults to a name derived from the workflow id (see endpointNameFor). */
    name: save.name.optional(),
    templateId: save.templateId,
    /** One tier: created through GraphQL saveEndpoint. */
    gpuIds: gpuIdSchema.optional(),
    /**
     * Tiers in priority order: created through REST POST /endpoints, which takes the first one
     * available. Only the spec's tier identifiers are accepted, because the endpoint is read back
     * through GraphQL, whose gpuIds is one of them.
     */
    gpuTypeIds: z
      .array(gpuIdSchema, { error: 'must be an array of GPU tiers' })
      .min(1, { error: 'must not be empty' })
      .optional(),
    ...endpointFields,
  })
  .refine(workersOrdered, workersOrder)
  .refine((value) => (value.gpuIds === undefined) !== (value.gpuTypeIds === undefined), {
    error: 'give exactly one of gpuIds (GraphQL) or gpuTypeIds (REST, in priority order)',
    path: ['gpuIds'],
  });

export const endpointChangesSchema = z
  .strictObject({
    name: save.name.optional(),
    templateId: save.templateId.optional(),
    gpuIds: gpuIdSchema.optional(),
    ...endpointFields,
  })
  .refine(workersOrdered, workersOrder)
  .refine((value) => Object.values(value).some((field) => field !== undefined), {
    error: 'must change at least one field',
  });

export const updateEndpointInputSchema = z.strictObject({
  endpointId: nonEmpty,
  changes: endpointChangesSchema,
});

const jobIdsSchema = z.array(pathSegmentSchema, { error: 'must be an array of job ids' });

/**
 * What teardown does with the endpoint's jobs once it is scaled to zero (queued jobs can no longer
 * start then). The service cannot list jobs, so in-progress jobs are cancelled by id.
 */
export const teardownJobHandlingSchema = z.discriminatedUnion(
  'mode',
  [
    // Queued jobs are removed; running ones may finish until drainTimeout, then deletion stops them.
    z.strictObject({ mode: z.literal('purge') }),
    // Queued jobs are removed and the listed (in-progress) jobs cancelled at once.
    z.strictObject({ mode: z.literal('cancel'), jobIds: jobIdsSchema }),
    // Running jobs may finish within `timeout`; the listed ones still running then are cancelled.
    z.strictObject({
      mode: z.literal('wait'),
      timeout: positiveDurationSchema,
      jobIds: jobIdsSchema.default([]),
    }),
  ],
  { error: "mode must be 'purge', 'cancel' or 'wait'" },
);

export const teardownOptionsSchema = z.strictObject({
  jobs: teardownJobHandlingSchema.default({ mode: 'purge' }),
  /** Bound on watching /health until no worker runs; deletion follows either way. */
  drainTimeout: positiveDurationSchema.default(10 * 60_000),
  /** First interval between /health checks; it doubles up to 30 s. */
  pollInterval: positiveDurationSchema.default(2_000),
  /** Delete the endpoint's network volume (REST) once the endpoint is gone. */
  deleteNetworkVolume: z.boolean({ error: 'must be a boolean' }).default(false),
});

export const teardownEndpointInputSchema = z
  .strictObject({
    endpointId: nonEmpty.optional(),
    /** Looked up when no id is given; more than one endpoint of that name is refused. */
    name: nonEmpty.optional(),
    /** The volume to delete when the endpoint is already gone (otherwise read from the endpoint). */
    networkVolumeId: pathSegmentSchema.optional(),
    ...teardownOptionsSchema.shape,
  })
  .refine((value) => (value.endpointId === undefined) !== (value.name === undefined), {
    error: 'give exactly one of endpointId or name',
    path: ['endpointId'],
  });

/** The job workflow the ephemeral workflow runs its jobs with unless told otherwise. */
export const DEFAULT_JOB_WORKFLOW_TYPE = 'serverlessJob';

export const ephemeralJobSchema = z.strictObject({
  /** Defaults to `<parent workflow id>/job-<index>`. */
  workflowId: nonEmpty.optional(),
  /** The job workflow's input without endpointId, which the ephemeral workflow fills in. */
  input: z
    .record(z.string(), z.unknown(), { error: 'must be an object' })
    .refine((input) => !('endpointId' in input), {
      error: 'must not set endpointId: the ephemeral workflow fills in its endpoint',
    })
    .refine((input) => !('route' in input), {
      error: 'must not set route: the job runs on the endpoint the ephemeral workflow provisions',
    }),
});

/**
 * The batch an ephemeral endpoint runs: the batch workflow's input without endpointId (the
 * ephemeral workflow fills in its endpoint), the same schema and defaults.
 */
/** Stands in for the endpoint id while an input is checked before the endpoint exists. */
const PLACEHOLDER_ENDPOINT_ID = 'ephemeral';

/** A batch input without endpointId, as a caller writes it. */
export type EphemeralBatch = Omit<BatchInput, 'endpointId'>;

/**
 * A batch input without endpointId, checked now by the batch's own rules (parseBatchInput) and
 * kept as the caller gave it: the batch workflow parses its input itself, and a parsed input (its
 * durations in milliseconds under other names) is not an input.
 */
export const ephemeralBatchSchema = z
  .custom<EphemeralBatch>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    error: 'must be a batch input (an object)',
  })
  .superRefine((value, ctx) => {
    if ('endpointId' in value) {
      // The ephemeral workflow names the endpoint it provisions.
      ctx.addIssue({ code: 'custom', message: 'unknown field(s) endpointId' });
      return;
    }
    if ('route' in value) {
      ctx.addIssue({
        code: 'custom',
        message: 'does not apply: the batch runs on the endpoint this workflow provisions',
        path: ['route'],
      });
      return;
    }
    const parsed = parseBatchInput({ ...value, endpointId: PLACEHOLDER_ENDPOINT_ID });
    if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.rule, path: parsed.field.split('.') });
  });

export const ephemeralEndpointInputSchema = z
  .strictObject({
    endpoint: provisionEndpointInputSchema,
    /** Job workflow inputs, one child workflow each (or one batch: see jobsAsBatch). Exclusive with batch. */
    jobs: z
      .array(ephemeralJobSchema, { error: 'must be an array' })
      .min(1, { error: 'must not be empty' })
      .optional(),
    /** The items run as one batch workflow (the engine: window, tolerance, results file). Exclusive with jobs. */
    batch: ephemeralBatchSchema.optional(),
    /** The child workflow type each job runs as; another type receives the same `{ ...input, endpointId }`. */
    jobWorkflowType: nonEmpty.default(DEFAULT_JOB_WORKFLOW_TYPE),
    /** Task queue of the job workflows or the batch workflow; defaults to the ephemeral workflow's own. */
    jobTaskQueue: nonEmpty.optional(),
    /** Child job workflows: on the first failed job, cancel the others (true) or let them finish (false). */
    failFast: z.boolean({ error: 'must be a boolean' }).default(true),
    teardown: teardownOptionsSchema.prefault({}),
  })
  .refine((value) => (value.jobs === undefined) !== (value.batch === undefined), {
    error: 'give exactly one of jobs (job workflow inputs) or batch (a batch input without endpointId)',
    path: ['jobs'],
  })
  .superRefine((value, ctx) => {
    // Inputs of the library's job workflow are checked now, so a bad one never costs an endpoint.
    if (value.jobWorkflowType !== DEFAULT_JOB_WORKFLOW_TYPE) return;
    value.jobs?.forEach((job, index) => {
      const parsed = parseJobWorkflowInput({ ...job.input, endpointId: PLACEHOLDER_ENDPOINT_ID });
      if (parsed.ok) return;
      const inner = parsed.field === 'input' ? [] : parsed.field.split('.');
      ctx.addIssue({ code: 'custom', message: parsed.rule, path: ['jobs', index, 'input', ...inner] });
    });
  });

/** JSON with keys in order, so two option objects compare equal however their keys were written. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonical(field)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The `jobs` form as one batch, when the batch engine runs it the way the job workflows would: the
 * library's job workflow type, no job naming its own workflow id, async mode, and every job with
 * the same options, all of them per-item options the batch knows. A failed job fails the batch
 * (tolerance 0), as it failed the ephemeral workflow. Otherwise undefined: the jobs run as child
 * job workflows. Pure (it runs in workflow code, on replay too).
 */
export function jobsAsBatch(request: EphemeralEndpointRequest): EphemeralBatch | undefined {
  const { jobs } = request;
  if (jobs === undefined || request.jobWorkflowType !== DEFAULT_JOB_WORKFLOW_TYPE) return undefined;
  if (jobs.some((job) => job.workflowId !== undefined)) return undefined;
  const options = jobs.map(({ input }) => {
    const { request: _request, mode, ...rest } = input;
    return mode === undefined || mode === 'async' ? rest : undefined;
  });
  const first = options[0];
  if (first === undefined || options.some((option) => option === undefined)) return undefined;
  const shared = canonical(first);
  if (options.some((option) => canonical(option) !== shared)) return undefined;
  if (!batchItemOptionsSchema.safeParse(first).success) return undefined;
  const batch = {
    items: { inline: jobs.map((job) => job.input.request) },
    job: first,
    failureTolerance: { count: 0 },
  } as Omit<BatchInput, 'endpointId'>;
  // Checked as the batch will check it, and handed on as written (the batch parses it itself).
  return parseBatchInput({ ...batch, endpointId: PLACEHOLDER_ENDPOINT_ID }).ok ? batch : undefined;
}

export type ProvisionEndpointInput = z.input<typeof provisionEndpointInputSchema>;
export type ProvisionEndpointRequest = z.output<typeof provisionEndpointInputSchema>;
export type EndpointChanges = z.output<typeof endpointChangesSchema>;
export type UpdateEndpointInput = z.input<typeof updateEndpointInputSchema>;
export type UpdateEndpointRequest = z.output<typeof updateEndpointInputSchema>;
export type TeardownJobHandling = z.output<typeof teardownJobHandlingSchema>;
export type TeardownOptionsInput = z.input<typeof teardownOptionsSchema>;
export type TeardownOptions = z.output<typeof teardownOptionsSchema>;
export type TeardownEndpointInput = z.input<typeof teardownEndpointInputSchema>;
export type TeardownEndpointRequest = z.output<typeof teardownEndpointInputSchema>;
export type EphemeralJob = z.output<typeof ephemeralJobSchema>;
export type EphemeralEndpointInput = z.input<typeof ephemeralEndpointInputSchema>;
export type EphemeralEndpointRequest = z.output<typeof ephemeralEndpointInputSchema>;

const NAME_PREFIX = 'ds-';
// The spec sets no bound on names; the emulator allows 191 characters, and shorter is friendlier.
const NAME_MAX = 120;

/**
 * The endpoint name a workflow owns when the caller gives none: a pure function of the workflow id,
 * so a retried activity, a replay and a new run with the same id all look for the same endpoint.
 */
export function endpointNameFor(workflowId: string): string {
  const whole = `${NAME_PREFIX}${workflowId}`;
  if (whole.length <= NAME_MAX) return whole;
  return `${NAME_PREFIX}${workflowId.slice(0, NAME_MAX - NAME_PREFIX.length - 9)}-${shortTag(workflowId)}`;
}

/** How the createEndpoint activity creates an endpoint. */
export type CreateEndpointRequest =
  /** saveEndpoint without id. */
  | { via: 'graphql'; input: Omit<SaveEndpointInput, 'id'> }
  /** POST /endpoints; gpuTypeIds in priority order. */
  | { via: 'rest'; body: RestCreateEndpointInput };
