/**
 * The endpoint lifecycle workflows as a careless change might leave them: a timer now comes before
 * everything else. Replaying the recorded histories against these must fail, which proves the
 * endpoint replay test guards their determinism.
 */
import { sleep } from '@temporalio/workflow';
import type { Endpoint } from '../../api/schemas/endpoint';
import type {
  EphemeralEndpointInput,
  ProvisionEndpointInput,
  TeardownEndpointInput,
  UpdateEndpointInput,
} from '../../contracts/endpoint-input';
import type { EphemeralResult, ProvisionResult, TeardownResult } from '../../contracts/endpoint-results';
import {
  ephemeralEndpointWorkflow as recordedEphemeral,
  provisionEndpointWorkflow as recordedProvision,
  teardownEndpointWorkflow as recordedTeardown,
  updateEndpointWorkflow as recordedUpdate,
} from '../../workflows/endpoint/endpoint-lifecycle';

export async function provisionEndpointWorkflow(input: ProvisionEndpointInput): Promise<ProvisionResult> {
  await sleep(1);
  return recordedProvision(input);
}

export async function updateEndpointWorkflow(input: UpdateEndpointInput): Promise<Endpoint> {
  await sleep(1);
  return recordedUpdate(input);
}

export async function teardownEndpointWorkflow(input: TeardownEndpointInput): Promise<TeardownResult> {
  await sleep(1);
  return recordedTeardown(input);
}

export async function ephemeralEndpointWorkflow(input: EphemeralEndpointInput): Promise<EphemeralResult> {
  await sleep(1);
  return recordedEphemeral(input);
}
