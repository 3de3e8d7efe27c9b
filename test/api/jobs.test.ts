import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JOB_LIMITS, type ServiceClient, ServiceError, ValidationError } from '../../api';
import { type FakeService, startFakeService, TEST_KEY } from './fake-service';
import { clientFor, failure, waitUntil } from './helpers';

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

function seedJob(status: string, endpointId = 'ep1') {
  const id = `job-${status.toLowerCase()}`;
  service.jobs.set(id, { id, endpointId, status, input: {} });
  return id;
}

describe('job operations: success paths', () => {
  it('run sends the request as given, as JSON, with a Bearer key', async () => {
    const request = {
      input: { prompt: 'hi', n: 2 },
      webhook: 'https://hooks.test/x',
      policy: { ttl: 60_000 },
    };
    const submitted = await client.jobs.run('ep1', request);
    expect(submitted.status).toBe('IN_QUEUE');
    expect(submitted.id).toMatch(/-u1$/);
    const [seen] = service.requests;
    expect(seen?.url).toBe('/v2/ep1/run');
    expect(seen?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(seen?.headers['content-type']).toBe('application/json');
    // No defaults filled in: an explicit executionTimeout would override the endpoint's own.
    expect(seen?.body).toEqual(request);
  });

  it('sends the bare key when configured so', async () => {
    const bare = clientFor(service, { config: { authScheme: 'bare' } });
    try {
      await bare.jobs.health('ep1');
      expect(service.requests[0]?.headers.authorization).toBe(TEST_KEY);
    } finally {
      await bare.close();
    }
  });

  it('runSync returns the final status and passes wait only when given', async () => {
    const done = await client.jobs.runSync('ep1', { input: { x: 1 } }, { wait: 1_000 });
    expect(done).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { x: 1 } },
      delayTime: 12,
      executionTime: 34,
    });
    expect(done.id).toMatch(/^sync-/);
    await client.jobs.runSync('ep1', { input: {} });
    expect(service.requests.map((r) => r.url)).toEqual(['/v2/ep1/runsync?wait=1000', '/v2/ep1/runsync']);
  });

  it('status reads the job and passes ttl', async () => {
    const id = seedJob('FAILED');
    const status = await client.jobs.status('ep1', id, { ttl: 3_600_000 });
    expect(status).toMatchObject({ id, status: 'FAILED', error: 'handler raised' });
    expect(service.requests[0]?.url).toBe(`/v2/ep1/status/${id}?ttl=3600000`);
  });

  it('stream accepts the bare array and the { status, stream } object', async () => {
    const id = seedJob('IN_PROGRESS');
    const fromArray = await client.jobs.stream('ep1', id);
    expect(fromArray.status).toBeUndefined();
    expect(fromArray.chunks[0]?.metrics?.scenario).toBe('stream');
    service.streamShape = 'object';
    const fromObject = await client.jobs.stream('ep1', id);
    expect(fromObject).toEqual({ status: 'IN_PROGRESS', chunks: fromArray.chunks });
  });

  it('cancel, retry, purgeQueue and health', async () => {
    const running = seedJob('IN_PROGRESS');
    expect(await client.jobs.cancel('ep1', running)).toEqual({ id: running, status: 'CANCELLED' });
    const failed = seedJob('FAILED');
    expect(await client.jobs.retry('ep1', failed)).toEqual({ id: failed, status: 'IN_QUEUE' });
    await client.jobs.run('ep1', { input: {} });
    expect(await client.jobs.purgeQueue('ep1')).toEqual({ removed: 2, status: 'completed' });
    const health = await client.jobs.health('ep1');
    expect(health.jobs.inQueue).toBe(4);
    expect(health.workers).toEqual({ idle: 1, running: 2, throttled: 0, unhealthy: 0 });
    // Bodiless POSTs carry no JSON content-type (servers refuse an empty body announced as JSON).
    expect(service.requests.find((r) => r.route === 'cancel')?.headers['content-type']).toBeUndefined();
  });
});

