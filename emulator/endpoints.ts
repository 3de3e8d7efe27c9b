import type { Engine } from './engine';
import { newShortId } from './ids';
import { removeJob } from './jobs';
import type { WorkerCounts } from './queue/scheduler';
import type { EndpointFields } from './schemas';
import { type Account, type Endpoint, emptyCounts, type NetworkVolume } from './store';

// Endpoints and network volumes of an account: the operations GraphQL, REST, seeds and the control
// handle share. Errors are EndpointErrors; each interface turns them into its own error shape.

export class EndpointError extends Error {}

export type EndpointState = EndpointFields & {
  accountId: string;
  createdAt: number;
  workers: WorkerCounts;
  /** Set while the service gives the endpoint no workers; `until` null: until restored. */
  starved: { until: number | null } | null;
};

function checkVolume(account: Account, networkVolumeId: string | null) {
  if (networkVolumeId !== null && !account.volumes.has(networkVolumeId)) {
    throw new EndpointError(`network volume ${networkVolumeId} does not exist in this account`);
  }
}

export function createEndpoint(
  engine: Engine,
  account: Account,
  fields: Omit<EndpointFields, 'id'> & { id?: string },
): Endpoint {
  const id = fields.id ?? newShortId();
  if (engine.store.endpoints.has(id)) throw new EndpointError(`endpoint id ${id} is already taken`);
  checkVolume(account, fields.networkVolumeId);
  const endpoint: Endpoint = {
    fields: { ...fields, id },
    accountId: account.id,
    createdAt: engine.clock.now(),
    queue: new Map(),
    queuedNormal: 0,
    workers: new Map(),
    jobs: new Map(),
    counts: emptyCounts(),
    retried: 0,
    dispatchPending: false,
    deleted: false,
  };
  engine.store.endpoints.set(id, endpoint);
  account.endpoints.set(id, endpoint);
  engine.scheduler.reconcile(endpoint);
  return endpoint;
}

export function updateEndpoint(
  engine: Engine,
  account: Account,
  endpoint: Endpoint,
  changes: Partial<Omit<EndpointFields, 'id'>>,
): Endpoint {
  const next = { ...endpoint.fields, ...changes, id: endpoint.fields.id };
  if (next.workersMin > next.workersMax) throw new EndpointError('workersMin must not exceed workersMax');
  checkVolume(account, next.networkVolumeId);
  endpoint.fields = next;
  engine.scheduler.reconcile(endpoint);
  return endpoint;
}

/** The spec's rule: only an endpoint scaled to 0..0 can go. Its retained jobs go with it. */
export function deleteEndpoint(engine: Engine, account: Account, endpoint: Endpoint): void {
  const { workersMin, workersMax } = endpoint.fields;
  if (workersMin !== 0 || workersMax !== 0) {
    throw new EndpointError(
      `endpoint ${endpoint.fields.id} has workersMin ${workersMin} and workersMax ${workersMax}; set both to 0 before deleting it`,
    );
  }
  for (const job of [...endpoint.jobs.values()]) removeJob(engine, job, 'endpoint-deleted');
  endpoint.deleted = true;
  engine.scheduler.stopAll(endpoint);
  engine.store.endpoints.delete(endpoint.fields.id);
  account.endpoints.delete(endpoint.fields.id);
}

export function endpointState(engine: Engine, endpoint: Endpoint): EndpointState {
  return {
    ...endpoint.fields,
    accountId: endpoint.accountId,
    createdAt: endpoint.createdAt,
    workers: engine.scheduler.counts(endpoint),
    starved: endpoint.starved ? { until: endpoint.starved.until } : null,
  };
}

export function createVolume(engine: Engine, account: Account, id?: string): NetworkVolume {
  const volumeId = id ?? newShortId(10);
  if (engine.store.volumes.has(volumeId))
    throw new EndpointError(`network volume id ${volumeId} is already taken`);
  const volume: NetworkVolume = { id: volumeId, accountId: account.id, createdAt: engine.clock.now() };
  engine.store.volumes.set(volumeId, volume);
  account.volumes.set(volumeId, volume);
  return volume;
}

/** Refused (EndpointError) for an unknown volume or one still attached to an endpoint. */
export function deleteVolume(engine: Engine, account: Account, id: string): void {
  if (!account.volumes.has(id)) throw new EndpointError(`invalid network volume id: ${id}`);
  for (const endpoint of account.endpoints.values()) {
    if (endpoint.fields.networkVolumeId === id) {
      throw new EndpointError(`network volume ${id} is attached to endpoint ${endpoint.fields.id}`);
    }
  }
  account.volumes.delete(id);
  engine.store.volumes.delete(id);
}

/** REST creation: the first of the requested GPU types that is available (all are, unless configured). */
export function firstAvailableGpu(engine: Engine, gpuTypeIds: string[]): string | undefined {
  return gpuTypeIds.find((gpu) => engine.store.gpuAvailability.get(gpu) ?? true);
}

export interface HealthBody {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  workers: {
    idle: number;
    initializing: number;
    ready: number;
    running: number;
    throttled: number;
    unhealthy: number;
  };
}

/** Counts over the jobs the endpoint retains now; `failed` includes TIMED_OUT (see README). */
export function healthBody(engine: Engine, endpoint: Endpoint): HealthBody {
  const c = endpoint.counts;
  const w = engine.scheduler.counts(endpoint);
  return {
    jobs: {
      completed: c.COMPLETED,
      failed: c.FAILED + c.TIMED_OUT,
      inProgress: c.IN_PROGRESS,
      inQueue: c.IN_QUEUE,
      retried: endpoint.retried,
    },
    workers: {
      idle: w.idle,
      initializing: w.initializing,
      // A starved endpoint's running workers finish their job but take no other.
      ready: endpoint.starved ? 0 : w.idle + w.running,
      running: w.running,
      throttled: w.throttled,
      unhealthy: 0,
    },
  };
}
