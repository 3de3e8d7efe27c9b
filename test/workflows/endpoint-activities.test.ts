import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import {
  type CreateEndpointRequest,
  createEndpointActivities,
  type EndpointActivityDeps,
} from '../../activities/endpoint';
import { ServiceError, type ServiceErrorKind } from '../../api/errors';
import type { Endpoint } from '../../api/schemas/endpoint';

type Client = EndpointActivityDeps['client'];

// The mock environment logs every failed activity; these failures are the point of the tests.
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

function serviceError(
  kind: ServiceErrorKind,
  init: Partial<ConstructorParameters<typeof ServiceError>[0]> = {},
) {
  return new ServiceError({ kind, operation: 'test', message: `${kind}!`, retryable: false, ...init });
}

const endpoint = (fields: Partial<Endpoint> = {}): Endpoint => ({
  id: 'ep-1',
  name: 'n',
  templateId: 'tpl',
  gpuIds: 'AMPERE_16',
  workersMin: 0,
  workersMax: 0,
  ...fields,
});

/** A client whose every call is logged and answered by `answers` (or refused). */
function fakeClient(answers: Partial<Record<string, (...args: unknown[]) => unknown>>) {
  const calls: string[] = [];
  const handler =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push(name);
      const answer = answers[name];
      if (!answer) throw new Error(`unexpected call ${name}`);
      return answer(...args);
    };
  const client = {
    endpoints: {
      save: handler('save'),
      list: handler('list'),
      account: handler('account'),
      delete: handler('delete'),
    },
    rest: { createEndpoint: handler('createEndpoint'), deleteNetworkVolume: handler('deleteNetworkVolume') },
    jobs: {
      run: handler('run'),
      runSync: handler('runSync'),
      status: handler('status'),
      stream: handler('stream'),
      cancel: handler('cancel'),
      retry: handler('retry'),
      purgeQueue: handler('purgeQueue'),
      health: handler('health'),
    },
  } as unknown as Client;
  return { client, calls };
}

/** Runs one activity as attempt `attempt`; resolves to its result or its thrown failure. */
async function attempt<K extends keyof ReturnType<typeof createEndpointActivities>>(
  client: Client,
  n: number,
  name: K,
  ...args: Parameters<ReturnType<typeof createEndpointActivities>[K]>
): Promise<unknown> {
  const activities = createEndpointActivities({ client });
  const fn = activities[name] as (...a: unknown[]) => Promise<unknown>;
  return new MockActivityEnvironment({ attempt: n }, { logger: silent })
    .run(fn, ...args)
    .catch((error: unknown) => error);
}

const graphqlCreate: CreateEndpointRequest = {
  via: 'graphql',
  input: { name: 'n', templateId: 'tpl', gpuIds: 'AMPERE_16' },
};

describe('createEndpoint', () => {
  it('sends saveEndpoint at once on the first attempt', async () => {
    const { client, calls } = fakeClient({ save: () => endpoint() });
    expect(await attempt(client, 1, 'createEndpoint', graphqlCreate)).toEqual(endpoint());
    expect(calls).toEqual(['save']);
  });

  it('on a later attempt returns the endpoint an earlier attempt created, without creating again', async () => {
    const { client, calls } = fakeClient({ list: () => [endpoint({ name: 'other', id: 'x' }), endpoint()] });
    expect(await attempt(client, 2, 'createEndpoint', graphqlCreate)).toEqual(endpoint());
    expect(calls).toEqual(['list']);
  });

  it('on a later attempt creates when no endpoint of the name exists', async () => {
    const { client, calls } = fakeClient({ list: () => [], save: () => endpoint() });
    await attempt(client, 3, 'createEndpoint', graphqlCreate);
    expect(calls).toEqual(['list', 'save']);
  });

  it('on a later attempt refuses a name several endpoints carry', async () => {
    const { client } = fakeClient({ list: () => [endpoint(), endpoint({ id: 'ep-2' })] });
    const failure = (await attempt(client, 2, 'createEndpoint', graphqlCreate)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'DuplicateEndpointName', nonRetryable: true });
  });

  it('a lost answer (may have reached the service) is retryable, so the next attempt looks by name', async () => {
    const { client } = fakeClient({
      save: () => {
        throw serviceError('InvalidResponse', { mayHaveReachedService: true });
      },
    });
    const failure = (await attempt(client, 1, 'createEndpoint', graphqlCreate)) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'InvalidResponse', nonRetryable: false });
  });

  it('a refusal that created nothing stays non-retryable, typed by its kind', async () => {
    const { client } = fakeClient({
      save: () => {
        throw serviceError('Unauthorized', { status: 401 });
      },
    });
    const failure = (await attempt(client, 1, 'createEndpoint', graphqlCreate)) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'Unauthorized', nonRetryable: true });
  });

  it('REST: creates with gpuTypeIds, then reads the endpoint back; not listed yet is retryable', async () => {
    const request: CreateEndpointRequest = {
      via: 'rest',
      body: { name: 'n', templateId: 'tpl', gpuTypeIds: ['ADA_24', 'AMPERE_16'] },
    };
    const listed = fakeClient({ createEndpoint: () => ({ id: 'ep-1' }), list: () => [endpoint()] });
    expect(await attempt(listed.client, 1, 'createEndpoint', request)).toEqual(endpoint());
    expect(listed.calls).toEqual(['createEndpoint', 'list']);

    const unlisted = fakeClient({ createEndpoint: () => ({ id: 'ep-1' }), list: () => [] });
    const failure = (await attempt(unlisted.client, 1, 'createEndpoint', request)) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'EndpointNotListed', nonRetryable: false });
  });
});