describe('job operations: checks before sending', () => {
  async function refused(promise: Promise<unknown>, field: string, rule: RegExp) {
    const error = await failure(promise);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect((error as ValidationError).rule).toMatch(rule);
    expect(service.requests).toHaveLength(0);
  }

  it('refuses policy values out of bounds and unknown fields', async () => {
    await refused(
      client.jobs.run('ep1', { input: {}, policy: { executionTimeout: 4_999 } }),
      'policy.executionTimeout',
      /between 5000 and 604800000/,
    );
    await refused(
      client.jobs.run('ep1', { input: {}, policy: { ttl: 7 * 24 * 3600 * 1000 + 1 } }),
      'policy.ttl',
      /between 10000/,
    );
    await refused(client.jobs.run('ep1', { input: {}, policy: { ttl: 20_000.5 } }), 'policy.ttl', /integer/);
    await refused(client.jobs.run('ep1', { input: {}, webhook: 'hooks' }), 'webhook', /URL/);
    await refused(client.jobs.run('ep1', { input: 'text' } as never), 'input', /object/);
    await refused(
      client.jobs.run('ep1', { input: {}, priority: 1 } as never),
      '',
      /unknown field\(s\) priority/,
    );
    await refused(client.jobs.run('ep1', { input: { n: 10n } }), 'input', /JSON/);
  });

  it('refuses wait outside 1000..300000 ms and ttl outside its bounds', async () => {
    await refused(
      client.jobs.runSync('ep1', { input: {} }, { wait: 999 }),
      'wait',
      /between 1000 and 300000/,
    );
    await refused(
      client.jobs.runSync('ep1', { input: {} }, { wait: 300_001 }),
      'wait',
      /between 1000 and 300000/,
    );
    await refused(client.jobs.status('ep1', 'j', { ttl: 9_999 }), 'ttl', /between 10000/);
  });

  // {"input":{"data":"…"}}: 22 bytes around the data.
  const overhead = JSON.stringify({ input: { data: '' } }).length;
  const sized = (bytes: number) => ({ input: { data: 'x'.repeat(bytes - overhead) } });

  it.each([
    ['run', JOB_LIMITS.runMaxBytes],
    ['runSync', JOB_LIMITS.runSyncMaxBytes],
  ] as const)('%s sends a body of exactly its limit and refuses one byte more', async (operation, limit) => {
    expect(limit).toBe(operation === 'run' ? 10_000_000 : 20_000_000);
    await client.jobs[operation]('ep1', sized(limit));
    expect(service.requests[0]?.bodyBytes).toBe(limit);
    service.reset();
    await refused(
      client.jobs[operation]('ep1', sized(limit + 1)),
      'payload',
      new RegExp(`${limit + 1} bytes.*at most ${limit}`),
    );
  });

  it('measures bytes, not characters', async () => {
    const chars = (JOB_LIMITS.runMaxBytes - overhead) / 2 + 1;
    await refused(client.jobs.run('ep1', { input: { data: 'é'.repeat(chars) } }), 'payload', /bytes/);
  });

  it.each(['', '.', '..', 'a/b', '../health', 'a\\b', '/'])(
    'refuses the id %j that would leave its path segment',
    async (id) => {
      await refused(client.jobs.status('ep1', id), 'jobId', /empty|'\.'|slash/);
      await refused(client.jobs.cancel(id, 'job'), 'endpointId', /empty|'\.'|slash/);
      await refused(client.jobs.run(id, { input: {} }), 'endpointId', /empty|'\.'|slash/);
    },
  );

  it('encodes every other id so that it arrives as one segment, unchanged', async () => {
    const endpointId = 'ep 1?x=%2F#';
    const jobId = '..a b%2e%2e?ttl=1#é';
    service.jobs.set(jobId, { id: jobId, endpointId, status: 'IN_QUEUE', input: {} });
    const status = await client.jobs.status(endpointId, jobId);
    expect(status.id).toBe(jobId);
    expect(service.requests[0]?.params).toEqual({ endpointId, jobId });
    expect(service.requests[0]?.query).toEqual({});
  });
});

