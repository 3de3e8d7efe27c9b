/** The per-job rules both the job workflow and the batch workflow follow (pure functions). */
import { describe, expect, it } from 'vitest';
import { jobRetrySchema } from '../../contracts/job-input';
import {
  afterTerminal,
  goneBeforeRetry,
  lastLookMarginMs,
  noRoomRetryDelayMs,
  onExpired,
  onUncertainSubmit,
  resubmitAfterLease,
  resultsExpireAt,
  retryBackoffMs,
  submitRetryDelayMs,
  ttlDeadline,
  whyGone,
} from '../../engine/job-rules';

const retry = (raw: object = {}) => jobRetrySchema.parse(raw);
const rules = (extra: object = {}) => ({
  retry: retry(),
  onExpired: 'fail' as const,
  onUncertainSubmit: 'fail' as const,
  maxSubmissions: 3,
  maxLeaseResubmits: 5,
  ...extra,
});

describe('job rules', () => {
  it('retries FAILED and TIMED_OUT up to maxRetries with a capped geometric backoff', () => {
    const r = retry({ maxRetries: 3, initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 3_000 });
    expect(afterTerminal('FAILED', r, 0)).toEqual({ kind: 'retry', backoffMs: 1_000 });
    expect(afterTerminal('TIMED_OUT', r, 1)).toEqual({ kind: 'retry', backoffMs: 2_000 });
    expect(afterTerminal('FAILED', r, 2)).toEqual({ kind: 'retry', backoffMs: 3_000 });
    expect(afterTerminal('FAILED', r, 3)).toEqual({ kind: 'give-up', status: 'FAILED' });
    expect(afterTerminal('COMPLETED', r, 0)).toEqual({ kind: 'completed' });
    expect(afterTerminal('CANCELLED', r, 0)).toEqual({ kind: 'cancelled' });
  });

  it('never retries by default, nor a status the caller left out of retry.on', () => {
    expect(afterTerminal('FAILED', retry(), 0)).toEqual({ kind: 'give-up', status: 'FAILED' });
    const onlyFailed = retry({ maxRetries: 5, on: ['FAILED'] });
    expect(afterTerminal('TIMED_OUT', onlyFailed, 0)).toEqual({ kind: 'give-up', status: 'TIMED_OUT' });
  });

  it('caps the backoff at 10 minutes by default, or at the initial interval when that is longer', () => {
    expect(retryBackoffMs(retry({ initialInterval: 60_000, backoffCoefficient: 100 }), 3)).toBe(600_000);
    expect(retryBackoffMs(retry({ initialInterval: 3_600_000 }), 2)).toBe(3_600_000);
  });

  it('knows a job is gone before a retry by its ttl first, then by its results', () => {
    expect(goneBeforeRetry(99, 100, 200)).toBeUndefined();
    expect(goneBeforeRetry(100, 100, 50)).toBe('ttl');
    expect(goneBeforeRetry(60, 100, 50)).toBe('results');
  });

  it('counts the ttl from submission and keeps results 30 minutes (/run) or 1 minute (/runsync)', () => {
    expect(ttlDeadline(1_000, 10_000)).toBe(11_000);
    expect(resultsExpireAt(0, 'run')).toBe(1_800_000);
    expect(resultsExpireAt(0, 'runsync')).toBe(60_000);
    expect(lastLookMarginMs(86_400_000)).toBe(5_000);
    expect(lastLookMarginMs(10_000)).toBe(1_000);
  });

  it('reads a 404 as the ttl near the deadline or soon after a sighting, else as expired results', () => {
    // The last look of a 100 s ttl is 5 s before its deadline.
    expect(whyGone(96_000, 95_000, undefined, 'run')).toBe('ttl');
    expect(whyGone(50_000, 99_995_000, 40_000, 'run')).toBe('ttl');
    expect(whyGone(5_000_000, 99_995_000, 0, 'run')).toBe('results');
    expect(whyGone(5_000_000, 99_995_000, undefined, 'run')).toBe('results');
  });

  it('resubmits an expired job or an uncertain submit only when chosen and submissions are left', () => {
    expect(onExpired(rules(), 1)).toBe('fail');
    expect(onExpired(rules({ onExpired: 'resubmit' }), 2)).toBe('resubmit');
    expect(onExpired(rules({ onExpired: 'resubmit' }), 3)).toBe('fail');
    expect(onUncertainSubmit(rules({ onUncertainSubmit: 'resubmit' }), 1)).toEqual({ choice: 'resubmit' });
    expect(onUncertainSubmit(rules({ onUncertainSubmit: 'resubmit' }), 3)).toMatchObject({
      choice: 'fail',
      why: expect.stringContaining('maxSubmissions (3)'),
    });
    expect(onUncertainSubmit(rules(), 1)).toMatchObject({
      choice: 'fail',
      why: expect.stringContaining('fail'),
    });
  });

  it('after a lease no orphan answered, sends again past maxSubmissions by maxLeaseResubmits', () => {
    expect(resubmitAfterLease(rules(), 2)).toBe(true);
    // maxSubmissions (3) spent: only the extra room of maxLeaseResubmits (5) is left.
    expect(resubmitAfterLease(rules(), 3)).toBe(true);
    expect(resubmitAfterLease(rules(), 7)).toBe(true);
    expect(resubmitAfterLease(rules(), 8)).toBe(false);
    expect(resubmitAfterLease(rules({ maxLeaseResubmits: 0 }), 3)).toBe(false);
  });
});

describe('noRoomRetryDelayMs: a try the gate had no room for, never the last', () => {
  it.each([
    [1, 1_000],
    [2, 2_000],
    [7, 60_000],
    [8, 60_000],
    [500, 60_000],
  ])('after %s tries: %s', (tries, expected) => {
    expect(noRoomRetryDelayMs(tries)).toBe(expected);
  });
});

describe('submitRetryDelayMs: a refused submit, for the job workflow and the batch alike', () => {
  it.each([
    // [retryable, Retry-After ms, tries so far, pause before the next try]
    [true, undefined, 1, 1_000],
    [true, undefined, 2, 2_000],
    [true, undefined, 7, 60_000],
    [true, 90_000, 1, 90_000],
    [true, 500, 3, 4_000],
    [true, undefined, 8, undefined],
    [true, 90_000, 8, undefined],
    [false, undefined, 1, undefined],
    [false, 5_000, 1, undefined],
  ])('retryable %s, Retry-After %s, after %s tries: %s', (retryable, retryAfterMs, tries, expected) => {
    const rejection = { retryable, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    expect(submitRetryDelayMs(rejection, tries)).toBe(expected);
  });
});
