/**
 * Provision (find by name, else create, then bring the endpoint to the requested fields) and update
 * (read, merge the caller's changes, save). Deterministic workflow code only.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { Endpoint } from '../../api/schemas/endpoint';
import {
  createEndpointSummary,
  findEndpointsSummary,
  readEndpointSummary,
  updateEndpointSummary,
} from '../../contracts/activity-summaries';
import type {
  CreateEndpointRequest,
  EndpointChanges,
  ProvisionEndpointRequest,
} from '../../contracts/endpoint-input';
import type { ProvisionResult } from '../../contracts/endpoint-results';
import { ENDPOINT_FAILURE } from '../../contracts/failures';
import { act, checkWorkers, type Tracker, updateInput, withoutUndefined } from './endpoint-common';

/** Fields compared with an existing endpoint so it ends up as asked. */
const RECONCILED = [
  'type',
  'idleTimeout',
  'locations',
  'flashBootType',
  'scalerType',
  'scalerValue',
  'workersMin',
  'workersMax',
  'networkVolumeId',
] as const;

// The service may answer null for a field set empty; both mean "not set".
const same = (a: unknown, b: unknown) => (a === '' ? null : (a ?? null)) === (b === '' ? null : (b ?? null));

function differences(endpoint: Endpoint, request: ProvisionEndpointRequest): EndpointChanges {
  const changes: Record<string, unknown> = {};
  for (const field of RECONCILED) {
    const wanted = request[field];
    if (wanted !== undefined && !same(endpoint[field], wanted)) changes[field] = wanted;
  }
  if (request.gpuIds !== undefined && endpoint.gpuIds !== request.gpuIds) changes.gpuIds = request.gpuIds;
  return changes as EndpointChanges;
}

function createRequest(request: ProvisionEndpointRequest, name: string): CreateEndpointRequest {
  if (request.gpuTypeIds !== undefined) {
    return {
      via: 'rest',
      body: withoutUndefined({
        name,
        templateId: request.templateId,
        gpuTypeIds: request.gpuTypeIds,
        workersMin: request.workersMin,
        workersMax: request.workersMax,
        idleTimeout: request.idleTimeout,
      }) as Extract<CreateEndpointRequest, { via: 'rest' }>['body'],
    };
  }
  const { gpuTypeIds: _rest, name: _name, gpuIds, ...fields } = request;
  return {
    via: 'graphql',
    input: { ...withoutUndefined(fields), name, templateId: request.templateId, gpuIds: gpuIds! },
  };
}

/** What a provision has done so far; teardown after a failed or cancelled provision reads it. */
export interface ProvisionProgress {
  endpointId?: string;
  /** The create activity was scheduled: an endpoint of the name may exist that no answer told of. */
  createStarted: boolean;
}

/**
 * Finds the endpoint by name or creates it, then sends whatever fields it lacks (REST creation
 * carries only a few; an adopted endpoint may differ). saveEndpoint is not idempotent, so the
 * look-up comes first, and the create activity looks again on its own retries.
 */
export async function provision(
  request: ProvisionEndpointRequest,
  name: string,
  track: Tracker,
  progress: ProvisionProgress = { createStarted: false },
): Promise<ProvisionResult> {
  track.enter('provisioning');
  track.endpoint(undefined, name);
  const existing = await act.findEndpointsByName.executeWithOptions({ summary: findEndpointsSummary(name) }, [
    name,
  ]);
  if (existing.length > 1) {
    throw ApplicationFailure.create({
      type: ENDPOINT_FAILURE.duplicateName,
      message: `${existing.length} endpoints are named ${JSON.stringify(name)}: ${existing.map((e) => e.id).join(', ')}`,
      nonRetryable: true,
    });
  }
  let endpoint = existing[0];
  if (endpoint && endpoint.templateId !== request.templateId) {
    throw ApplicationFailure.create({
      type: ENDPOINT_FAILURE.nameConflict,
      message: `endpoint ${endpoint.id} is named ${JSON.stringify(name)} but uses template ${JSON.stringify(endpoint.templateId)}, not ${JSON.stringify(request.templateId)}`,
      nonRetryable: true,
    });
  }
  const created = endpoint === undefined;
  if (!endpoint) {
    progress.createStarted = true;
    endpoint = await act.createEndpoint.executeWithOptions(
      { summary: createEndpointSummary(name, request.templateId) },
      [createRequest(request, name)],
    );
  }
  progress.endpointId = endpoint.id;
  track.endpoint(endpoint.id, endpoint.name);

  // A GraphQL creation sent every field already; REST creation and adoption may lack some.
  const changes = created && request.gpuTypeIds === undefined ? {} : differences(endpoint, request);
  const reconciled = Object.keys(changes);
  if (reconciled.length > 0) {
    checkWorkers(endpoint, changes, '');
    endpoint = await act.updateEndpoint.executeWithOptions(
      { summary: updateEndpointSummary(endpoint.id, reconciled) },
      [updateInput(endpoint, changes)],
    );
  }
  return { endpointId: endpoint.id, name: endpoint.name, created, reconciled, endpoint };
}

/** Reads the endpoint, merges the caller's changes over it and saves it: the caller states only what changes. */
export async function update(
  endpointId: string,
  changes: EndpointChanges,
  track: Tracker,
): Promise<Endpoint> {
  track.enter('updating');
  track.endpoint(endpointId);
  const current = await act.readEndpoint.executeWithOptions({ summary: readEndpointSummary(endpointId) }, [
    endpointId,
  ]);
  if (!current) {
    throw ApplicationFailure.create({
      type: ENDPOINT_FAILURE.notFound,
      message: `endpoint ${endpointId} does not exist`,
      nonRetryable: true,
    });
  }
  track.endpoint(endpointId, current.name);
  checkWorkers(current, changes, 'changes');
  return act.updateEndpoint.executeWithOptions(
    { summary: updateEndpointSummary(endpointId, Object.keys(withoutUndefined(changes))) },
    [updateInput(current, changes)],
  );
}
