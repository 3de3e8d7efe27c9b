/**
 * An in-memory stand-in for the endpoint activities, for workflow tests on the time-skipping
 * server: it keeps endpoints and volumes the way the service rules say (deletion refused unless
 * scaled to 0..0), records every call in order, and lets a test script /health and inject failures.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { EndpointActivities } from '../../activities/endpoint';
import type { Endpoint } from '../../api/schemas/endpoint';
import type { HealthResponse } from '../../api/schemas/job';
import { ENDPOINT_FAILURE } from '../../contracts/failures';

export interface Call {
  name: keyof EndpointActivities;
  args: unknown[];
}

export interface FakeOptions {
  /** /health answer for the n-th call (0-based) per endpoint; default: idle, nothing running. */
  health?: (endpointId: string, call: number) => HealthResponse;
  /** Runs before an activity, and may change the fake's state; a thrown error is the activity's failure. */
  before?: (call: Call, state: FakeState, attempt: number) => void | Promise<void>;
  /** Queued jobs /purge-queue reports removing. */
  queued?: number;
}

export interface FakeState {
  endpoints: Map<string, Endpoint>;
  volumes: Set<string>;
}

export function healthOf(inProgress: number, running: number, inQueue = 0): HealthResponse {
  return {
    jobs: { completed: 0, failed: 0, inProgress, inQueue, retried: 0 },
    workers: { idle: 0, running },
  };
}

export function fakeEndpointService(options: FakeOptions = {}) {
  const endpoints = new Map<string, Endpoint>();
  const volumes = new Set<string>();
  const calls: Call[] = [];
  const healthCalls = new Map<string, number>();
  const attempts = new Map<string, number>();
  let next = 1;

  function seed(fields: Partial<Endpoint> & Pick<Endpoint, 'name' | 'templateId' | 'gpuIds'>): Endpoint {
    const endpoint: Endpoint = { id: `ep-${next++}`, type: 'QB', workersMin: 0, workersMax: 3, ...fields };
    endpoints.set(endpoint.id, endpoint);
    return endpoint;
  }

  function notFound(id: string) {
    return ApplicationFailure.create({
      type: ENDPOINT_FAILURE.notFound,
      message: `endpoint ${id} does not exist`,
      nonRetryable: true,
    });
  }

  async function record(name: keyof EndpointActivities, args: unknown[]) {
    const call = { name, args };
    calls.push(call);
    const key = `${name}:${JSON.stringify(args)}`;
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    await options.before?.(call, { endpoints, volumes }, attempt);
  }

  const activities: EndpointActivities = {
    async createEndpoint(request) {
      await record('createEndpoint', [request]);
      if (request.via === 'graphql') {
        const { type, ...fields } = request.input;
        return seed({ ...fields, type: type ?? 'QB' } as Endpoint);
      }
      const { gpuTypeIds, ...fields } = request.body;
      return seed({ ...fields, gpuIds: gpuTypeIds![0] as Endpoint['gpuIds'] });
    },
    async findEndpointsByName(name) {
      await record('findEndpointsByName', [name]);
      return [...endpoints.values()].filter((endpoint) => endpoint.name === name);
    },
    async readEndpoint(id) {
      await record('readEndpoint', [id]);
      return endpoints.get(id) ?? null;
    },
    async updateEndpoint(input) {
      await record('updateEndpoint', [input]);
      const current = endpoints.get(input.id);
      if (!current) throw notFound(input.id);
      const updated = { ...current, ...input } as Endpoint;
      endpoints.set(input.id, updated);
      return updated;
    },
    async deleteEndpoint(id) {
      await record('deleteEndpoint', [id]);
      const current = endpoints.get(id);
      if (!current) return { alreadyGone: true };
      if (current.workersMin !== 0 || current.workersMax !== 0) {
        throw ApplicationFailure.create({
          type: ENDPOINT_FAILURE.notScaledDown,
          message: `endpoint ${id} is not scaled to zero`,
          nonRetryable: true,
        });
      }
      endpoints.delete(id);
      return { alreadyGone: false };
    },
    async endpointHealth(id) {
      await record('endpointHealth', [id]);
      if (!endpoints.has(id)) throw ApplicationFailure.create({ type: 'NotFound', nonRetryable: true });
      const n = healthCalls.get(id) ?? 0;
      healthCalls.set(id, n + 1);
      return options.health?.(id, n) ?? healthOf(0, 0);
    },
    async purgeEndpointQueue(id) {
      await record('purgeEndpointQueue', [id]);
      if (!endpoints.has(id)) throw ApplicationFailure.create({ type: 'NotFound', nonRetryable: true });
      return { removed: options.queued ?? 0, status: 'completed' };
    },
    async cancelEndpointJob(endpointId, jobId) {
      await record('cancelEndpointJob', [endpointId, jobId]);
      return { jobId, status: 'CANCELLED' };
    },
    async deleteNetworkVolume(id) {
      await record('deleteNetworkVolume', [id]);
      const existed = volumes.delete(id);
      return { alreadyGone: !existed };
    },
  };

  return {
    activities,
    endpoints,
    volumes,
    calls,
    seed,
    /** The names of the calls so far, in order. */
    names: () => calls.map((call) => call.name),
    reset() {
      calls.length = 0;
      healthCalls.clear();
      attempts.clear();
    },
  };
}

export type FakeEndpointService = ReturnType<typeof fakeEndpointService>;
