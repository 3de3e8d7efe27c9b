import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient, ServiceError } from '../../api';
import { errorFromFault } from '../../api/classify';
import { type FakeService, startFakeService, TEST_KEY } from './fake-service';
import { clientFor, expectNoSecret, FAST_RETRY, failure } from './helpers';

let service: FakeService;
let client: ServiceClient;
// Every error of this file is checked for the key at the end, whatever the test looked at.
const seen: Error[] = [];

beforeAll(async () => {
  service = await startFakeService();
  client = clientFor(service);
});
afterAll(async () => {
  await client.close();
  await service.close();
  expect(seen.length).toBeGreaterThan(15);
  for (const error of seen) expectNoSecret(error);
});
beforeEach(() => service.reset());

async function serviceError(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await failure(promise);
  seen.push(error);
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

describe('HTTP errors', () => {
  it.each([
    [400, 'BadRequest', false],
    [404, 'NotFound', false],
    [500, 'ServerError', true],
    [503, 'ServerError', true],
  ] as const)('%d on status is %s (retryable: %s)', async (httpStatus, kind, retryable) => {
    service.fault({
      route: 'status',
      kind: 'status',
      httpStatus,
      body: { error: `it went wrong with ${httpStatus}` },
    });
    const error = await serviceError(client.jobs.status('ep1', 'j1'));
    expect(error).toMatchObject({
      kind,
      status: httpStatus,
      retryable,
      operation: 'status',
      mayHaveReachedService: false,
    });
    expect(error.message).toContain(`it went wrong with ${httpStatus}`);
    expect(error.message).toContain('GET /v2/ep1/status/j1');
    expect(error.bodyExcerpt).toBe(`{"error":"it went wrong with ${httpStatus}"}`);
    expect(service.requests).toHaveLength(1);
  });

  it('a real 404: the job is unknown', async () => {
    const error = await serviceError(client.jobs.status('ep1', 'gone'));
    expect(error).toMatchObject({ kind: 'NotFound', status: 404, retryable: false });
  });

  it('a 500 on a submit may have created the job; on a non-submit it says nothing of the kind', async () => {
    service.fault({ route: 'run', kind: 'status', httpStatus: 500 });
    const error = await serviceError(client.jobs.run('ep1', { input: {} }));
    expect(error).toMatchObject({ kind: 'ServerError', retryable: true, mayHaveReachedService: true });
  });

  it('keeps only a short excerpt of a long body', async () => {
    service.fault({ route: 'status', kind: 'status', httpStatus: 400, body: { error: 'x'.repeat(5_000) } });
    const error = await serviceError(client.jobs.status('ep1', 'j1'));
    expect(error.bodyExcerpt!.length).toBeLessThanOrEqual(501);
    expect(error.message.length).toBeLessThan(400);
  });

  it('a 2xx with a body that is not the spec is an InvalidResponse; for a submit it was processed', async () => {
    service.fault({ route: 'run', kind: 'status', httpStatus: 200, body: { jobId: 'x' } });
    const error = await serviceError(client.jobs.run('ep1', { input: {} }));
    expect(error).toMatchObject({
      kind: 'InvalidResponse',
      status: 200,
      retryable: false,
      mayHaveReachedService: true,
    });
    expect(error.message).toContain('id');
  });
});

describe('401: the key is never repeated', () => {
  const wrongKey = 'sk_WRONG-key.0987654321';
  let wrong: ServiceClient;
  beforeAll(() => {
    wrong = createServiceClient({
      apiKey: wrongKey,
      apiUrl: service.apiUrl,
      graphqlUrl: service.graphqlUrl,
      restUrl: service.restUrl,
    });
  });
  afterAll(() => wrong.close());

  it.each([
    ['job operations', () => wrong.jobs.run('ep1', { input: {} })],
    ['GraphQL', () => wrong.endpoints.list()],
    ['REST', () => wrong.rest.deleteNetworkVolume('vol-1')],
  ])('%s: Unauthorized, with the echoed key scrubbed', async (_, call) => {
    const error = await serviceError(call());
    expect(error).toMatchObject({
      kind: 'Unauthorized',
      status: 401,
      retryable: false,
      mayHaveReachedService: false,
    });
    // The fake service echoed the key (and for GraphQL the URL holding it): proof that it was there to scrub.
    const echoed = service.requests.at(-1);
    expect(echoed).toBeDefined();
    expect(error.message).toContain('invalid api key');
    expect(error.message).toContain('[REDACTED]');
    expectNoSecret(error, wrongKey);
  });
});

describe('429', () => {
  it('is retried with backoff; the budget ends after maxRetries', async () => {
    service.fault({ route: 'status', kind: 'status', httpStatus: 429, body: { error: 'slow down' } });
    const error = await serviceError(client.jobs.status('ep1', 'j1'));
    expect(error).toMatchObject({
      kind: 'RateLimited',
      status: 429,
      retryable: true,
      mayHaveReachedService: false,
    });
    expect(error.retryAfterMs).toBeUndefined();
    expect(service.requests).toHaveLength(FAST_RETRY.maxRetries + 1);
  });

  it('succeeds once the service lets it through, submitting the job once', async () => {
    service.fault({
      route: 'run',
      kind: 'status',
      httpStatus: 429,
      headers: { 'retry-after': '0' },
      times: 2,
    });
    const submitted = await client.jobs.run('ep1', { input: {} });
    expect(submitted.status).toBe('IN_QUEUE');
    expect(service.requests).toHaveLength(3);
    expect(service.jobs.size).toBe(1);
  });

  it('gives the Retry-After to the caller when it is longer than the budget allows', async () => {
    service.fault({ route: 'graphql', kind: 'status', httpStatus: 429, headers: { 'retry-after': '7' } });
    const error = await serviceError(client.endpoints.list());
    expect(error).toMatchObject({
      kind: 'RateLimited',
      retryAfterMs: 7_000,
      retryable: true,
      operation: 'listEndpoints',
    });
    expect(service.requests).toHaveLength(1);
  });

  it('is not retried at all with maxRetries 0', async () => {
    const once = clientFor(service, { retry429: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 } });
    try {
      service.fault({ route: 'rest-delete-volume', kind: 'status', httpStatus: 429 });
      await serviceError(once.rest.deleteNetworkVolume('vol-1'));
      expect(service.requests).toHaveLength(1);
    } finally {
      await once.close();
    }
  });

  it('stops waiting between retries when the caller aborts', async () => {
    const patient = clientFor(service, {
      retry429: { maxRetries: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    try {
      service.fault({ route: 'status', kind: 'status', httpStatus: 429, headers: { 'retry-after': '30' } });
      const controller = new AbortController();
      const pending = patient.jobs.status('ep1', 'j1', { signal: controller.signal });
      while (service.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      const error = await serviceError(pending);
      expect(error).toMatchObject({ kind: 'Aborted', retryable: false });
      expect(service.requests).toHaveLength(1);
    } finally {
      await patient.close();
    }
  });
});

describe('network faults', () => {
  it('a connection dropped before the submit was processed: retryable, and it may have reached the service', async () => {
    // The client cannot tell this from a drop after processing: the request was written either way.
    service.fault({ route: 'run', kind: 'drop-before', times: 1 });
    const error = await serviceError(client.jobs.run('ep1', { input: {} }));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: true });
    expect(service.jobs.size).toBe(0);
    expect((error.cause as { code?: string }).code).toBe('UND_ERR_SOCKET');
  });

  it('a connection dropped after the submit was processed: the job exists, the error says it may', async () => {
    service.fault({ route: 'run', kind: 'drop-after', times: 1 });
    const error = await serviceError(client.jobs.run('ep1', { input: {} }));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: true });
    expect(service.jobs.size).toBe(1);
  });

  it('a dropped connection on a non-submit is retryable and never flagged', async () => {
    service.fault({ route: 'status', kind: 'drop-after', times: 1 });
    const error = await serviceError(client.jobs.status('ep1', 'j1'));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: false });
    service.fault({ route: 'graphql', kind: 'drop-before', times: 1 });
    expect(await serviceError(client.endpoints.list())).toMatchObject({
      kind: 'NetworkError',
      retryable: true,
    });
  });

  it('a GraphQL create and a REST create dropped after processing may have reached the service; an update not', async () => {
    service.fault({ route: 'graphql', kind: 'drop-after', times: 2 });
    const create = await serviceError(
      client.endpoints.save({ name: 'n', templateId: 't', gpuIds: 'ADA_24' }),
    );
    expect(create.mayHaveReachedService).toBe(true);
    const update = await serviceError(
      client.endpoints.save({ id: 'e1', name: 'n', templateId: 't', gpuIds: 'ADA_24' }),
    );
    expect(update.mayHaveReachedService).toBe(false);
    service.fault({ route: 'rest-create-endpoint', kind: 'drop-after', times: 1 });
    const rest = await serviceError(client.rest.createEndpoint({ name: 'n', templateId: 't' }));
    expect(rest).toMatchObject({ operation: 'createEndpoint', mayHaveReachedService: true });
  });

  it('no answer within the headers timeout: a retryable Timeout that may have reached the service', async () => {
    const impatient = clientFor(service, { config: { timeouts: { headersMs: 100 } } });
    try {
      service.fault({ route: 'run', kind: 'hang-after', times: 1 });
      const error = await serviceError(impatient.jobs.run('ep1', { input: {} }));
      expect(error).toMatchObject({ kind: 'Timeout', retryable: true, mayHaveReachedService: true });
      expect(service.jobs.size).toBe(1);
    } finally {
      await impatient.close();
    }
  });

  it("the caller's deadline is a retryable Timeout", async () => {
    service.fault({ route: 'runsync', kind: 'hang-after', times: 1 });
    const error = await serviceError(
      client.jobs.runSync('ep1', { input: {} }, { signal: AbortSignal.timeout(50) }),
    );
    expect(error).toMatchObject({ kind: 'Timeout', retryable: true, mayHaveReachedService: true });
  });

  it('a refused connection never reached the service, even for a submit', async () => {
    const closed = await startFakeService();
    const { apiUrl, graphqlUrl, restUrl } = closed;
    await closed.close();
    const nowhere = createServiceClient({ apiKey: TEST_KEY, apiUrl, graphqlUrl, restUrl });
    try {
      const run = await serviceError(nowhere.jobs.run('ep1', { input: {} }));
      expect(run).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: false });
      expect(run.message).toContain('ECONNREFUSED');
      // The GraphQL address carries the key; it is not in the error.
      const save = await serviceError(
        nowhere.endpoints.save({ name: 'n', templateId: 't', gpuIds: 'ADA_24' }),
      );
      expect(save).toMatchObject({ kind: 'NetworkError', mayHaveReachedService: false });
    } finally {
      await nowhere.close();
    }
  });

  it('after close, calls fail without retry', async () => {
    const closing = clientFor(service);
    await closing.close();
    const error = await serviceError(closing.jobs.health('ep1'));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: false });
  });
});

describe('scrubbing low-level errors', () => {
  it("removes the key from an undici error's message and cause, raw or URL-encoded", () => {
    const url = `http://127.0.0.1:1/graphql?api_key=${encodeURIComponent(TEST_KEY)}`;
    const low = Object.assign(
      new Error(`request to ${url} failed (key ${TEST_KEY})`, { cause: new Error(url) }),
      {
        code: 'UND_ERR_SOCKET',
      },
    );
    const error = errorFromFault(
      { operation: 'saveEndpoint', method: 'POST', url, submit: true, secrets: [TEST_KEY] },
      low,
      true,
      undefined,
    );
    seen.push(error);
    expect(error.message).toContain('saveEndpoint (POST /graphql)');
    expect(error.message).toContain('[REDACTED]');
    expect((error.cause as { code?: string }).code).toBe('UND_ERR_SOCKET');
    expect((error.cause as Error).cause).toBeUndefined();
    expectNoSecret(error);
  });
});
