import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { JOB_LIMITS, type ServiceClient, ServiceError, ValidationError } from '../../api';
import { clientFor, failure, startService, TEST_KEY, type TestService, waitUntil } from './helpers';

let service: TestService;
let client: ServiceClient;
/** Completes every job at once. */
let echo: string;
/** No workers: its jobs stay IN_QUEUE. */
let queued: string;
/** Does what the job's input says (fail, hang...). */
let scripted: string;

beforeAll(async () => {
  service = await startService();
  client = clientFor(service);
  const endpoint = (templateId: string, workersMax?: number) =>
    service.control.createEndpoint(TEST_KEY, {
      name: `jobs-${templateId}`,
      templateId,
      ...(workersMax === undefined ? {} : { workersMax }),
    }).id;
  echo = endpoint('echo');
  queued = endpoint('echo', 0);
  scripted = endpoint('scripted');
});
afterAll(async () => {
  await client.close();
  await service.close();
});
beforeEach(() => service.reset());

const statusOf = (jobId: string) => service.control.job(jobId)?.status;

describe('job operations: success paths', () => {
  it('run sends the request as given, as JSON, with a Bearer key', async () => {
    const request = {
      input: { prompt: 'hi', n: 2 },
      webhook: 'https://hooks.test/x',
      policy: { ttl: 60_000 },
    };
    const submitted = await client.jobs.run(queued, request);
    expect(submitted.status).toBe('IN_QUEUE');
    expect(submitted.id).toMatch(/-u1$/);
    const [seen] = service.wire.requests;
    expect(seen?.path).toBe(`/v2/${queued}/run`);
    expect(seen?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(seen?.headers['content-type']).toBe('application/json');
    // No defaults filled in: an explicit executionTimeout would override the endpoint's own.
    expect(seen?.json()).toEqual(request);
    expect(service.control.job(submitted.id)).toMatchObject({
      input: request.input,
      webhook: request.webhook,
      policy: { ttl: 60_000 },
    });
  });

  it('sends the bare key when configured so', async () => {
    const bare = clientFor(service, { config: { authScheme: 'bare' } });
    try {
      await bare.jobs.health(queued);
      expect(service.wire.requests[0]?.headers.authorization).toBe(TEST_KEY);
    } finally {
      await bare.close();
    }
  });

  it('runSync returns the final status and passes wait only when given', async () => {
    const done = await client.jobs.runSync(echo, { input: { x: 1 } }, { wait: 1_000 });
    expect(done).toMatchObject({ status: 'COMPLETED', output: { x: 1 }, delayTime: 0, executionTime: 0 });
    expect(done.id).toMatch(/^sync-/);
    await client.jobs.runSync(echo, { input: {} });
    expect(service.wire.requests.map((r) => r.path)).toEqual([
      `/v2/${echo}/runsync?wait=1000`,
      `/v2/${echo}/runsync`,
    ]);
  });

  it('status reads the job and passes ttl', async () => {
    const failed = await client.jobs.runSync(scripted, { input: { fail: 'handler raised' } });
    expect(failed.status).toBe('FAILED');
    service.wire.clear();
    const status = await client.jobs.status(scripted, failed.id, { ttl: 3_600_000 });
    expect(status).toMatchObject({ id: failed.id, status: 'FAILED', error: 'handler raised' });
    expect(service.wire.requests[0]?.path).toBe(`/v2/${scripted}/status/${failed.id}?ttl=3600000`);
    const job = service.control.job(failed.id);
    expect(job && job.ttlDeadline - job.submittedAt).toBe(3_600_000);
  });

  it('stream accepts the bare array and the { status, stream } object', async () => {
    const streaming = (emulatorClient: ServiceClient, endpointId: string) =>
      emulatorClient.jobs.run(endpointId, { input: { text: 'Hel lo', tokenDelayMs: 100 } });
    const streamer = service.control.createEndpoint(TEST_KEY, {
      name: 'jobs-stream',
      templateId: 'stream',
    }).id;
    const { id } = await streaming(client, streamer);
    service.control.advance(1_000);
    const fromArray = await client.jobs.stream(streamer, id);
    expect(fromArray.status).toBeUndefined();
    expect(fromArray.chunks.map((chunk) => chunk.output)).toEqual([
      { input_tokens: expect.any(Number), output_tokens: 1, text: ['Hel '] },
      { input_tokens: expect.any(Number), output_tokens: 2, text: ['lo'] },
    ]);
    expect(fromArray.chunks[1]?.metrics?.stream_index).toBe(1);

    const objects = await startService({ streamShape: 'object' });
    const objectClient = clientFor(objects);
    try {
      const other = objects.control.createEndpoint(TEST_KEY, {
        name: 'jobs-stream',
        templateId: 'stream',
      }).id;
      const job = await streaming(objectClient, other);
      objects.control.advance(1_000);
      const fromObject = await objectClient.jobs.stream(other, job.id);
      expect(fromObject.status).toBe('COMPLETED');
      expect(fromObject.chunks.map((chunk) => chunk.output)).toEqual(
        fromArray.chunks.map((chunk) => chunk.output),
      );
    } finally {
      await objectClient.close();
      await objects.close();
    }
  });

  it('cancel, retry, purgeQueue and health', async () => {
    const hanging = await client.jobs.run(scripted, { input: { hang: true } });
    expect(await client.jobs.cancel(scripted, hanging.id)).toEqual({ id: hanging.id, status: 'CANCELLED' });
    expect(statusOf(hanging.id)).toBe('CANCELLED');

    const failed = await client.jobs.runSync(scripted, { input: { failTimes: 1, output: 'ok' } });
    expect(failed.status).toBe('FAILED');
    expect(await client.jobs.retry(scripted, failed.id)).toEqual({ id: failed.id, status: 'IN_QUEUE' });
    expect(service.control.job(failed.id)?.retries).toBe(1);

    await client.jobs.run(queued, { input: {} });
    await client.jobs.run(queued, { input: {} });
    const health = await client.jobs.health(queued);
    expect(health.jobs).toMatchObject({ inQueue: 2, inProgress: 0, completed: 0 });
    expect(health.workers).toMatchObject({ idle: 0, running: 0, throttled: 0, unhealthy: 0 });
    expect(await client.jobs.purgeQueue(queued)).toEqual({ removed: 2, status: 'completed' });
    expect((await client.jobs.health(queued)).jobs.inQueue).toBe(0);
    // Bodiless POSTs carry no JSON content-type (servers refuse an empty body announced as JSON).
    const cancel = service.wire.requests.find((r) => r.path.includes('/cancel/'));
    expect(cancel?.headers['content-type']).toBeUndefined();
  });
});

describe('job operations: checks before sending', () => {
  async function refused(promise: Promise<unknown>, field: string, rule: RegExp) {
    const error = await failure(promise);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
    expect((error as ValidationError).rule).toMatch(rule);
    expect(service.wire.requests).toHaveLength(0);
  }

  it('refuses policy values out of bounds and unknown fields', async () => {
    await refused(
      client.jobs.run(queued, { input: {}, policy: { executionTimeout: 4_999 } }),
      'policy.executionTimeout',
      /between 5000 and 604800000/,
    );
    await refused(
      client.jobs.run(queued, { input: {}, policy: { ttl: 7 * 24 * 3600 * 1000 + 1 } }),
      'policy.ttl',
      /between 10000/,
    );
    await refused(client.jobs.run(queued, { input: {}, policy: { ttl: 20_000.5 } }), 'policy.ttl', /integer/);
    await refused(client.jobs.run(queued, { input: {}, webhook: 'hooks' }), 'webhook', /URL/);
    await refused(client.jobs.run(queued, { input: 'text' } as never), 'input', /object/);
    await refused(
      client.jobs.run(queued, { input: {}, priority: 1 } as never),
      '',
      /unknown field\(s\) priority/,
    );
    await refused(client.jobs.run(queued, { input: { n: 10n } }), 'input', /JSON/);
  });

  it('refuses wait outside 1000..300000 ms and ttl outside its bounds', async () => {
    await refused(
      client.jobs.runSync(queued, { input: {} }, { wait: 999 }),
      'wait',
      /between 1000 and 300000/,
    );
    await refused(
      client.jobs.runSync(queued, { input: {} }, { wait: 300_001 }),
      'wait',
      /between 1000 and 300000/,
    );
    await refused(client.jobs.status(queued, 'j', { ttl: 9_999 }), 'ttl', /between 10000/);
  });

  // {"input":{"data":"…"}}: 22 bytes around the data.
  const overhead = JSON.stringify({ input: { data: '' } }).length;
  const sized = (bytes: number) => ({ input: { data: 'x'.repeat(bytes - overhead) } });

  it.each([
    ['run', JOB_LIMITS.runMaxBytes],
    ['runSync', JOB_LIMITS.runSyncMaxBytes],
  ] as const)('%s sends a body of exactly its limit and refuses one byte more', async (operation, limit) => {
    expect(limit).toBe(operation === 'run' ? 10_000_000 : 20_000_000);
    // A job that fails at once: runSync answers without echoing the 20 MB input back.
    const failing = service.control.createEndpoint(TEST_KEY, { name: 'jobs-fail', templateId: 'fail' }).id;
    const answer = await client.jobs[operation](failing, sized(limit));
    expect(service.wire.requests[0]?.bodyBytes).toBe(limit);
    expect(statusOf(answer.id)).toBeDefined();
    service.reset();
    await refused(
      client.jobs[operation](failing, sized(limit + 1)),
      'payload',
      new RegExp(`${limit + 1} bytes.*at most ${limit}`),
    );
  });

  it('measures bytes, not characters', async () => {
    const chars = (JOB_LIMITS.runMaxBytes - overhead) / 2 + 1;
    await refused(client.jobs.run(queued, { input: { data: 'é'.repeat(chars) } }), 'payload', /bytes/);
  });

  it.each(['', '.', '..', 'a/b', '../health', 'a\\b', '/'])(
    'refuses the id %j that would leave its path segment',
    async (id) => {
      await refused(client.jobs.status(queued, id), 'jobId', /empty|'\.'|slash/);
      await refused(client.jobs.cancel(id, 'job'), 'endpointId', /empty|'\.'|slash/);
      await refused(client.jobs.run(id, { input: {} }), 'endpointId', /empty|'\.'|slash/);
    },
  );

  it('encodes every other id so that it arrives as one segment, unchanged', async () => {
    // The service names the id it could not find: it read back exactly what was given, with no query.
    const jobId = '..a b%2e%2e?ttl=1#é';
    const job = (await failure(client.jobs.status(queued, jobId))) as ServiceError;
    expect(job).toMatchObject({ kind: 'NotFound', status: 404 });
    expect(job.bodyExcerpt).toContain(`job ${jobId} not found`);
    const endpointId = 'ep 1?x=%2F#';
    const endpoint = (await failure(client.jobs.status(endpointId, 'j'))) as ServiceError;
    expect(endpoint.bodyExcerpt).toContain(`endpoint ${endpointId} not found`);
    expect(service.wire.requests.map((r) => r.path)).toEqual([
      `/v2/${queued}/status/${encodeURIComponent(jobId)}`,
      `/v2/${encodeURIComponent(endpointId)}/status/j`,
    ]);
  });
});

describe('job operations: rate limits and cancellation', () => {
  /** Holds the answers of the next `times` processed cancels until the returned function is called. */
  const holdAnswers = (operation: 'cancel' | 'status' | 'run', times?: number) =>
    service.control.injectFault({ operation, kind: 'slow', delayMs: 600_000, ...(times ? { times } : {}) });

  it('keeps the configured number of requests in flight at once, and no more', async () => {
    const limited = clientFor(service, { rateLimits: { cancel: { perTenSeconds: 1000, concurrent: 2 } } });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await client.jobs.run(queued, { input: { i } })).id);
      service.wire.clear();
      const cancelled = () => ids.filter((id) => statusOf(id) === 'CANCELLED').length;
      // The service processes each cancel and holds its answer until the test lets it go.
      let release = holdAnswers('cancel', 2);
      const cancels = Promise.all(ids.map((id) => limited.jobs.cancel(queued, id)));
      // Two requests reach the service and wait there together; the limiter sends no third while
      // they are unanswered (it cannot: only an answer frees a slot).
      await waitUntil('two cancels processed', () => cancelled() === 2);
      expect(service.wire.requests).toHaveLength(2);
      expect(service.wire.inFlight()).toBe(2);
      // Each answer frees a slot for the next request, and never more than two wait together.
      let previous = release;
      release = holdAnswers('cancel', 2);
      previous();
      await waitUntil('four cancels processed', () => cancelled() === 4);
      expect(service.wire.requests).toHaveLength(4);
      previous = release;
      release = holdAnswers('cancel', 1);
      previous();
      await waitUntil('five cancels processed', () => cancelled() === 5);
      release();
      await cancels;
      expect(service.wire.requests).toHaveLength(5);
      expect(service.wire.maxInFlight).toBe(2);
    } finally {
      await limited.close();
    }
  });

  it('sends a status that sets a ttl ahead of plain looks waiting in the same lane', async () => {
    const limited = clientFor(service, { rateLimits: { status: { perTenSeconds: 1000, concurrent: 1 } } });
    try {
      const { id } = await client.jobs.run(queued, { input: {} });
      service.wire.clear();
      const releaseFirst = holdAnswers('status', 1);
      // The first call holds the lane's only slot (the service has processed it: the ttl it set is
      // there) while two looks, then an extension, queue behind it.
      const ttlOf = () => {
        const job = service.control.job(id);
        return job && job.ttlDeadline - job.submittedAt;
      };
      const first = limited.jobs.status(queued, id, { ttl: 1_800_000 });
      await waitUntil('the first call processed', () => ttlOf() === 1_800_000);
      const looks = [limited.jobs.status(queued, id), limited.jobs.status(queued, id)];
      const extension = limited.jobs.status(queued, id, { ttl: 3_600_000 });
      const releaseSecond = holdAnswers('status', 1);
      releaseFirst();
      await waitUntil('the extension processed', () => ttlOf() === 3_600_000);
      expect(service.wire.requests[1]?.path).toBe(`/v2/${queued}/status/${id}?ttl=3600000`);
      releaseSecond();
      await Promise.all([first, extension, ...looks]);
      expect(service.wire.requests.slice(2).map((r) => r.path)).toEqual([
        `/v2/${queued}/status/${id}`,
        `/v2/${queued}/status/${id}`,
      ]);
    } finally {
      await limited.close();
    }
  });

  it('sends a look marked urgent ahead of plain looks waiting in the same lane', async () => {
    const limited = clientFor(service, { rateLimits: { status: { perTenSeconds: 1000, concurrent: 1 } } });
    try {
      const { id } = await client.jobs.run(queued, { input: {} });
      const { id: urgentId } = await client.jobs.run(queued, { input: {} });
      service.wire.clear();
      const releaseFirst = holdAnswers('status', 1);
      // The first look holds the lane's only slot while two plain looks, then an urgent one, queue.
      const first = limited.jobs.status(queued, id);
      await waitUntil('the first look on the wire', () => service.wire.requests.length === 1);
      const looks = [limited.jobs.status(queued, id), limited.jobs.status(queued, id)];
      const urgent = limited.jobs.status(queued, urgentId, { urgent: true });
      releaseFirst();
      await Promise.all([first, urgent, ...looks]);
      expect(service.wire.requests.map((r) => r.path)).toEqual([
        `/v2/${queued}/status/${id}`,
        `/v2/${queued}/status/${urgentId}`,
        `/v2/${queued}/status/${id}`,
        `/v2/${queued}/status/${id}`,
      ]);
    } finally {
      await limited.close();
    }
  });

  it('holds the third purge of a 10-second window (spec default) until the caller gives up', async () => {
    const fresh = clientFor(service);
    try {
      await fresh.jobs.purgeQueue(queued);
      await fresh.jobs.purgeQueue(queued);
      const error = await failure(fresh.jobs.purgeQueue(queued, { signal: AbortSignal.timeout(50) }));
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).kind).toBe('Timeout');
      expect((error as ServiceError).mayHaveReachedService).toBe(false);
      expect(service.wire.requests).toHaveLength(2);
      // Another endpoint has a window of its own.
      await fresh.jobs.purgeQueue(echo);
      expect(service.wire.requests).toHaveLength(3);
    } finally {
      await fresh.close();
    }
  });

  it('does not limit at all when rate limits are off', async () => {
    const unlimited = clientFor(service, { rateLimits: false });
    try {
      for (let i = 0; i < 5; i++) await unlimited.jobs.purgeQueue(queued);
      expect(service.wire.requests.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    } finally {
      await unlimited.close();
    }
  });

  it('sends nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = (await failure(
      client.jobs.run(queued, { input: {} }, { signal: controller.signal }),
    )) as ServiceError;
    expect(error.kind).toBe('Aborted');
    expect(error.retryable).toBe(false);
    expect(error.mayHaveReachedService).toBe(false);
    expect(service.wire.requests).toHaveLength(0);
  });

  it('aborts a request in flight; a submit that was sent may have been processed', async () => {
    const release = holdAnswers('run');
    try {
      const controller = new AbortController();
      const pending = client.jobs.run(queued, { input: {} }, { signal: controller.signal });
      await waitUntil('the submit processed', () => service.control.submissions(queued) === 1);
      controller.abort();
      const error = (await failure(pending)) as ServiceError;
      expect(error.kind).toBe('Aborted');
      expect(error.mayHaveReachedService).toBe(true);
      expect(service.control.jobs(queued)).toHaveLength(1);
    } finally {
      release();
    }
  });
});
