/**
 * CallOptions.sendBy: a call the client's rate limiter grants after its time to be sent is not
 * sent (an Aborted ServiceError that never reached the service), with the real client against the
 * emulator over HTTP; CallOptions.beforeSend, awaited before each try; and ServiceClient.rateLimit,
 * the limit the client keeps to.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_RATE_LIMITS, type ServiceClient, ServiceError } from '../../api';
import { clientFor, failure, startService, TEST_KEY, type TestService } from './helpers';

let service: TestService;
/** No workers: its jobs stay IN_QUEUE. */
let queued: string;

beforeAll(async () => {
  service = await startService();
  queued = service.control.createEndpoint(TEST_KEY, {
    name: 'send-by',
    templateId: 'echo',
    workersMax: 0,
  }).id;
});
afterAll(async () => {
  await service.close();
});
beforeEach(() => service.reset());
afterEach(() => {
  vi.useRealTimers();
});

/** The /run requests the client put on the wire. */
const runsSent = () => service.wire.requests.filter((request) => request.path === `/v2/${queued}/run`);

describe('sendBy', () => {
  let limited: ServiceClient;
  beforeEach(() => {
    // One /run at a time: a second waits in the limiter for as long as the first is unanswered.
    limited = clientFor(service, { rateLimits: { run: { perTenSeconds: 1000, concurrent: 1 } } });
  });
  afterEach(async () => {
    await limited.close();
  });

  it('does not send a /run the limiter held past its sendBy; the next one goes', async () => {
    // Only Date stands still (sendBy is read from it); timers, undici and the emulator keep real time.
    vi.useFakeTimers({ toFake: ['Date'] });
    // The service processes the first /run and holds its answer until the test lets it go.
    const releaseFirst = service.control.injectFault({
      operation: 'run',
      kind: 'slow',
      delayMs: 600_000,
      times: 1,
    });
    const first = limited.jobs.run(queued, { input: { n: 1 } });
    await service.wire.sent(1);
    // Its time to be sent is still to come when it is asked for, and has passed when the first
    // answer frees the limiter's only slot.
    const late = failure(limited.jobs.run(queued, { input: { n: 2 } }, { sendBy: Date.now() + 200 }));
    vi.setSystemTime(Date.now() + 1_000);
    releaseFirst();
    expect((await first).status).toBe('IN_QUEUE');

    const error = await late;
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({
      kind: 'Aborted',
      operation: 'run',
      mayHaveReachedService: false,
      retryable: true,
    });
    expect(runsSent()).toHaveLength(1);
    expect(service.control.submissions(queued)).toBe(1);
    expect(service.control.jobs(queued).map((job) => job.input)).toEqual([{ n: 1 }]);

    // The call that was not sent gave its slot back: a /run whose time has not passed goes at once.
    const next = await limited.jobs.run(queued, { input: { n: 3 } }, { sendBy: Date.now() + 200 });
    expect(next.status).toBe('IN_QUEUE');
    expect(runsSent().map((request) => request.json())).toEqual([{ input: { n: 1 } }, { input: { n: 3 } }]);
    expect(service.control.submissions(queued)).toBe(2);
  });

  it('does not send, nor take room in the limiter for, a /run whose time has already passed', async () => {
    const tight = clientFor(service, { rateLimits: { run: { perTenSeconds: 1 } } });
    try {
      const error = await failure(tight.jobs.run(queued, { input: { n: 4 } }, { sendBy: Date.now() - 1 }));
      expect(error).toMatchObject({ kind: 'Aborted', mayHaveReachedService: false });
      expect(runsSent()).toHaveLength(0);
      // The one request a window allows is still there: it goes at once.
      expect((await tight.jobs.run(queued, { input: { n: 5 } })).status).toBe('IN_QUEUE');
      expect(runsSent()).toHaveLength(1);
    } finally {
      await tight.close();
    }
  });
});

describe('beforeSend', () => {
  it("is awaited before each try, a 429's retry too; refusing a retry leaves the call unsent", async () => {
    // The first try is answered 429 (a refusal: nothing made); the hook refuses the retry.
    service.control.injectFault({
      operation: 'run',
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 0,
      times: 1,
    });
    let tries = 0;
    const client = clientFor(service);
    try {
      const error = await failure(
        client.jobs.run(
          queued,
          { input: { n: 6 } },
          {
            beforeSend: async () => {
              tries++;
              if (tries > 1) throw new Error('the attempt is over');
            },
          },
        ),
      );
      expect(error).toMatchObject({ kind: 'Aborted', mayHaveReachedService: false, retryable: true });
      expect(error.message).toContain('the attempt is over');
      expect(tries).toBe(2);
      expect(runsSent()).toHaveLength(1);
      expect(service.control.submissions(queued)).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('sends each try once the hook resolves', async () => {
    let tries = 0;
    const client = clientFor(service);
    try {
      const submitted = await client.jobs.run(
        queued,
        { input: { n: 7 } },
        {
          beforeSend: async () => {
            tries++;
          },
        },
      );
      expect(submitted.status).toBe('IN_QUEUE');
      expect(tries).toBe(1);
      expect(runsSent()).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});

describe('rateLimit', () => {
  it("is the service's limit by default, the override when given, and none with rateLimits: false", async () => {
    const plain = clientFor(service);
    const overridden = clientFor(service, { rateLimits: { run: { perTenSeconds: 5, concurrent: 1 } } });
    const unlimited = clientFor(service, { rateLimits: false });
    try {
      expect(plain.rateLimit('run')).toEqual({ perTenSeconds: 1000, concurrent: 200 });
      expect(plain.rateLimit('status')).toEqual(DEFAULT_RATE_LIMITS.status);
      // retry and health have no limit in the spec.
      expect(plain.rateLimit('retry')).toBeUndefined();

      expect(overridden.rateLimit('run')).toEqual({ perTenSeconds: 5, concurrent: 1 });
      // An override replaces its own operation's limit only.
      expect(overridden.rateLimit('status')).toEqual(DEFAULT_RATE_LIMITS.status);

      expect(unlimited.rateLimit('run')).toBeUndefined();
      expect(unlimited.rateLimit('status')).toBeUndefined();
    } finally {
      await Promise.all([plain.close(), overridden.close(), unlimited.close()]);
    }
  });
});
