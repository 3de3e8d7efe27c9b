import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { toApplicationFailure } from '../../activities/failures';
import { ServiceError, type ServiceErrorKind, ValidationError } from '../../api/errors';

const error = (kind: ServiceErrorKind, extra: Partial<ConstructorParameters<typeof ServiceError>[0]> = {}) =>
  new ServiceError({ kind, operation: 'status', message: `${kind}!`, retryable: false, ...extra });

describe('toApplicationFailure', () => {
  it.each([
    ['BadRequest', false],
    ['Unauthorized', false],
    ['NotFound', false],
    ['RateLimited', true],
    ['ServerError', true],
    ['NetworkError', true],
    ['Timeout', true],
    ['InvalidResponse', false],
  ] as Array<[ServiceErrorKind, boolean]>)(
    '%s keeps its kind as the type (retryable: %s)',
    (kind, retryable) => {
      const failure = toApplicationFailure(error(kind, { retryable }));
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure).toMatchObject({ type: kind, nonRetryable: !retryable, message: `${kind}!` });
    },
  );

  it('turns Retry-After into nextRetryDelay and keeps it in the details for the workflow', () => {
    const failure = toApplicationFailure(
      error('RateLimited', { retryable: true, status: 429, retryAfterMs: 7_000 }),
    );
    expect(failure).toMatchObject({ nextRetryDelay: 7_000 });
    expect((failure as ApplicationFailure).details?.[0]).toEqual({
      operation: 'status',
      status: 429,
      retryAfterMs: 7_000,
    });
  });

  it('reads a 404 of a job operation as JobExpired, and of anything else as NotFound', () => {
    expect(toApplicationFailure(error('NotFound'), { jobOperation: true })).toMatchObject({
      type: 'JobExpired',
      nonRetryable: true,
    });
    expect(toApplicationFailure(error('NotFound'))).toMatchObject({ type: 'NotFound' });
  });

  it('makes a submit that may have reached the service SubmitUncertain, and one that did not keep its kind', () => {
    const reached = error('Timeout', { operation: 'run', retryable: true, mayHaveReachedService: true });
    const notSent = error('NetworkError', {
      operation: 'run',
      retryable: true,
      mayHaveReachedService: false,
    });
    expect(toApplicationFailure(reached, { submit: { webhookArmed: false } })).toMatchObject({
      type: 'SubmitUncertain',
      nonRetryable: true,
    });
    expect(toApplicationFailure(notSent, { submit: { webhookArmed: false } })).toMatchObject({
      type: 'NetworkError',
      nonRetryable: false,
    });
  });

  it('turns a ValidationError into a non-retryable BadRequest with the field and rule', () => {
    const failure = toApplicationFailure(
      new ValidationError('policy.ttl', 'must be an integer'),
    ) as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'BadRequest', nonRetryable: true });
    expect(failure.details?.[0]).toEqual({ field: 'policy.ttl', rule: 'must be an integer' });
  });

  it('reports anything after a cancellation as the cancellation', () => {
    const controller = new AbortController();
    controller.abort();
    const failure = toApplicationFailure(error('Aborted'), { signal: controller.signal });
    expect(failure).toBeInstanceOf(CancelledFailure);
  });

  it('passes Temporal failures through and marks unknown errors retryable', () => {
    const own = ApplicationFailure.create({ type: 'Mine', nonRetryable: true });
    expect(toApplicationFailure(own)).toBe(own);
    expect(toApplicationFailure(new Error('bug'))).toMatchObject({
      type: 'InternalError',
      nonRetryable: false,
    });
  });
});
