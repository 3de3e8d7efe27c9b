import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_RATE_LIMITS } from '../../api';
import { delayBefore429Retry, parseRetryAfter } from '../../api/backoff';
import {
  createRateLimiter,
  type JobOperation,
  type RequestPriority,
  SendTimePassed,
} from '../../api/rate-limit';

// Fake timers drive both the limiter's clock and its wake-up timer, so windows of
// 10 seconds pass instantly and exactly.
const clock = { now: () => Date.now() };

describe('rate limiter', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Starts `count` acquisitions and reports which have been granted so far. */
  function start(
    limiter: ReturnType<typeof createRateLimiter>,
    count: number,
    endpoint = 'ep',
    operation: JobOperation = 'purgeQueue',
  ) {
    const granted: number[] = [];
    const promises = Array.from({ length: count }, (_, index) =>
      limiter.acquire(endpoint, operation).then((release) => {
        granted.push(index);
        return release;
      }),
    );
    return { granted, promises };
  }

  it('lets no more than the limit into any 10-second window', async () => {
    const limiter = createRateLimiter({ purgeQueue: { perTenSeconds: 3 } }, clock);
    const { granted } = start(limiter, 7);
    await vi.advanceTimersByTimeAsync(0);
    expect(granted).toEqual([0, 1, 2]);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(granted).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(granted).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('counts a request from its answer: one the service got late cannot share its window with the next', async () => {
    const limiter = createRateLimiter({ purgeQueue: { perTenSeconds: 1 } }, clock);
    const release = await limiter.acquire('ep', 'purgeQueue');
    // Its answer comes 300 ms after the grant: the service took it somewhere in between.
    await vi.advanceTimersByTimeAsync(300);
    release();
    const { granted } = start(limiter, 1);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(granted).toEqual([]);
    await vi.advanceTimersByTimeAsync(301);
    expect(granted).toEqual([0]);
    expect(limiter.recent('ep', 'purgeQueue')).toEqual([1_010_300]);
  });

  it("carries on another limiter's window: recent grants seeded into a new one count against its limit", async () => {
    const first = createRateLimiter({ purgeQueue: { perTenSeconds: 3 } }, clock);
    start(first, 2);
    await vi.advanceTimersByTimeAsync(4_000);
    const looks = first.recent('ep', 'purgeQueue');
    expect(looks).toEqual([1_000_000, 1_000_000]);
    // Another process takes over 4 s later: one grant is left until the first two leave the window.
    const next = createRateLimiter({ purgeQueue: { perTenSeconds: 3 } }, clock);
    next.seed('ep', 'purgeQueue', looks);
    const { granted } = start(next, 3);
    await vi.advanceTimersByTimeAsync(0);
    expect(granted).toEqual([0]);
    await vi.advanceTimersByTimeAsync(6_000);
    expect(granted).toEqual([0, 1, 2]);
    // Grants older than the window are neither seeded nor recent.
    const late = createRateLimiter({ purgeQueue: { perTenSeconds: 3 } }, clock);
    late.seed('ep', 'purgeQueue', [Date.now() - 10_000]);
    expect(late.recent('ep', 'purgeQueue')).toEqual([]);
  });

  it('uses the spec limit of 2 purges per 10 s by default, per endpoint', async () => {
    expect(DEFAULT_RATE_LIMITS.purgeQueue).toEqual({ perTenSeconds: 2 });
    const limiter = createRateLimiter(undefined, clock);
    const a = start(limiter, 3, 'a');
    const b = start(limiter, 2, 'b');
    await vi.advanceTimersByTimeAsync(0);
    expect(a.granted).toEqual([0, 1]);
    expect(b.granted).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(a.granted).toEqual([0, 1, 2]);
  });

  it('keeps operations apart and leaves retry and health unlimited', async () => {
    const limiter = createRateLimiter({ cancel: { perTenSeconds: 1 } }, clock);
    await limiter.acquire('ep', 'cancel');
    let later = false;
    void limiter.acquire('ep', 'cancel').then(() => {
      later = true;
    });
    for (let i = 0; i < 50; i++) await limiter.acquire('ep', 'retry');
    await limiter.acquire('ep', 'status');
    await vi.advanceTimersByTimeAsync(0);
    expect(later).toBe(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(later).toBe(true);
  });

  it('caps concurrency and hands a released slot to the next waiter', async () => {
    const limiter = createRateLimiter({ cancel: { perTenSeconds: 1000, concurrent: 2 } }, clock);
    const granted: number[] = [];
    const releases = Array.from({ length: 4 }, (_, index) =>
      limiter.acquire('ep', 'cancel').then((release) => {
        granted.push(index);
        return release;
      }),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(granted).toEqual([0, 1]);
    const first = await releases[0]!;
    first();
    first(); // a second call must not free a second slot
    await vi.advanceTimersByTimeAsync(0);
    expect(granted).toEqual([0, 1, 2]);
  });

  it('gives up a wait when its signal aborts, without taking a slot', async () => {
    const limiter = createRateLimiter({ purgeQueue: { perTenSeconds: 1 } }, clock);
    await limiter.acquire('ep', 'purgeQueue');
    const controller = new AbortController();
    const waiting = limiter.acquire('ep', 'purgeQueue', controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    const next = start(limiter, 1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(next.granted).toEqual([0]);
  });

  it('refuses a waiter whose time to be sent passed, uncounted: the window stays for the calls on time', async () => {
    const limiter = createRateLimiter({ run: { perTenSeconds: 2 } }, clock);
    await limiter.acquire('ep', 'run');
    await limiter.acquire('ep', 'run');
    // Three wait for the next window; two of them must go within 500 ms of now or not at all.
    const sendBy = Date.now() + 500;
    const late = () => Date.now() > sendBy;
    const lateOnes = [
      limiter.acquire('ep', 'run', undefined, 'normal', late),
      limiter.acquire('ep', 'run', undefined, 'normal', late),
    ];
    const onTime = limiter.acquire('ep', 'run');
    const refused = Promise.allSettled(lateOnes);
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await refused).map((outcome) => outcome.status === 'rejected' && outcome.reason)).toEqual([
      expect.any(SendTimePassed),
      expect.any(SendTimePassed),
    ]);
    await onTime;
    // Only the call that went is in the window: one more fits now.
    expect(limiter.recent('ep', 'run')).toEqual([1_010_000]);
    const next = start(limiter, 1, 'ep', 'run');
    await vi.advanceTimersByTimeAsync(0);
    expect(next.granted).toEqual([0]);
  });

  it('takes a request released unsent out of the window', async () => {
    const limiter = createRateLimiter({ run: { perTenSeconds: 1 } }, clock);
    const release = await limiter.acquire('ep', 'run');
    await vi.advanceTimersByTimeAsync(100);
    release({ sent: false });
    expect(limiter.recent('ep', 'run')).toEqual([]);
    const next = start(limiter, 1, 'ep', 'run');
    await vi.advanceTimersByTimeAsync(0);
    expect(next.granted).toEqual([0]);
  });

  it('serves waiting calls by priority, urgent first and background last, each in its order', async () => {
    const limiter = createRateLimiter({ status: { perTenSeconds: 1 } }, clock);
    await limiter.acquire('ep', 'status');
    const order: string[] = [];
    const take = (name: string, priority?: RequestPriority) =>
      limiter.acquire('ep', 'status', undefined, priority).then(() => order.push(name));
    const all = [
      take('background-1', 'background'),
      take('plain-1'),
      take('plain-2', 'normal'),
      take('urgent-1', 'urgent'),
      take('background-2', 'background'),
      take('urgent-2', 'urgent'),
    ];
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([]);
    await vi.advanceTimersByTimeAsync(6 * 10_000);
    await Promise.all(all);
    expect(order).toEqual(['urgent-1', 'urgent-2', 'plain-1', 'plain-2', 'background-1', 'background-2']);
  });

  it('does nothing when turned off', async () => {
    // With limits, 2 of 10 purges get through at once (the spec's default); without, all 10 do,
    // in one step of the clock, with no time passing.
    const limited = start(createRateLimiter(undefined, clock), 10);
    const unlimited = start(createRateLimiter(false, clock), 10);
    await vi.advanceTimersByTimeAsync(0);
    expect(limited.granted).toHaveLength(2);
    expect(unlimited.granted).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(Date.now()).toBe(1_000_000);
  });
});

describe('429 backoff', () => {
  const policy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1_000 };

  it('draws a full-jitter delay under an exponential ceiling', () => {
    expect(delayBefore429Retry(0, undefined, policy, () => 0)).toBe(0);
    expect(delayBefore429Retry(0, undefined, policy, () => 0.999)).toBeCloseTo(99.9);
    expect(delayBefore429Retry(2, undefined, policy, () => 0.999)).toBeCloseTo(399.6);
    expect(delayBefore429Retry(2, undefined, { ...policy, maxDelayMs: 250 }, () => 0.999)).toBeCloseTo(
      249.75,
    );
  });

  it('never retries sooner than Retry-After', () => {
    expect(delayBefore429Retry(0, 700, policy, () => 0)).toBe(700);
  });

  it('ends the budget after maxRetries, or when Retry-After exceeds maxDelayMs', () => {
    expect(delayBefore429Retry(3, undefined, policy)).toBeUndefined();
    expect(delayBefore429Retry(0, 1_001, policy)).toBeUndefined();
    expect(delayBefore429Retry(0, undefined, { ...policy, maxRetries: 0 })).toBeUndefined();
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('3')).toBe(3_000);
    expect(parseRetryAfter(['0'])).toBe(0);
    expect(parseRetryAfter(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});