describe('job operations: rate limits and cancellation', () => {
  it('keeps the configured number of requests in flight at once, and no more', async () => {
    const limited = clientFor(service, { rateLimits: { cancel: { perTenSeconds: 1000, concurrent: 2 } } });
    try {
      // The service holds each cancel unanswered until the test lets it go.
      service.fault({ route: 'cancel', kind: 'hold' });
      const ids = ['a', 'b', 'c', 'd', 'e'].map((s) => seedJob(`IN_QUEUE_${s}`));
      const cancels = Promise.all(ids.map((id) => limited.jobs.cancel('ep1', id)));
      const cancelsSeen = () => service.requests.filter((r) => r.route === 'cancel').length;
      // Two requests reach the service and wait there together; the limiter sends no third while
      // they are unanswered (it cannot: only an answer frees a slot).
      await waitUntil(() => service.held() === 2);
      expect(cancelsSeen()).toBe(2);
      // Each answer frees a slot for the next request, and never more than two wait together.
      service.releaseHeld();
      await waitUntil(() => cancelsSeen() === 4 && service.held() === 2);
      service.releaseHeld();
      await waitUntil(() => cancelsSeen() === 5 && service.held() === 1);
      service.releaseHeld();
      await cancels;
      expect(cancelsSeen()).toBe(5);
      expect(service.maxInFlight.cancel).toBe(2);
    } finally {
      await limited.close();
    }
  });

  it('sends a status that sets a ttl ahead of plain looks waiting in the same lane', async () => {
    const limited = clientFor(service, { rateLimits: { status: { perTenSeconds: 1000, concurrent: 1 } } });
    try {
      service.fault({ route: 'status', kind: 'hold' });
      const id = seedJob('IN_PROGRESS');
      // The first look holds the lane's only slot; two looks, then an extension, queue behind it.
      const first = limited.jobs.status('ep1', id);
      await waitUntil(() => service.held() === 1);
      const looks = [limited.jobs.status('ep1', id), limited.jobs.status('ep1', id)];
      const extension = limited.jobs.status('ep1', id, { ttl: 3_600_000 });
      const urls = () => service.requests.filter((r) => r.route === 'status').map((r) => r.url);
      service.releaseHeld();
      await waitUntil(() => urls().length === 2 && service.held() === 1);
      expect(urls()[1]).toBe(`/v2/ep1/status/${id}?ttl=3600000`);
      service.clearFaults();
      service.releaseHeld();
      await Promise.all([first, extension, ...looks]);
      expect(urls().slice(2)).toEqual([`/v2/ep1/status/${id}`, `/v2/ep1/status/${id}`]);
    } finally {
      await limited.close();
    }
  });

  it('holds the third purge of a 10-second window (spec default) until the caller gives up', async () => {
    const fresh = clientFor(service);
    try {
      await fresh.jobs.purgeQueue('ep1');
      await fresh.jobs.purgeQueue('ep1');
      const error = await failure(fresh.jobs.purgeQueue('ep1', { signal: AbortSignal.timeout(50) }));
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).kind).toBe('Timeout');
      expect((error as ServiceError).mayHaveReachedService).toBe(false);
      expect(service.requests).toHaveLength(2);
      // Another endpoint has a window of its own.
      await fresh.jobs.purgeQueue('ep2');
    } finally {
      await fresh.close();
    }
  });

  it('does not limit at all when rate limits are off', async () => {
    const unlimited = clientFor(service, { rateLimits: false });
    try {
      for (let i = 0; i < 5; i++) await unlimited.jobs.purgeQueue('ep1');
      expect(service.requests).toHaveLength(5);
    } finally {
      await unlimited.close();
    }
  });

  it('sends nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = (await failure(
      client.jobs.run('ep1', { input: {} }, { signal: controller.signal }),
    )) as ServiceError;
    expect(error.kind).toBe('Aborted');
    expect(error.retryable).toBe(false);
    expect(error.mayHaveReachedService).toBe(false);
    expect(service.requests).toHaveLength(0);
  });

  it('aborts a request in flight; a submit that was sent may have been processed', async () => {
    service.fault({ route: 'run', kind: 'hang-after' });
    const controller = new AbortController();
    const pending = client.jobs.run('ep1', { input: {} }, { signal: controller.signal });
    while (service.processed.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const error = (await failure(pending)) as ServiceError;
    expect(error.kind).toBe('Aborted');
    expect(error.mayHaveReachedService).toBe(true);
    expect(service.jobs.size).toBe(1);
  });
});
