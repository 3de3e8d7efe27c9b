/**
 * The one retry loop of a lease's extension (/status?ttl=), shared by the job's submit, the batch's
 * page submit and the batch's later extensions: what it answers for each kind of answer, and that
 * it stops at its deadline or when cancelled.
 */
import { describe, expect, it } from 'vitest';
import { extendJobTtl, extendLeaseInSubmit } from '../../activities/lease-extend';
import type { ServiceClient } from '../../api/client';
import { ServiceError, type ServiceErrorKind } from '../../api/errors';

const error = (kind: ServiceErrorKind, retryable: boolean) =>
  new ServiceError({ kind, operation: 'status', message: `${kind}!`, retryable });

/** A /status that answers from a script (an error to throw, or success), and records each call. */
function scriptedStatus(script: Array<ServiceError | 'ok'>) {
  const calls: Array<{ jobId: string; ttl: number | undefined; signal: AbortSignal | undefined }> = [];
  const client = {
    jobs: {
      async status(_endpointId: string, jobId: string, options?: { ttl?: number; signal?: AbortSignal }) {
        calls.push({ jobId, ttl: options?.ttl, signal: options?.signal });
        const next = script[Math.min(calls.length - 1, script.length - 1)];
        if (next instanceof ServiceError) throw next;
        return { id: jobId, status: 'IN_QUEUE' };
      },
    },
  } as unknown as Pick<ServiceClient, 'jobs'>;
  return { client, calls };
}

const noPause = async () => undefined;
const target = { endpointId: 'ep', jobId: 'job-1', ttl: 86_400_000 };

describe('extendJobTtl', () => {
  it('sets the ttl and answers extended, after retryable failures', async () => {
    const { client, calls } = scriptedStatus([error('RateLimited', true), error('ServerError', true), 'ok']);
    const beats: number[] = [];
    const answer = await extendJobTtl(
      client,
      { ...target, until: Date.now() + 60_000 },
      () => beats.push(1),
      noPause,
    );
    expect(answer).toBe('extended');
    expect(calls).toHaveLength(3);
    expect(calls.every((call) => call.ttl === target.ttl && call.jobId === 'job-1')).toBe(true);
    expect(beats).toHaveLength(3);
  });

  it('answers gone on a 404 (the lease ran out already), without trying again', async () => {
    const { client, calls } = scriptedStatus([error('NotFound', false)]);
    expect(await extendJobTtl(client, { ...target, until: Date.now() + 60_000 }, undefined, noPause)).toBe(
      'gone',
    );
    expect(calls).toHaveLength(1);
  });

  it.each([
    ['BadRequest', 'a 400'],
    ['Unauthorized', 'a 401'],
  ] as const)('answers failed at once on %s (%s: no try changes it)', async (kind, _what) => {
    const { client, calls } = scriptedStatus([error(kind, false)]);
    expect(await extendJobTtl(client, { ...target, until: Date.now() + 60_000 }, undefined, noPause)).toBe(
      'failed',
    );
    expect(calls).toHaveLength(1);
  });

  it('answers failed once the next pause would pass its deadline', async () => {
    const { client, calls } = scriptedStatus([error('RateLimited', true)]);
    // A deadline already passed: one try, no pause.
    expect(await extendJobTtl(client, { ...target, until: Date.now() - 1 }, undefined, noPause)).toBe(
      'failed',
    );
    expect(calls).toHaveLength(1);
  });

  it('stops when cancelled, and passes the cancellation and a per-try limit to each call', async () => {
    const controller = new AbortController();
    const { client, calls } = scriptedStatus([error('ServerError', true)]);
    const answer = await extendJobTtl(
      client,
      { ...target, until: Date.now() + 60_000, tryMs: 5_000, signal: controller.signal },
      undefined,
      async () => {
        if (calls.length === 2) controller.abort();
      },
    );
    expect(answer).toBe('failed');
    expect(calls).toHaveLength(2);
    expect(calls[0]?.signal).toBeDefined();
    expect(calls[0]?.signal).not.toBe(controller.signal);
  });

  it('takes a per-try limit that is not a whole number of milliseconds', async () => {
    const { client, calls } = scriptedStatus(['ok']);
    expect(
      await extendJobTtl(
        client,
        { ...target, until: Date.now() + 60_000, tryMs: 20_000 / 6 },
        undefined,
        noPause,
      ),
    ).toBe('extended');
    expect(calls).toHaveLength(1);
  });
});

describe('extendLeaseInSubmit', () => {
  /** The submit's beats, the server recording each (activities/submit-beat.ts). */
  const recordedBeats = { confirm: async () => {}, beat: () => {} };
  const lease = { endpointId: 'ep', jobId: 'job-1', leaseTtlMs: 60_000, sentAt: Date.now() };

  it('asks nothing when the lease already is the ttl the caller wants', async () => {
    const { client, calls } = scriptedStatus(['ok']);
    expect(
      await extendLeaseInSubmit(
        client,
        { ...lease, callerTtlMs: 60_000, notAfter: Date.now() + 60_000 },
        recordedBeats,
      ),
    ).toBe(true);
    expect(calls).toHaveLength(0);
  });

  it("sets the caller's ttl, or the service's default when the caller set none", async () => {
    const { client, calls } = scriptedStatus(['ok']);
    expect(
      await extendLeaseInSubmit(
        client,
        { ...lease, callerTtlMs: 7_200_000, notAfter: Date.now() + 60_000 },
        recordedBeats,
      ),
    ).toBe(true);
    expect(
      await extendLeaseInSubmit(
        client,
        { ...lease, callerTtlMs: undefined, notAfter: Date.now() + 60_000 },
        recordedBeats,
      ),
    ).toBe(true);
    expect(calls.map((call) => call.ttl)).toEqual([7_200_000, 86_400_000]);
  });

  it('extends a lease whose sixth is not a whole number of milliseconds (20 s)', async () => {
    const { client, calls } = scriptedStatus(['ok']);
    expect(
      await extendLeaseInSubmit(
        client,
        {
          ...lease,
          leaseTtlMs: 20_000,
          callerTtlMs: 7_200_000,
          notAfter: Date.now() + 60_000,
        },
        recordedBeats,
      ),
    ).toBe(true);
    expect(calls).toHaveLength(1);
  });

  it('is false when the job is gone', async () => {
    const { client } = scriptedStatus([error('NotFound', false)]);
    expect(
      await extendLeaseInSubmit(
        client,
        { ...lease, callerTtlMs: 7_200_000, notAfter: Date.now() + 60_000 },
        recordedBeats,
      ),
    ).toBe(false);
  });
});
