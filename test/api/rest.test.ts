import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ServiceClient, ServiceError, ValidationError } from '../../api';
import { clientFor, failure, startService, TEST_KEY, type TestService } from './helpers';

let service: TestService;
let client: ServiceClient;

beforeAll(async () => {
  service = await startService();
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
      name: 'rest-create',
      templateId: 'echo',
      gpuTypeIds: ['NVIDIA L4', 'NVIDIA A40'],
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 5,
    };
    const created = await client.rest.createEndpoint(body);
    // gpuIds (the type the service picked) is no field the client knows: it is kept as it came.
    expect(created).toMatchObject({ name: 'rest-create', gpuIds: 'NVIDIA L4', workersMax: 2 });
    expect(service.control.endpoints(TEST_KEY).find((e) => e.id === created.id)).toMatchObject({
      name: 'rest-create',
      templateId: 'echo',
      workersMax: 2,
    });
    const [seen] = service.wire.requests;
    expect(seen?.path).toBe('/v1/endpoints');
    expect(seen?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(seen?.json()).toEqual(body);
  });

  it('refuses fields the spec does not list and a bad priority list', async () => {
    const extra = await failure(
      client.rest.createEndpoint({ name: 'n', templateId: 't', gpu: 'x' } as never),
    );
    expect(extra).toBeInstanceOf(ValidationError);
    const empty = await failure(client.rest.createEndpoint({ name: 'n', templateId: 't', gpuTypeIds: [] }));
    expect((empty as ValidationError).field).toBe('gpuTypeIds');
    expect(service.wire.requests).toHaveLength(0);
  });
});

describe('REST deleteNetworkVolume', () => {
  it('204 is success', async () => {
    const volume = service.control.createNetworkVolume(TEST_KEY);
    await expect(client.rest.deleteNetworkVolume(volume.id)).resolves.toBeUndefined();
    expect(service.wire.requests[0]).toMatchObject({
      method: 'DELETE',
      path: `/v1/networkvolumes/${volume.id}`,
      status: 204,
    });
    // Gone: a second delete is refused.
    expect(await failure(client.rest.deleteNetworkVolume(volume.id))).toMatchObject({ status: 400 });
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
    const volume = service.control.createNetworkVolume(TEST_KEY);
    service.control.injectFault({ operation: 'rest-delete-volume', kind: 'status', httpStatus: 401 });
    expect(await failure(client.rest.deleteNetworkVolume(volume.id))).toMatchObject({
      kind: 'Unauthorized',
      status: 401,
    });
  });

  it.each(['', '.', '..', '../endpoints', 'a\\b'])('refuses the id %j', async (id) => {
    const error = await failure(client.rest.deleteNetworkVolume(id));
    expect((error as ValidationError).field).toBe('networkVolumeId');
    expect(service.wire.requests).toHaveLength(0);
  });

  it('encodes an odd but acceptable id into one segment', async () => {
    // The service's ids never look like this; it refuses it as an id, which it read as one.
    const error = await failure(client.rest.deleteNetworkVolume('vol 2?#%'));
    expect(error).toMatchObject({ kind: 'BadRequest', status: 400 });
    expect(service.wire.requests.map((r) => r.path)).toEqual(['/v1/networkvolumes/vol%202%3F%23%25']);
  });
});
