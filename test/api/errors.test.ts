import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient, ServiceError } from '../../api';
import { errorFromFault } from '../../api/classify';
import {
  clientFor,
  expectNoSecret,
  FAST_RETRY,
  failure,
  startService,
  TEST_KEY,
  type TestService,
  waitUntil,
} from './helpers';
import { type OffSpecService, startOffSpecService } from './off-spec-service';

let service: TestService;
let client: ServiceClient;
let endpoint: string;
// Every error of this file is checked for the key at the end, whatever the test looked at.
const seen: Error[] = [];

beforeAll(async () => {
  service = await startService();
  client = clientFor(service);
  endpoint = service.control.createEndpoint(TEST_KEY, { name: 'errors', templateId: 'echo' }).id;
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

const jobsCreated = () => service.control.jobs(endpoint).length;

describe('HTTP errors', () => {
  it.each([
    [400, 'BadRequest', false],
    [404, 'NotFound', false],
    [500, 'ServerError', true],
    [503, 'ServerError', true],
  ] as const)('%d on status is %s (retryable: %s)', async (httpStatus, kind, retryable) => {
    service.control.injectFault({ operation: 'status', kind: 'status', httpStatus });
    const error = await serviceError(client.jobs.status(endpoint, 'j1'));
    expect(error).toMatchObject({
      kind,
      status: httpStatus,
      retryable,
      operation: 'status',
      mayHaveReachedService: false,
    });
    expect(error.message).toContain(`injected fault: HTTP ${httpStatus}`);
    expect(error.message).toContain(`GET /v2/${endpoint}/status/j1`);
    expect(error.bodyExcerpt).toBe(`{"error":"injected fault: HTTP ${httpStatus}"}`);
    expect(service.wire.requests).toHaveLength(1);
  });

  it('a real 404: the job is unknown', async () => {
    const error = await serviceError(client.jobs.status(endpoint, 'gone'));
    expect(error).toMatchObject({ kind: 'NotFound', status: 404, retryable: false });
    expect(error.message).toContain('job gone not found');
  });

  it('a 500 on a submit may have created the job; on a non-submit it says nothing of the kind', async () => {
    service.control.injectFault({ operation: 'run', kind: 'status', httpStatus: 500 });
    const error = await serviceError(client.jobs.run(endpoint, { input: {} }));
    expect(error).toMatchObject({ kind: 'ServerError', retryable: true, mayHaveReachedService: true });
    service.control.injectFault({ operation: 'health', kind: 'status', httpStatus: 500 });
    const health = await serviceError(client.jobs.health(endpoint));
    expect(health).toMatchObject({ kind: 'ServerError', retryable: true, mayHaveReachedService: false });
  });

  it('keeps only a short excerpt of a long body', async () => {
    // The service names the endpoint it does not know: a 500-character id makes a long 404 body.
    const long = 'e'.repeat(500);
    const error = await serviceError(client.jobs.status(long, 'j1'));
    expect(error).toMatchObject({ kind: 'NotFound', status: 404 });
    expect(error.bodyExcerpt!.length).toBeGreaterThan(400);
    expect(error.bodyExcerpt!.length).toBeLessThanOrEqual(501);
    // The message names the call (with its long path) and a shortened line of the body, not all of it.
    const where = `status (GET /v2/${long}/status/j1)`;
    expect(error.message.startsWith(where)).toBe(true);
    expect(error.message.length - where.length).toBeLessThan(400);
    expect(error.message).not.toContain(`${long} not found`);
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

  it('a 2xx with a body that is not the spec is an InvalidResponse; for a submit it was processed', async () => {
    offSpec.answer = () => ({ status: 200, body: { jobId: 'x' } });
    const error = await serviceError(offSpecClient.jobs.run('ep1', { input: {} }));
    expect(error).toMatchObject({
      kind: 'InvalidResponse',
      status: 200,
      retryable: false,
      mayHaveReachedService: true,
    });
    expect(error.message).toContain('id');
  });

  it('a 429 without Retry-After is retried on the backoff alone, until the budget ends', async () => {
    let answered = 0;
    offSpec.answer = () => {
      answered++;
      return { status: 429, body: { error: 'slow down' } };
    };
    const error = await serviceError(offSpecClient.jobs.status('ep1', 'j1'));
    expect(error).toMatchObject({ kind: 'RateLimited', status: 429, retryable: true });
    expect(error.retryAfterMs).toBeUndefined();
    expect(answered).toBe(FAST_RETRY.maxRetries + 1);
  });

  describe('401 that echoes the key: the key is never repeated', () => {
    const wrongKey = 'sk_WRONG-key.0987654321';
    let wrong: ServiceClient;
    beforeAll(() => {
      wrong = createServiceClient({
        apiKey: wrongKey,
        apiUrl: offSpec.apiUrl,
        graphqlUrl: offSpec.graphqlUrl,
        restUrl: offSpec.restUrl,
      });
      // Echoes the key it was given (and for GraphQL the URL holding it), as careless services do.
      offSpec.answer = (request) => {
        const presented = request.headers.authorization ?? request.url ?? '';
        return { status: 401, body: { error: `invalid api key ${presented} for ${request.url}` } };
      };
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
      expect(error.message).toContain('invalid api key');
      expect(error.message).toContain('[REDACTED]');
      expectNoSecret(error, wrongKey);
    });
  });
});

describe('401 from the service', () => {
  it.each([
    ['job operations', (wrong: ServiceClient) => wrong.jobs.run(endpoint, { input: {} })],
    ['GraphQL', (wrong: ServiceClient) => wrong.endpoints.list()],
    ['REST', (wrong: ServiceClient) => wrong.rest.deleteNetworkVolume('vol1')],
  ])('%s: Unauthorized, not retried, nothing processed', async (_, call) => {
    const wrongKey = 'sk_WRONG-key.0987654321';
    const wrong = clientFor(service, { config: { apiKey: wrongKey } });
    try {
      const error = await serviceError(call(wrong));
      expect(error).toMatchObject({ kind: 'Unauthorized', status: 401, retryable: false });
      expectNoSecret(error, wrongKey);
      expect(service.wire.requests).toHaveLength(1);
      expect(jobsCreated()).toBe(0);
    } finally {
      await wrong.close();
    }
  });
});

describe('429', () => {
  it('is retried with backoff; the budget ends after maxRetries', async () => {
    service.control.injectFault({
      operation: 'status',
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 0,
    });
    const error = await serviceError(client.jobs.status(endpoint, 'j1'));
    expect(error).toMatchObject({
      kind: 'RateLimited',
      status: 429,
      retryable: true,
      mayHaveReachedService: false,
      retryAfterMs: 0,
    });
    expect(service.wire.requests).toHaveLength(FAST_RETRY.maxRetries + 1);
  });

  it('succeeds once the service lets it through, submitting the job once', async () => {
    service.control.injectFault({
      operation: 'run',
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 0,
      times: 2,
    });
    const submitted = await client.jobs.run(endpoint, { input: {} });
    expect(submitted.status).toBe('IN_QUEUE');
    expect(service.wire.requests.map((request) => request.status)).toEqual([429, 429, 200]);
    expect(service.control.submissions(endpoint)).toBe(1);
    expect(service.control.jobs(endpoint).map((job) => job.id)).toEqual([submitted.id]);
  });

  it('gives the Retry-After to the caller when it is longer than the budget allows', async () => {
    service.control.injectFault({
      operation: 'graphql',
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 7,
    });
    const error = await serviceError(client.endpoints.list());
    expect(error).toMatchObject({
      kind: 'RateLimited',
      retryAfterMs: 7_000,
      retryable: true,
      operation: 'listEndpoints',
    });
    expect(service.wire.requests).toHaveLength(1);
  });

  it('is not retried at all with maxRetries 0', async () => {
    const once = clientFor(service, { retry429: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 1 } });
    try {
      service.control.injectFault({
        operation: 'rest-delete-volume',
        kind: 'status',
        httpStatus: 429,
        retryAfterSeconds: 0,
      });
      await serviceError(once.rest.deleteNetworkVolume('vol1'));
      expect(service.wire.requests).toHaveLength(1);
    } finally {
      await once.close();
    }
  });

  it('stops waiting between retries when the caller aborts', async () => {
    const patient = clientFor(service, {
      retry429: { maxRetries: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    try {
      service.control.injectFault({
        operation: 'status',
        kind: 'status',
        httpStatus: 429,
        retryAfterSeconds: 30,
      });
      const controller = new AbortController();
      const pending = patient.jobs.status(endpoint, 'j1', { signal: controller.signal });
      await service.wire.sent(1);
      await waitUntil('the 429 answered', () => service.wire.requests[0]?.status === 429);
      controller.abort();
      const error = await serviceError(pending);
      expect(error).toMatchObject({ kind: 'Aborted', retryable: false });
      expect(service.wire.requests).toHaveLength(1);
    } finally {
      await patient.close();
    }
  });
});

describe('network faults', () => {
  it('a connection dropped before the submit was processed: retryable, and it may have reached the service', async () => {
    // The client cannot tell this from a drop after processing: the request was written either way.
    service.control.injectFault({ operation: 'run', kind: 'drop-before', times: 1 });
    const error = await serviceError(client.jobs.run(endpoint, { input: {} }));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: true });
    expect(service.control.submissions(endpoint)).toBe(0);
    expect(jobsCreated()).toBe(0);
    expect((error.cause as { code?: string }).code).toBe('UND_ERR_SOCKET');
  });

  it('a connection dropped after the submit was processed: the job exists, the error says it may', async () => {
    service.control.injectFault({ operation: 'run', kind: 'drop-after', times: 1 });
    const error = await serviceError(client.jobs.run(endpoint, { input: {} }));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: true });
    expect(service.control.submissions(endpoint)).toBe(1);
    expect(jobsCreated()).toBe(1);
  });

  it('a dropped connection on a non-submit is retryable and never flagged', async () => {
    service.control.injectFault({ operation: 'status', kind: 'drop-after', times: 1 });
    const error = await serviceError(client.jobs.status(endpoint, 'j1'));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: true, mayHaveReachedService: false });
    service.control.injectFault({ operation: 'graphql', kind: 'drop-before', times: 1 });
    expect(await serviceError(client.endpoints.list())).toMatchObject({
      kind: 'NetworkError',
      retryable: true,
      mayHaveReachedService: false,
    });
  });

  it('a GraphQL create and a REST create dropped after processing may have reached the service; an update not', async () => {
    const before = service.control.endpoints(TEST_KEY).length;
    service.control.injectFault({ operation: 'graphql', kind: 'drop-after', times: 2 });
    const create = await serviceError(
      client.endpoints.save({ name: 'n', templateId: 'echo', gpuIds: 'ADA_24' }),
    );
    expect(create.mayHaveReachedService).toBe(true);
    const update = await serviceError(
      client.endpoints.save({ id: endpoint, name: 'errors', templateId: 'echo', gpuIds: 'ADA_24' }),
    );
    expect(update.mayHaveReachedService).toBe(false);
    service.control.injectFault({ operation: 'rest-create-endpoint', kind: 'drop-after', times: 1 });
    const rest = await serviceError(
      client.rest.createEndpoint({ name: 'n', templateId: 'echo', gpuTypeIds: ['NVIDIA L4'] }),
    );
    expect(rest).toMatchObject({ operation: 'createEndpoint', mayHaveReachedService: true });
    // Both creates did happen although the client heard nothing.
    expect(service.control.endpoints(TEST_KEY)).toHaveLength(before + 2);
  });

  it('no answer within the headers timeout: a retryable Timeout that may have reached the service', async () => {
    const impatient = clientFor(service, { config: { timeouts: { headers: 100 } } });
    // Held until removed: the answer never comes within the client's timeout, however slow the machine.
    const release = service.control.injectFault({
      operation: 'run',
      kind: 'slow',
      delayMs: 600_000,
      times: 1,
    });
    try {
      const error = await serviceError(impatient.jobs.run(endpoint, { input: {} }));
      expect(error).toMatchObject({ kind: 'Timeout', retryable: true, mayHaveReachedService: true });
      expect(jobsCreated()).toBe(1);
    } finally {
      release();
      await impatient.close();
    }
  });

  it("the caller's deadline is a retryable Timeout", async () => {
    const release = service.control.injectFault({
      operation: 'runsync',
      kind: 'slow',
      delayMs: 600_000,
      times: 1,
    });
    try {
      const error = await serviceError(
        client.jobs.runSync(endpoint, { input: {} }, { signal: AbortSignal.timeout(50) }),
      );
      expect(error).toMatchObject({ kind: 'Timeout', retryable: true, mayHaveReachedService: true });
    } finally {
      release();
    }
  });

  it('a refused connection never reached the service, even for a submit', async () => {
    // A port that was just free and is closed again: nothing listens there.
    const listener = createServer();
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as { port: number };
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    const origin = `http://127.0.0.1:${port}`;
    const nowhere = createServiceClient({
      apiKey: TEST_KEY,
      apiUrl: `${origin}/v2`,
      graphqlUrl: `${origin}/graphql`,
      restUrl: `${origin}/v1`,
    });
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
    const error = await serviceError(closing.jobs.health(endpoint));
    expect(error).toMatchObject({ kind: 'NetworkError', retryable: false });
    expect(service.wire.requests).toHaveLength(0);
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
