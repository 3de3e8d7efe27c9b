import {
  type FieldNode,
  Kind,
  type ObjectValueNode,
  type OperationDefinitionNode,
  parse,
  type StringValueNode,
} from 'graphql';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient, ServiceError, ValidationError } from '../../api';
import {
  clientFor,
  FAST_RETRY,
  failure,
  NASTY_NAMES,
  startService,
  TEST_KEY,
  type TestService,
} from './helpers';
import { type OffSpecService, startOffSpecService } from './off-spec-service';

let service: TestService;
let client: ServiceClient;
const discount = { discountFactor: 0.8, type: 'CREDIT', expirationDate: '2030-01-01' };

beforeAll(async () => {
  service = await startService({
    accounts: [],
    seed: { accounts: [{ apiKey: TEST_KEY, serverlessDiscount: discount, networkVolumes: ['vol-1'] }] },
  });
  client = clientFor(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
});
beforeEach(() => service.reset());

/** The root field of the last query the client sent, read by the reference parser. */
function lastRootField(): FieldNode {
  const sent = service.wire.requests.at(-1)?.json() as { query: string };
  const operation = parse(sent.query).definitions[0] as OperationDefinitionNode;
  return operation.selectionSet.selections[0] as FieldNode;
}

function inputFields(): Map<string, ObjectValueNode['fields'][number]['value']> {
  const input = lastRootField().arguments?.[0]?.value as ObjectValueNode;
  return new Map(input.fields.map((field) => [field.name.value, field.value]));
}

const endpointNamed = (id: string) => service.control.endpoints(TEST_KEY).find((e) => e.id === id);

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
    expect(endpointNamed(endpoint.id)).toMatchObject({ name: 'worker', flashBootType: 'FLASHBOOT' });
    const fields = inputFields();
    expect(fields.get('type')).toEqual(expect.objectContaining({ kind: Kind.STRING, value: 'QB' }));
    expect(fields.get('flashBootType')).toEqual(
      expect.objectContaining({ kind: Kind.ENUM, value: 'FLASHBOOT' }),
    );
    expect(fields.get('workersMax')).toEqual(expect.objectContaining({ kind: Kind.INT, value: '2' }));
    const seen = service.wire.requests[0];
    const url = new URL(seen?.path ?? '', 'http://service');
    expect(url.pathname).toBe('/graphql');
    expect([...url.searchParams]).toEqual([['api_key', TEST_KEY]]);
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers['content-type']).toBe('application/json');
  });

  it.each(NASTY_NAMES)('a name of %j arrives exactly as given', async (name) => {
    const endpoint = await client.endpoints.save({ ...base, name });
    expect((inputFields().get('name') as StringValueNode).value).toBe(name);
    expect(endpointNamed(endpoint.id)?.name).toBe(name);
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
    expect(service.wire.requests).toHaveLength(0);
  });

  it('a response with errors is an error, even with HTTP 200', async () => {
    const error = await failure(client.endpoints.save({ ...base, id: 'missing' }));
    expect(service.wire.requests.map((r) => r.status)).toEqual([200]);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({
      kind: 'GraphQLError',
      status: 200,
      retryable: false,
      operation: 'saveEndpoint',
    });
    expect(error.message).toContain('endpoint missing not found');
  });
});

describe('listing, account and deletion', () => {
  it('lists the endpoints with their pods', async () => {
    // One worker kept warm: one pod.
    const first = await client.endpoints.save({ ...base, name: 'listed-1', workersMin: 1 });
    const second = await client.endpoints.save({ ...base, name: 'listed-2' });
    const endpoints = await client.endpoints.list();
    const listed = endpoints.filter((e) => e.id === first.id || e.id === second.id);
    expect(listed.map((e) => e.name).sort()).toEqual(['listed-1', 'listed-2']);
    expect(endpoints.map((e) => e.id).sort()).toEqual(
      service.control
        .endpoints(TEST_KEY)
        .map((e) => e.id)
        .sort(),
    );
    expect(listed.find((e) => e.id === first.id)?.pods).toEqual([{ desiredStatus: 'RUNNING' }]);
    expect(lastRootField().name.value).toBe('myself');
  });

  it('reads the account with its discount', async () => {
    const saved = await client.endpoints.save(base);
    const account = await client.endpoints.account();
    expect(account.endpoints.map((e) => e.id)).toContain(saved.id);
    expect(account.endpoints).toHaveLength(service.control.endpoints(TEST_KEY).length);
    expect(account.serverlessDiscount).toEqual(discount);
  });

  it('deletes an endpoint whose workers are at zero, and reports the refusal otherwise', async () => {
    const idle = await client.endpoints.save({ ...base, workersMin: 0, workersMax: 0 });
    await expect(client.endpoints.delete(idle.id)).resolves.toBeUndefined();
    expect(endpointNamed(idle.id)).toBeUndefined();
    expect(lastRootField().arguments?.[0]?.value).toEqual(
      expect.objectContaining({ kind: Kind.STRING, value: idle.id }),
    );

    const busy = await client.endpoints.save({ ...base, workersMax: 1 });
    const error = await failure(client.endpoints.delete(busy.id));
    expect(error).toMatchObject({ kind: 'GraphQLError', operation: 'deleteEndpoint', retryable: false });
    expect(error.message).toMatch(/workersMin 0 and workersMax 1; set both to 0/);
    expect(endpointNamed(busy.id)).toBeDefined();
    expect(await failure(client.endpoints.delete(''))).toBeInstanceOf(ValidationError);
  });
});

describe('answers the emulator never gives (a service off the spec)', () => {
  let offSpec: OffSpecService;
  let offSpecClient: ServiceClient;
  beforeAll(async () => {
    offSpec = await startOffSpecService();
    offSpecClient = createServiceClient(
      { apiKey: TEST_KEY, apiUrl: offSpec.apiUrl, graphqlUrl: offSpec.graphqlUrl, restUrl: offSpec.restUrl },
      { retry429: FAST_RETRY },
    );
  });
  afterAll(async () => {
    await offSpecClient.close();
    await offSpec.close();
  });

  it('errors beside the data of a create are still an error, and the create may have happened', async () => {
    offSpec.answer = () => ({
      status: 200,
      body: { data: { saveEndpoint: { id: 'e1', ...base } }, errors: [{ message: 'partly failed' }] },
    });
    const error = (await failure(offSpecClient.endpoints.save(base))) as ServiceError;
    expect(error.kind).toBe('GraphQLError');
    expect(error.message).toContain('partly failed');
    // The create did something: a result came back with the errors.
    expect(error.mayHaveReachedService).toBe(true);
  });

  it('a response that is not GraphQL is an InvalidResponse', async () => {
    offSpec.answer = () => ({ status: 200, body: { data: {} } });
    expect(await failure(offSpecClient.endpoints.list())).toMatchObject({ kind: 'InvalidResponse' });
  });
});
