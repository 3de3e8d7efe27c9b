import {
  type DocumentNode,
  type FieldNode,
  Kind,
  type ObjectValueNode,
  type OperationDefinitionNode,
  type StringValueNode,
} from 'graphql';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ServiceClient, ServiceError, ValidationError } from '../../api';
import { type FakeService, startFakeService, TEST_KEY } from './fake-service';
import { clientFor, failure, NASTY_NAMES } from './helpers';

let service: FakeService;
let client: ServiceClient;

beforeAll(async () => {
  service = await startFakeService();
  client = clientFor(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});
beforeEach(() => service.reset());

/** The root field of the last query the service parsed. */
function lastRootField(): FieldNode {
  const document = service.requests.at(-1)?.document as DocumentNode;
  const operation = document.definitions[0] as OperationDefinitionNode;
  return operation.selectionSet.selections[0] as FieldNode;
}

function inputFields(): Map<string, ObjectValueNode['fields'][number]['value']> {
  const input = lastRootField().arguments?.[0]?.value as ObjectValueNode;
  return new Map(input.fields.map((field) => [field.name.value, field.value]));
}

const base = { name: 'worker', templateId: 'tpl-1', gpuIds: 'AMPERE_24' } as const;

describe('saveEndpoint', () => {
  it('creates: type defaults to QB, flashBootType is written as an enum, the key travels as api_key', async () => {
    const endpoint = await client.endpoints.save({
      ...base,
      flashBootType: 'FLASHBOOT',
      locations: 'US,FR',
      scalerType: 'QUEUE_DELAY',
      scalerValue: 4,
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
      networkVolumeId: 'vol-1',
    });
    expect(endpoint).toMatchObject({
      ...base,
      type: 'QB',
      flashBootType: 'FLASHBOOT',
      workersMax: 2,
      locations: 'US,FR',
    });
    expect(endpoint.id).toMatch(/^ep-/);
    const fields = inputFields();
    expect(fields.get('type')).toEqual(expect.objectContaining({ kind: Kind.STRING, value: 'QB' }));
    expect(fields.get('flashBootType')).toEqual(
      expect.objectContaining({ kind: Kind.ENUM, value: 'FLASHBOOT' }),
    );
    expect(fields.get('workersMax')).toEqual(expect.objectContaining({ kind: Kind.INT, value: '2' }));
    const seen = service.requests[0];
    expect(seen?.query).toEqual({ api_key: TEST_KEY });
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers['content-type']).toBe('application/json');
  });

  it.each(NASTY_NAMES)('a name of %j arrives exactly as given', async (name) => {
    const endpoint = await client.endpoints.save({ ...base, name });
    expect((inputFields().get('name') as StringValueNode).value).toBe(name);
    expect(service.endpoints.get(endpoint.id)?.name).toBe(name);
    expect(endpoint.name).toBe(name);
    expect(lastRootField().arguments).toHaveLength(1);
  });

  it('updates with an id, leaving the type alone unless asked', async () => {
    const created = await client.endpoints.save({ ...base, type: 'LB' });
    const updated = await client.endpoints.save({ ...base, id: created.id, workersMax: 7 });
    expect(inputFields().has('type')).toBe(false);
    expect(inputFields().get('id')).toEqual(
      expect.objectContaining({ kind: Kind.STRING, value: created.id }),
    );
    expect(updated).toMatchObject({ id: created.id, type: 'LB', workersMax: 7 });
  });

  it('refuses an enum value outside its allowed set before sending', async () => {
    for (const flashBootType of ['FLASHBOOT}) { myself { endpoints { id } } }', 'OFF']) {
      const error = await failure(client.endpoints.save({ ...base, flashBootType } as never));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('input.flashBootType');
    }
    const tier = await failure(client.endpoints.save({ ...base, gpuIds: 'H100' } as never));
    expect((tier as ValidationError).field).toBe('input.gpuIds');
    const extra = await failure(client.endpoints.save({ ...base, 'x) { y': 1 } as never));
    expect(extra).toBeInstanceOf(ValidationError);
    expect(service.requests).toHaveLength(0);
  });

  it('a response with errors is an error, even with HTTP 200', async () => {
    const error = await failure(client.endpoints.save({ ...base, id: 'missing' }));
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({
      kind: 'GraphQLError',
      status: 200,
      retryable: false,
      operation: 'saveEndpoint',
    });
    expect(error.message).toContain('endpoint missing not found');
  });

  it('errors beside data are still an error', async () => {
    service.fault({
      route: 'graphql',
      kind: 'status',
      httpStatus: 200,
      body: { data: { saveEndpoint: { id: 'e1', ...base } }, errors: [{ message: 'partly failed' }] },
    });
    const error = (await failure(client.endpoints.save(base))) as ServiceError;
    expect(error.kind).toBe('GraphQLError');
    // The create did something: a result came back with the errors.
    expect(error.mayHaveReachedService).toBe(true);
  });
});

describe('listing, account and deletion', () => {
  it('lists the endpoints with their pods', async () => {
    await client.endpoints.save(base);
    await client.endpoints.save({ ...base, name: 'second' });
    const endpoints = await client.endpoints.list();
    expect(endpoints.map((e) => e.name).sort()).toEqual(['second', 'worker']);
    expect(endpoints[0]?.pods).toEqual([{ desiredStatus: 'RUNNING' }]);
    expect(lastRootField().name.value).toBe('myself');
  });

  it('reads the account with its discount', async () => {
    await client.endpoints.save(base);
    const account = await client.endpoints.account();
    expect(account.endpoints).toHaveLength(1);
    expect(account.serverlessDiscount).toEqual({
      discountFactor: 0.8,
      type: 'CREDIT',
      expirationDate: '2030-01-01',
    });
  });

  it('deletes an endpoint whose workers are at zero, and reports the refusal otherwise', async () => {
    const idle = await client.endpoints.save({ ...base, workersMin: 0, workersMax: 0 });
    await expect(client.endpoints.delete(idle.id)).resolves.toBeUndefined();
    expect(service.endpoints.has(idle.id)).toBe(false);
    expect(lastRootField().arguments?.[0]?.value).toEqual(
      expect.objectContaining({ kind: Kind.STRING, value: idle.id }),
    );

    const busy = await client.endpoints.save({ ...base, workersMax: 1 });
    const error = await failure(client.endpoints.delete(busy.id));
    expect(error).toMatchObject({ kind: 'GraphQLError', operation: 'deleteEndpoint', retryable: false });
    expect(error.message).toContain('workersMin and workersMax must be 0');
    expect(await failure(client.endpoints.delete(''))).toBeInstanceOf(ValidationError);
  });

  it('a response that is not GraphQL is an InvalidResponse', async () => {
    service.fault({ route: 'graphql', kind: 'status', httpStatus: 200, body: { data: {} } });
    expect(await failure(client.endpoints.list())).toMatchObject({ kind: 'InvalidResponse' });
  });
});
