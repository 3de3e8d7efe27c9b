/**
 * The facade of the endpoint lifecycle workflows. Every input is parsed here before anything is
 * started (a bad one throws ValidationError naming the field, and nothing reaches Temporal or the
 * service); the workflows parse it again for callers that start them some other way.
 *
 * `startX` returns the workflow handle; `x` waits for the result.
 */
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { jobRequestBody } from '../api/jobs';
import type { Endpoint } from '../api/schemas/endpoint';
import {
  type EphemeralEndpointInput,
  ephemeralEndpointInputSchema,
  firstIssue,
  type ProvisionEndpointInput,
  provisionEndpointInputSchema,
  type TeardownEndpointInput,
  teardownEndpointInputSchema,
  type UpdateEndpointInput,
  updateEndpointInputSchema,
} from '../contracts/endpoint-input';
import type {
  EphemeralBatchFailure,
  EphemeralResult,
  LifecycleStatus,
  ProvisionResult,
  TeardownResult,
} from '../contracts/endpoint-results';
import { EPHEMERAL_FAILURE } from '../contracts/failures';
import { endpointLifecycleQuery } from '../workflows/endpoint/endpoint-definitions';
import type {
  ephemeralEndpointWorkflow,
  provisionEndpointWorkflow,
  teardownEndpointWorkflow,
  updateEndpointWorkflow,
} from '../workflows/endpoint/endpoint-lifecycle';
import { describeEndpointStep } from './workflow-descriptions';
import { waitForResult } from './workflow-result';
import type { WorkflowTarget } from './workflow-target';

export type { EphemeralBatchFailure } from '../contracts/endpoint-results';
export { EPHEMERAL_FAILURE } from '../contracts/failures';

/** The worker's default task queue (TEMPORAL_TASK_QUEUE). */
export const DEFAULT_TASK_QUEUE = 'durable-serverless';

export const lifecycleStartOptionsSchema = z.strictObject({
  taskQueue: z
    .string({ error: 'must be a string' })
    .min(1, { error: 'must not be empty' })
    .default(DEFAULT_TASK_QUEUE),
  workflowId: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).optional(),
});

export type LifecycleStartOptions = z.input<typeof lifecycleStartOptionsSchema>;

function parse<S extends z.ZodType>(schema: S, value: unknown, root = ''): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { field, rule } = firstIssue(result.error, root);
  throw new ValidationError(field, rule);
}

export type ProvisionEndpointHandle = WorkflowHandle<typeof provisionEndpointWorkflow>;
export type UpdateEndpointHandle = WorkflowHandle<typeof updateEndpointWorkflow>;
export type TeardownEndpointHandle = WorkflowHandle<typeof teardownEndpointWorkflow>;
export type EphemeralEndpointHandle = WorkflowHandle<typeof ephemeralEndpointWorkflow>;

/**
 * Starts provisioning. Without a workflowId the id follows the name (`endpoint-provision:<name>`),
 * so provisioning one name twice is one workflow; without a name either, the id is random and the
 * endpoint is named after it. A running workflow of the same id is joined, not duplicated.
 */
export async function startProvisionEndpoint(
  client: Client,
  input: ProvisionEndpointInput,
  options: LifecycleStartOptions = {},
): Promise<ProvisionEndpointHandle> {
  const request = parse(provisionEndpointInputSchema, input);
  const { taskQueue, workflowId } = parse(lifecycleStartOptionsSchema, options, 'options');
  return client.workflow.start<typeof provisionEndpointWorkflow>('provisionEndpointWorkflow', {
    taskQueue,
    workflowId: workflowId ?? `endpoint-provision:${request.name ?? randomUUID()}`,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [request],
    ...describeEndpointStep({ step: 'provision', input: request }),
  });
}

export async function provisionEndpoint(
  client: Client,
  input: ProvisionEndpointInput,
  options?: LifecycleStartOptions,
): Promise<ProvisionResult> {
  return waitForResult(await startProvisionEndpoint(client, input, options));
}

/**
 * Starts an update: the workflow reads the endpoint and sends id, name, templateId and gpuIds with
 * the changes, so `changes` holds only what changes.
 */
export async function startUpdateEndpoint(
  client: Client,
  input: UpdateEndpointInput,
  options: LifecycleStartOptions = {},
): Promise<UpdateEndpointHandle> {
  const request = parse(updateEndpointInputSchema, input);
  const { taskQueue, workflowId } = parse(lifecycleStartOptionsSchema, options, 'options');
  return client.workflow.start<typeof updateEndpointWorkflow>('updateEndpointWorkflow', {
    taskQueue,
    workflowId: workflowId ?? `endpoint-update:${request.endpointId}:${randomUUID()}`,
    args: [request],
    ...describeEndpointStep({ step: 'update', input: request }),
  });
}

