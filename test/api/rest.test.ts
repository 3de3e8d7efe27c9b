import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ServiceClient, ServiceError, ValidationError } from '../../api';
import { type FakeService, startFakeService, TEST_KEY } from './fake-service';
import { clientFor, failure } from './helpers';

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

describe('REST createEndpoint', () => {
  it('posts the creation body with a Bearer key under /v1 and keeps unknown response fields', async () => {
    const body = {
      name: 'n',
      templateId: 't',
      gpuTypeIds: ['NVIDIA L4', 'NVIDIA A40'],
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
    };
    const created = await client.rest.createEndpoint(body);
    expect(created.id).toMatch(/^ep-/);
    expect(created.createdAt).toBe('2030-01-01T00:00:00Z');
    const [seen] = service.requests;
    expect(seen?.url).toBe('/v1/endpoints');
    expect(seen?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(seen?.body).toEqual(body);
  });

  it('refuses fields the spec does not list and a bad priority list', async () => {
    const extra = await failure(
      client.rest.createEndpoint({ name: 'n', templateId: 't', gpu: 'x' } as never),
    );
    expect(extra).toBeInstanceOf(ValidationError);
    const empty = await failure(client.rest.createEndpoint({ name: 'n', templateId: 't', gpuTypeIds: [] }));
    expect((empty as ValidationError).field).toBe('gpuTypeIds');
    expect(service.requests).toHaveLength(0);
  });
});

describe('REST deleteNetworkVolume', () => {
  it('204 is success', async () => {
    await expect(client.rest.deleteNetworkVolume('vol-1')).resolves.toBeUndefined();
    expect(service.volumes.has('vol-1')).toBe(false);
    expect(service.requests[0]).toMatchObject({ method: 'DELETE', url: '/v1/networkvolumes/vol-1' });
  });

  it('400 (invalid id) is a BadRequest', async () => {
    const error = await failure(client.rest.deleteNetworkVolume('vol-unknown'));
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({
      kind: 'BadRequest',
      status: 400,
      retryable: false,
      operation: 'deleteNetworkVolume',
    });
    expect(error.message).toContain('invalid network volume id');
  });

  it('401 is Unauthorized', async () => {
    service.fault({
      route: 'rest-delete-volume',
      kind: 'status',
      httpStatus: 401,
      body: { error: 'unauthorized' },
    });
    expect(await failure(client.rest.deleteNetworkVolume('vol-1'))).toMatchObject({
      kind: 'Unauthorized',
      status: 401,
    });
  });

  it.each(['', '.', '..', '../endpoints', 'a\\b'])('refuses the id %j', async (id) => {
    const error = await failure(client.rest.deleteNetworkVolume(id));
    expect((error as ValidationError).field).toBe('networkVolumeId');
    expect(service.requests).toHaveLength(0);
  });

  it('encodes an odd but acceptable id into one segment', async () => {
    service.volumes.add('vol 2?#%');
    await client.rest.deleteNetworkVolume('vol 2?#%');
    expect(service.requests[0]?.url).toBe('/v1/networkvolumes/vol%202%3F%23%25');
    expect(service.volumes.has('vol 2?#%')).toBe(false);
  });
});
