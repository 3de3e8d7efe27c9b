/**
 * What the endpoint lifecycle workflows share: the activity proxies with their retry policies, the
 * phase tracker behind endpointLifecycleQuery, input parsing, and the update input the service
 * needs. Deterministic workflow code only.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { z } from 'zod';
import type { EndpointActivities } from '../../activities/endpoint';
import type { Endpoint, SaveEndpointInput } from '../../api/schemas/endpoint';
import { type EndpointChanges, firstIssue } from '../../contracts/endpoint-input';
import type { LifecyclePhase, LifecycleStatus } from '../../contracts/endpoint-results';
import { ENDPOINT_FAILURE } from '../../contracts/failures';
import { endpointLifecycleQuery } from './endpoint-definitions';

const retry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;

// Reads and changes: a handful of attempts; typed permanent errors stop at once.
export const act = proxyActivities<EndpointActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...retry, maximumAttempts: 10 },
});

// Teardown keeps trying for longer: giving up leaves paying workers behind.
export const teardownAct = proxyActivities<EndpointActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...retry, maximumInterval: '1 minute', maximumAttempts: 30 },
});

/** The failure type of an activity failure, or of an ApplicationFailure thrown here. */
export function failureType(error: unknown): string | undefined {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  return failure instanceof ApplicationFailure ? (failure.type ?? undefined) : undefined;
}

export function invalid(field: string, rule: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: ENDPOINT_FAILURE.invalidInput,
    message: `${field}: ${rule}`,
    nonRetryable: true,
    details: [{ field, rule }],
  });
}

/** Parses a workflow input; a bad one fails the workflow (not its task) with the field named. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const { field, rule } = firstIssue(result.error);
  throw invalid(field, rule);
}

export interface Tracker {
  readonly status: LifecycleStatus;
  enter(phase: LifecyclePhase): void;
  endpoint(endpointId: string | undefined, name?: string): void;
  end(error: unknown): void;
}

/** The phase record behind endpointLifecycleQuery; registered first thing, so queries always answer. */
export function tracker(): Tracker {
  const status: LifecycleStatus = { phase: 'starting', phases: [{ phase: 'starting', at: Date.now() }] };
  setHandler(endpointLifecycleQuery, () => status);
  const enter = (phase: LifecyclePhase) => {
    status.phase = phase;
    status.phases.push({ phase, at: Date.now() });
  };
  return {
    status,
    enter,
    endpoint(endpointId, name) {
      if (endpointId !== undefined) status.endpointId = endpointId;
      if (name !== undefined) status.name = name;
    },
    end(error) {
      enter(isCancellation(error) ? 'cancelled' : 'failed');
      status.error = error instanceof Error ? error.message : String(error);
    },
  };
}

/** Runs a workflow body, recording its end in the tracker. */
export async function tracked<T>(track: Tracker, body: () => Promise<T>): Promise<T> {
  try {
    const result = await body();
    track.enter('done');
    return result;
  } catch (error) {
    track.end(error);
    throw error;
  }
}

type WorkerBounds = { workersMin?: number | null; workersMax?: number | null };

/** workersMin <= workersMax must hold for the endpoint after the change, not only within it. */
export function checkWorkers(current: WorkerBounds, changes: WorkerBounds, root: string): void {
  const min = changes.workersMin ?? current.workersMin ?? 0;
  const max = changes.workersMax ?? current.workersMax;
  if (max === null || max === undefined || min <= max) return;
  const at = (field: string) => [root, field].filter(Boolean).join('.');
  if (changes.workersMin !== undefined && changes.workersMin !== null) {
    throw invalid(at('workersMin'), `must not exceed workersMax (${max})`);
  }
  throw invalid(at('workersMax'), `must not be below workersMin (${min})`);
}

/** What saveEndpoint needs to update: id, name, templateId and gpuIds, then the changes. */
export function updateInput(
  endpoint: Endpoint,
  changes: EndpointChanges,
): SaveEndpointInput & { id: string } {
  return {
    id: endpoint.id,
    name: endpoint.name,
    templateId: endpoint.templateId,
    gpuIds: endpoint.gpuIds,
    ...withoutUndefined(changes),
  };
}

export function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