export async function updateEndpoint(
  client: Client,
  input: UpdateEndpointInput,
  options?: LifecycleStartOptions,
): Promise<Endpoint> {
  return waitForResult(await startUpdateEndpoint(client, input, options));
}

/**
 * Starts a teardown. The default id is the endpoint's (`endpoint-teardown:<id>`), and a running
 * teardown of it is joined, so two callers never tear one endpoint down twice at once.
 */
export async function startTeardownEndpoint(
  client: Client,
  input: TeardownEndpointInput,
  options: LifecycleStartOptions = {},
): Promise<TeardownEndpointHandle> {
  const request = parse(teardownEndpointInputSchema, input);
  const { taskQueue, workflowId } = parse(lifecycleStartOptionsSchema, options, 'options');
  const target = request.endpointId ?? `name:${request.name}`;
  return client.workflow.start<typeof teardownEndpointWorkflow>('teardownEndpointWorkflow', {
    taskQueue,
    workflowId: workflowId ?? `endpoint-teardown:${target}`,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [request],
    ...describeEndpointStep({ step: 'teardown', input: request }),
  });
}

export async function teardownEndpoint(
  client: Client,
  input: TeardownEndpointInput,
  options?: LifecycleStartOptions,
): Promise<TeardownResult> {
  return waitForResult(await startTeardownEndpoint(client, input, options));
}

/**
 * A Temporal payload holds 2 MB: the ephemeral input, and the batch input it passes on, must fit.
 * The bound of client/batches.ts (MAX_BATCH_INPUT_BYTES), which this module cannot import: batches
 * imports this one.
 */
export const MAX_EPHEMERAL_INPUT_BYTES = 1_900_000;

/** What the batch would refuse once started, refused here: an inline item's request, the payload bound. */
function checkInlineItems(input: EphemeralEndpointInput): void {
  const inline = (input.batch?.items as { inline?: Parameters<typeof jobRequestBody>[0][] } | undefined)
    ?.inline;
  if (!Array.isArray(inline)) return;
  inline.forEach((request, k) => {
    try {
      jobRequestBody(request, 'run');
    } catch (error) {
      if (error instanceof ValidationError)
        throw new ValidationError(`batch.items.inline.${k}.${error.field}`.replace(/\.$/, ''), error.rule);
      throw error;
    }
  });
  const bytes = Buffer.byteLength(JSON.stringify(input));
  if (bytes > MAX_EPHEMERAL_INPUT_BYTES) {
    throw new ValidationError(
      'batch.items.inline',
      `the input is ${bytes} bytes; a Temporal payload holds at most ${MAX_EPHEMERAL_INPUT_BYTES}: ` +
        'write the items to a manifest (writeBatchManifest) and pass { manifest: { key } }',
    );
  }
}

/**
 * Starts an ephemeral endpoint: provisioned, used by one batch (`batch`, or `jobs` that map onto
 * one) or by child job workflows, torn down whatever happens. Cancel it with `handle.cancel()`:
 * the batch or the jobs are cancelled, then the endpoint is deleted.
 */
export async function startEphemeralEndpoint(
  client: Client,
  input: EphemeralEndpointInput,
  options: LifecycleStartOptions = {},
): Promise<EphemeralEndpointHandle> {
  // First: an item's own error names the item, where the schema's union names only `batch.items`.
  checkInlineItems(input);
  const request = parse(ephemeralEndpointInputSchema, input);
  const { taskQueue, workflowId } = parse(lifecycleStartOptionsSchema, options, 'options');
  return client.workflow.start<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
    taskQueue,
    workflowId: workflowId ?? `endpoint-ephemeral:${randomUUID()}`,
    args: [request],
    ...describeEndpointStep({ step: 'ephemeral', input: request }),
  });
}

export async function runOnEphemeralEndpoint(
  client: Client,
  input: EphemeralEndpointInput,
  options?: LifecycleStartOptions,
): Promise<EphemeralResult> {
  return waitForResult(await startEphemeralEndpoint(client, input, options));
}

/**
 * What an ephemeral workflow whose batch failed with its summary (EphemeralBatchFailed) left: the
 * batch's summary (its results file included) and the teardown; undefined for any other error.
 */
export function ephemeralFailureOf(error: unknown): EphemeralBatchFailure | undefined {
  const cause = error instanceof WorkflowFailedError ? error.cause : error;
  if (!(cause instanceof ApplicationFailure) || cause.type !== EPHEMERAL_FAILURE.batchFailed)
    return undefined;
  return cause.details?.[0] as EphemeralBatchFailure | undefined;
}

/** The phase of any endpoint lifecycle workflow, with the phases it went through. */
export async function getLifecyclePhase(
  client: Client,
  { workflowId }: WorkflowTarget,
): Promise<LifecycleStatus> {
  const id = parse(lifecycleStartOptionsSchema.shape.workflowId.unwrap(), workflowId, 'workflowId');
  return client.workflow.getHandle(id).query(endpointLifecycleQuery);
}