describe('updateEndpoint and deleteEndpoint', () => {
  const update = { id: 'ep-1', name: 'n', templateId: 'tpl', gpuIds: 'AMPERE_16' as const, workersMax: 0 };

  it('update of an endpoint that is not there is EndpointNotFound', async () => {
    const { client } = fakeClient({
      save: () => {
        throw serviceError('GraphQLError');
      },
      list: () => [],
    });
    expect(await attempt(client, 1, 'updateEndpoint', update)).toMatchObject({
      type: 'EndpointNotFound',
      nonRetryable: true,
    });
  });

  it('update refused for another reason keeps its own type', async () => {
    const { client } = fakeClient({
      save: () => {
        throw serviceError('GraphQLError');
      },
      list: () => [endpoint()],
    });
    expect(await attempt(client, 1, 'updateEndpoint', update)).toMatchObject({ type: 'GraphQLError' });
  });

  it('delete: done, or already gone when the refusal is for an endpoint no longer listed', async () => {
    const done = fakeClient({ delete: () => undefined });
    expect(await attempt(done.client, 1, 'deleteEndpoint', 'ep-1')).toEqual({ alreadyGone: false });
    const gone = fakeClient({
      delete: () => {
        throw serviceError('GraphQLError');
      },
      list: () => [],
    });
    expect(await attempt(gone.client, 2, 'deleteEndpoint', 'ep-1')).toEqual({ alreadyGone: true });
  });

  it('delete refused for an endpoint with workers is EndpointNotScaledDown', async () => {
    const { client } = fakeClient({
      delete: () => {
        throw serviceError('GraphQLError');
      },
      list: () => [endpoint({ workersMax: 2 })],
    });
    expect(await attempt(client, 1, 'deleteEndpoint', 'ep-1')).toMatchObject({
      type: 'EndpointNotScaledDown',
      nonRetryable: true,
    });
  });

  it('delete that met a network fault is retried (the retry finds out whether it went)', async () => {
    const { client, calls } = fakeClient({
      delete: () => {
        throw serviceError('NetworkError', { retryable: true });
      },
    });
    expect(await attempt(client, 1, 'deleteEndpoint', 'ep-1')).toMatchObject({
      type: 'NetworkError',
      nonRetryable: false,
    });
    expect(calls).toEqual(['delete']);
  });
});

describe('jobs and health', () => {
  it('cancelling a job the service no longer knows needs nothing', async () => {
    const { client } = fakeClient({
      cancel: () => {
        throw serviceError('NotFound', { status: 404 });
      },
    });
    expect(await attempt(client, 1, 'cancelEndpointJob', 'ep-1', 'job-1')).toEqual({ jobId: 'job-1' });
  });

  it('a 429 on purge is retryable after the delay the service asked for', async () => {
    const { client } = fakeClient({
      purgeQueue: () => {
        throw serviceError('RateLimited', { status: 429, retryable: true, retryAfterMs: 7_000 });
      },
    });
    const failure = (await attempt(client, 1, 'purgeEndpointQueue', 'ep-1')) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'RateLimited', nonRetryable: false, nextRetryDelay: 7_000 });
  });
});

describe('deleteNetworkVolume', () => {
  const refuse = (kind: ServiceErrorKind, status: number) => () => {
    throw serviceError(kind, { status });
  };

  it('204 is done', async () => {
    const { client } = fakeClient({ deleteNetworkVolume: () => undefined });
    expect(await attempt(client, 1, 'deleteNetworkVolume', 'vol-1')).toEqual({ alreadyGone: false });
  });

  it('400 (invalid id) and 401 fail without retry', async () => {
    const bad = fakeClient({ deleteNetworkVolume: refuse('BadRequest', 400) });
    expect(await attempt(bad.client, 1, 'deleteNetworkVolume', 'vol-1')).toMatchObject({
      type: 'BadRequest',
      nonRetryable: true,
    });
    const unauthorized = fakeClient({ deleteNetworkVolume: refuse('Unauthorized', 401) });
    expect(await attempt(unauthorized.client, 1, 'deleteNetworkVolume', 'vol-1')).toMatchObject({
      type: 'Unauthorized',
      nonRetryable: true,
    });
  });

  it('a 400 on a later attempt, for a volume no endpoint uses, is the earlier attempt having deleted it', async () => {
    const { client } = fakeClient({
      deleteNetworkVolume: refuse('BadRequest', 400),
      list: () => [endpoint()],
    });
    expect(await attempt(client, 2, 'deleteNetworkVolume', 'vol-1')).toEqual({ alreadyGone: true });
  });

  it('a 400 on a later attempt for a volume still attached stays an error', async () => {
    const { client } = fakeClient({
      deleteNetworkVolume: refuse('BadRequest', 400),
      list: () => [endpoint({ networkVolumeId: 'vol-1' })],
    });
    expect(await attempt(client, 2, 'deleteNetworkVolume', 'vol-1')).toMatchObject({ type: 'BadRequest' });
  });
});
