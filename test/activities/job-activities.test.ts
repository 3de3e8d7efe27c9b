/**
 * The job activities in Temporal's mock activity environment against a stub API client: the
 * submission policy (certain vs uncertain failures), the wait loop (growing intervals, heartbeats,
 * resuming from them, cancellation, deadline, 404), result store references, /retry and /cancel
 * edge cases, and draining /stream into each kind of sink.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createJobActivities } from '../../activities/job';
import type { JobStreamBatch } from '../../activities/stream-sink';
import { HELD_MS } from '../../activities/task-looks';
import { ValidationError } from '../../api/errors';
import type { JobStatus } from '../../api/schemas/job';
import type { WaitForJobChangeInput } from '../../contracts/job-types';
import { createLocalResultStore } from '../../stores/result-store';
import { tempDir } from '../support/temp-dir';
import { activityEnv, rejection, type StubClient, serviceError, stubClient } from './job-stub';

const polling = { initialIntervalMs: 10, maxIntervalMs: 40, backoffCoefficient: 2 };
const status = (s: JobStatus['status'], extra: Partial<JobStatus> = {}): JobStatus => ({
  id: 'job-1',
  status: s,
  ...extra,
});

function failure(error: unknown): ApplicationFailure {
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('job activities', () => {
  let stub: StubClient;
  let dir: string;
  beforeEach(() => {
    stub = stubClient();
    dir = tempDir('job-activities');
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const activities = (extra: Partial<Parameters<typeof createJobActivities>[0]> = {}) =>
    createJobActivities({
      client: stub.client,
      resultStoreDir: dir,
      webhookUrlFor: (workflowId) =>
        `https://hooks.test/webhooks/${encodeURIComponent(workflowId)}?token=secret-token`,
      ...extra,
    });

  describe('submitJob', () => {
    it('sends the request with the webhook made from the workflow id, and returns the job id', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const result = await activityEnv().call(activities().submitJob, {
        endpointId: 'ep-1',
        request: { input: { a: 1 }, policy: { ttl: 60_000 } },
      });
      expect(result).toMatchObject({ jobId: 'job-1', status: 'IN_QUEUE', webhookArmed: true });
      // The token is in the request to the service only, never in what goes back to the workflow.
      expect(JSON.stringify(result)).not.toContain('secret-token');
      expect(stub.named('run')[0]).toEqual([
        'ep-1',
        {
          input: { a: 1 },
          policy: { ttl: 60_000 },
          webhook: 'https://hooks.test/webhooks/wf-1?token=secret-token',
        },
      ]);
    });

    it('sends the request unchanged when no webhook is configured (polling only)', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const result = await activityEnv().call(activities({ webhookUrlFor: undefined }).submitJob, {
        endpointId: 'ep-1',
        request: { input: {} },
      });
      expect(result.webhookArmed).toBe(false);
      expect(stub.named('run')[0]).toEqual(['ep-1', { input: {} }]);
    });

    it('has the server record that a request may go out (with its webhook and lease) before it sends', async () => {
      const env = activityEnv();
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      let beatsWhenSent: unknown[] = [];
      const jobs = stub.client.jobs;
      const watched = {
        jobs: {
          ...jobs,
          run: (...args: Parameters<typeof jobs.run>) => {
            beatsWhenSent = [...env.beats];
            return jobs.run(...args);
          },
        },
      };
      await env.call(activities({ client: watched }).submitJob, {
        endpointId: 'ep-1',
        request: { input: {} },
        lease: { ttlMs: 30_000, onlyWithWebhook: false },
      });
      expect(beatsWhenSent).toEqual([{ sending: true, webhookArmed: true, leaseTtlMs: 30_000 }]);
    });

    it('sends nothing when the server does not record the beat, and says so: SubmitNotSent, retryable', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const error = failure(
        await rejection(
          activityEnv({}, new Error('activity not found')).call(activities().submitJob, {
            endpointId: 'ep',
            request: { input: {} },
          }),
        ),
      );
      expect(error.type).toBe('SubmitNotSent');
      expect(error.nonRetryable).toBe(false);
      expect(error.message).toContain('activity not found');
      expect(stub.named('run')).toHaveLength(0);
    });

    it('sends nothing when the server does not answer the beat: it fails at its deadline, SubmitNotSent', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const error = failure(
        await rejection(
          activityEnv({ heartbeatTimeoutMs: 200 }, 'unanswered').call(activities().submitJob, {
            endpointId: 'ep',
            request: { input: {} },
          }),
        ),
      );
      expect(error.type).toBe('SubmitNotSent');
      expect(error.message).toContain('DEADLINE_EXCEEDED');
      expect(stub.named('run')).toHaveLength(0);
    });

    it('reports a submit that may have reached the service as SubmitUncertain, never retryable', async () => {
      stub.answer(
        'run',
        serviceError({ kind: 'Timeout', operation: 'run', retryable: true, mayHaveReachedService: true }),
      );
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} } }),
        ),
      );
      expect(error.type).toBe('SubmitUncertain');
      expect(error.nonRetryable).toBe(true);
      expect(error.details?.[0]).toMatchObject({ cause: 'Timeout', webhookArmed: true, operation: 'run' });
    });

    it('applies an auto lease only when it arms a webhook, and reports it (success and uncertain)', async () => {
      const lease = { ttlMs: 60_000, onlyWithWebhook: true };
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const armed = await activityEnv().call(activities().submitJob, {
        endpointId: 'ep-1',
        request: { input: {}, policy: { ttl: 3_600_000, lowPriority: true } },
        lease,
      });
      expect(armed).toMatchObject({ webhookArmed: true, leaseTtlMs: 60_000 });
      expect(stub.named('run')[0]?.[1]).toMatchObject({ policy: { ttl: 60_000, lowPriority: true } });

      stub.answer('run', { id: 'job-2', status: 'IN_QUEUE' });
      const polled = await activityEnv().call(activities({ webhookUrlFor: undefined }).submitJob, {
        endpointId: 'ep-1',
        request: { input: {} },
        lease,
      });
      expect(polled).not.toHaveProperty('leaseTtlMs');
      expect(stub.named('run')[1]).toEqual(['ep-1', { input: {} }]);

      stub.answer(
        'run',
        serviceError({
          kind: 'NetworkError',
          operation: 'run',
          retryable: true,
          mayHaveReachedService: true,
        }),
      );
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} }, lease }),
        ),
      );
      expect(error.details?.[0]).toMatchObject({ webhookArmed: true, leaseTtlMs: 60_000 });
    });

    it("extends the lease to the caller's ttl itself right after the id arrives; a failed try leaves it to the workflow", async () => {
      const lease = { ttlMs: 60_000, onlyWithWebhook: true };
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' }, { id: 'job-2', status: 'IN_QUEUE' });
      stub.answer(
        'status',
        { id: 'job-1', status: 'IN_QUEUE' },
        serviceError({ kind: 'ServerError', operation: 'status', retryable: true }),
      );
      const request = { input: {}, policy: { ttl: 3_600_000 } };
      const done = await activityEnv().call(activities().submitJob, { endpointId: 'ep-1', request, lease });
      expect(done).toMatchObject({ jobId: 'job-1', leaseTtlMs: 60_000, extended: true });
      expect(stub.named('status')[0]).toEqual(['ep-1', 'job-1', expect.objectContaining({ ttl: 3_600_000 })]);

      const left = await activityEnv().call(activities().submitJob, { endpointId: 'ep-1', request, lease });
      expect(left).toMatchObject({ jobId: 'job-2', leaseTtlMs: 60_000 });
      expect(left).not.toHaveProperty('extended');
    });

    it("has the server record the job's id before it extends the lease; an attempt that may be over extends nothing", async () => {
      const lease = { ttlMs: 60_000, onlyWithWebhook: true };
      const request = { input: {}, policy: { ttl: 3_600_000 } };
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' }, { id: 'job-2', status: 'IN_QUEUE' });
      stub.answer('status', { id: 'job-1', status: 'IN_QUEUE' });
      const env = activityEnv();
      let beatsWhenExtended: unknown[] = [];
      const jobs = stub.client.jobs;
      const watched = {
        jobs: {
          ...jobs,
          status: (...args: Parameters<typeof jobs.status>) => {
            beatsWhenExtended = [...env.beats];
            return jobs.status(...args);
          },
        },
      };
      const done = await env.call(activities({ client: watched }).submitJob, {
        endpointId: 'ep-1',
        request,
        lease,
      });
      expect(done).toMatchObject({ jobId: 'job-1', extended: true });
      expect(beatsWhenExtended.at(-1)).toEqual({
        sending: true,
        webhookArmed: true,
        leaseTtlMs: 60_000,
        jobId: 'job-1',
      });

      // The server recorded the beat before sending, then refused the next: the attempt timed out
      // meanwhile, and the workflow counts the job as an uncertain submit's orphan, which only its
      // lease may end. Extending it would let it outlive the workflow's wait and run twice.
      const ended = activityEnv({}, new Error('activity not found'), 1);
      const left = await ended.call(activities().submitJob, { endpointId: 'ep-1', request, lease });
      expect(left).toMatchObject({ jobId: 'job-2', leaseTtlMs: 60_000 });
      expect(left).not.toHaveProperty('extended');
      expect(stub.named('status')).toHaveLength(1);
      expect(ended.beats).toEqual([{ sending: true, webhookArmed: true, leaseTtlMs: 60_000 }]);
    });

    it('sends no later try once the server no longer records its beats (the attempt may be over)', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      // The first beat is recorded; by the time the request goes, more than a second later (here:
      // the clock moved while the gate granted), the server refuses beats.
      const env = activityEnv({ startToCloseTimeoutMs: 60_000 }, new Error('activity not found'), 1);
      const jobs = stub.client.jobs;
      const later = {
        jobs: {
          ...jobs,
          run: (...args: Parameters<typeof jobs.run>) => {
            vi.setSystemTime(Date.now() + 2_000);
            return jobs.run(...args);
          },
        },
      };
      vi.useFakeTimers({ toFake: ['Date'] });
      const error = failure(
        await rejection(
          env.call(activities({ client: later }).submitJob, { endpointId: 'ep-1', request: { input: {} } }),
        ),
      );
      expect(error.type).toBe('Aborted');
      expect(error.nonRetryable).toBe(false);
      expect(error.message).toContain('activity not found');
      expect(stub.named('run')).toHaveLength(0);

      // Beats still recorded, but the attempt's start-to-close end too near: nothing goes either.
      const late = await rejection(
        activityEnv({ startToCloseTimeoutMs: 1_000 }).call(activities({ client: later }).submitJob, {
          endpointId: 'ep-1',
          request: { input: {} },
        }),
      );
      expect(failure(late).message).toContain('start-to-close timeout (1000 ms) leaves no room to send');
      expect(stub.named('run')).toHaveLength(0);
    });

    it('keeps trying the extension within the lease while the activity has time, ahead of the workflow', async () => {
      const lease = { ttlMs: 60_000, onlyWithWebhook: true };
      stub.answer('run', { id: 'job-3', status: 'IN_QUEUE' });
      stub.answer('status', serviceError({ kind: 'ServerError', operation: 'status', retryable: true }), {
        id: 'job-3',
        status: 'COMPLETED',
      });
      const request = { input: {}, policy: { ttl: 3_600_000 } };
      // A submit with two minutes to answer: the failed try is tried again a second later.
      const done = await activityEnv({ startToCloseTimeoutMs: 120_000 }).call(activities().submitJob, {
        endpointId: 'ep-1',
        request,
        lease,
      });
      expect(done).toMatchObject({ jobId: 'job-3', leaseTtlMs: 60_000, extended: true });
      expect(stub.named('status')).toHaveLength(2);
    });

    it('applies an explicit lease without a webhook too', async () => {
      stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
      const result = await activityEnv().call(activities({ webhookUrlFor: undefined }).submitJob, {
        endpointId: 'ep-1',
        request: { input: {} },
        lease: { ttlMs: 20_000, onlyWithWebhook: false },
      });
      expect(result).toMatchObject({ webhookArmed: false, leaseTtlMs: 20_000 });
      expect(stub.named('run')[0]).toEqual(['ep-1', { input: {}, policy: { ttl: 20_000 } }]);
    });

    it('reports a 5xx on submit as uncertain too', async () => {
      stub.answer(
        'run',
        serviceError({
          kind: 'ServerError',
          operation: 'run',
          status: 502,
          retryable: true,
          mayHaveReachedService: true,
        }),
      );
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} } }),
        ),
      );
      expect(error.type).toBe('SubmitUncertain');
    });

    it('keeps certain failures typed and retryable as they are: 429 after the budget, connection refused', async () => {
      stub.answer(
        'run',
        serviceError({
          kind: 'RateLimited',
          operation: 'run',
          status: 429,
          retryable: true,
          retryAfterMs: 2_000,
        }),
        serviceError({
          kind: 'NetworkError',
          operation: 'run',
          retryable: true,
          mayHaveReachedService: false,
        }),
      );
      const submit = () =>
        activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} } });
      const limited = failure(await rejection(submit()));
      expect(limited).toMatchObject({ type: 'RateLimited', nonRetryable: false, nextRetryDelay: 2_000 });
      expect(limited.details?.[0]).toMatchObject({ retryAfterMs: 2_000, status: 429 });
      const refused = failure(await rejection(submit()));
      expect(refused).toMatchObject({ type: 'NetworkError', nonRetryable: false });
    });

    it('turns a ValidationError (nothing sent) into a non-retryable BadRequest naming the field', async () => {
      stub.answer('run', new ValidationError('payload', 'the serialized request is 11000000 bytes'));
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} } }),
        ),
      );
      expect(error).toMatchObject({ type: 'BadRequest', nonRetryable: true });
      expect(error.details?.[0]).toEqual({
        field: 'payload',
        rule: 'the serialized request is 11000000 bytes',
      });
    });

    it('treats an unexpected error as uncertain: it cannot tell whether the request went out', async () => {
      stub.answer('run', new TypeError('socket hang up'));
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, { endpointId: 'ep', request: { input: {} } }),
        ),
      );
      expect(error.type).toBe('SubmitUncertain');
    });

    it('refuses a request that carries its own webhook, before sending anything', async () => {
      const error = failure(
        await rejection(
          activityEnv().call(activities().submitJob, {
            endpointId: 'ep',
            request: { input: {}, webhook: 'https://evil.test/' },
          }),
        ),
      );
      expect(error).toMatchObject({ type: 'BadRequest', nonRetryable: true });
      expect(stub.calls).toHaveLength(0);
    });
  });

  describe('runJobSync', () => {
    it('returns the final answer, with the output', async () => {
      stub.answer('runSync', { id: 'sync-1', status: 'COMPLETED', output: { n: 2 }, executionTime: 40 });
      const result = await activityEnv().call(activities().runJobSync, {
        endpointId: 'ep',
        request: { input: {} },
        wait: 2_000,
      });
      expect(result).toMatchObject({
        jobId: 'sync-1',
        status: 'COMPLETED',
        output: { n: 2 },
        executionTime: 40,
      });
      expect(stub.named('runSync')[0]?.[2]).toEqual({ wait: 2_000 });
    });

    it('reports a lost /runsync answer as uncertain', async () => {
      stub.answer(
        'runSync',
        serviceError({
          kind: 'NetworkError',
          operation: 'runSync',
          retryable: true,
          mayHaveReachedService: true,
        }),
      );
      const error = failure(
        await rejection(
          activityEnv().call(activities().runJobSync, { endpointId: 'ep', request: { input: {} } }),
        ),
      );
      expect(error.type).toBe('SubmitUncertain');
    });
  });

  describe('waitForJobChange', () => {
    const waitInput = (extra: Partial<WaitForJobChangeInput> = {}): WaitForJobChangeInput => ({
      endpointId: 'ep-1',
      jobId: 'job-1',
      knownStatus: 'IN_QUEUE',
      returnBy: Date.now() + 60_000,
      polling,
      ...extra,
    });

    // The wait began now (scheduledTimestampMs), unless a test says it began earlier.
    const waitEnv = (info: Parameters<typeof activityEnv>[0] = {}) =>
      activityEnv({
        scheduledTimestampMs: Date.now(),
        currentAttemptScheduledTimestampMs: Date.now(),
        ...info,
      });

    it('returns at once when the first look finds a change', async () => {
      stub.answer(
        'status',
        status('COMPLETED', { output: { text: 'done' }, delayTime: 3, executionTime: 7 }),
      );
      const result = await waitEnv().call(activities().waitForJobChange, waitInput());
      expect(result).toMatchObject({
        reason: 'changed',
        status: 'COMPLETED',
        output: { text: 'done' },
        delayTime: 3,
        executionTime: 7,
        polls: 1,
      });
      expect(stub.named('status')).toHaveLength(1);
    });

    it('hands the wait to the server: an unchanged look fails with JobUnchanged and the next interval', async () => {
      // The clock stands still, so the interval is exact rather than bounded by how fast this ran.
      vi.useFakeTimers({ toFake: ['Date'] });
      stub.answer('status', status('IN_QUEUE'));
      const slow = { initialIntervalMs: 2_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const error = failure(
        await rejection(
          waitEnv({ attempt: 4 }).call(activities().waitForJobChange, waitInput({ polling: slow })),
        ),
      );
      expect(error).toMatchObject({
        type: 'JobUnchanged',
        nonRetryable: false,
        category: 'BENIGN',
      });
      expect(Number(error.nextRetryDelay)).toBe(2_000);
      expect(error.details?.[0]).toMatchObject({ jobId: 'job-1', knownStatus: 'IN_QUEUE', polls: 4 });
      // Nothing changed: no status beside the known one.
      expect(error.details?.[0]).not.toHaveProperty('status');
      // One look per attempt: nothing waits inside the activity.
      expect(stub.named('status')).toHaveLength(1);
    });

    it('grows the interval with the time since the wait began, across attempts and restarts', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      stub.answer('status', status('IN_QUEUE'));
      const slow = { initialIntervalMs: 2_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const delayAfter = async (elapsedMs: number) =>
        failure(
          await rejection(
            waitEnv({ attempt: 9, scheduledTimestampMs: Date.now() - elapsedMs }).call(
              activities().waitForJobChange,
              waitInput({ polling: slow }),
            ),
          ),
        ).nextRetryDelay;
      // initial + elapsed * (coefficient - 1), capped at the maximum.
      expect(await delayAfter(10_000)).toBe(7_000);
      expect(await delayAfter(3_600_000)).toBe(30_000);
    });

    it("leaves a change to its workflow task's own look a moment, then answers it", async () => {
      // A local look holds its workflow task open: the poller's answer meanwhile would make the
      // server refuse that task (activities/task-looks.ts).
      vi.useFakeTimers({ toFake: ['Date'] });
      stub.answer('status', status('COMPLETED', { output: { text: 'done' } }));
      const worker = activities();
      await activityEnv({ isLocal: true }).call(worker.fetchJobStatus, {
        endpointId: 'ep-1',
        jobId: 'job-1',
      });
      const slow = { initialIntervalMs: 200, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const left = failure(
        await rejection(waitEnv().call(worker.waitForJobChange, waitInput({ polling: slow }))),
      );
      expect(left).toMatchObject({ type: 'JobUnchanged', nonRetryable: false, category: 'BENIGN' });
      // The next look once the while is over, not at the polling interval.
      expect(Number(left.nextRetryDelay)).toBe(HELD_MS);
      expect(left.details?.[0]).toMatchObject({ status: 'COMPLETED' });
      // Another job's change is answered as ever; so is one after a look that was no local activity.
      stub.answer('status', status('COMPLETED', { id: 'job-2' }));
      expect(await waitEnv().call(worker.waitForJobChange, waitInput({ jobId: 'job-2' }))).toMatchObject({
        reason: 'changed',
      });
      await activityEnv().call(worker.fetchJobStatus, { endpointId: 'ep-1', jobId: 'job-2' });
      expect(await waitEnv().call(worker.waitForJobChange, waitInput({ jobId: 'job-2' }))).toMatchObject({
        reason: 'changed',
      });
      // Once the while is over (the task went on waiting, say), the change is answered.
      vi.setSystemTime(Date.now() + HELD_MS);
      stub.answer('status', status('COMPLETED', { output: { text: 'done' } }));
      expect(await waitEnv().call(worker.waitForJobChange, waitInput())).toMatchObject({
        reason: 'changed',
        status: 'COMPLETED',
        output: { text: 'done' },
      });
    });

    it('never asks for a retry past returnBy', async () => {
      stub.answer('status', status('IN_QUEUE'));
      const slow = { initialIntervalMs: 20_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const error = failure(
        await rejection(
          waitEnv().call(
            activities().waitForJobChange,
            waitInput({ polling: slow, returnBy: Date.now() + 3_000 }),
          ),
        ),
      );
      expect(Number(error.nextRetryDelay)).toBeLessThanOrEqual(3_000);
    });

    it('looks inline, heartbeating, while the schedule is fast, then hands over', async () => {
      stub.answer(
        'status',
        status('IN_QUEUE'),
        status('IN_QUEUE'),
        status('IN_QUEUE'),
        status('IN_PROGRESS'),
      );
      const env = waitEnv();
      const beats: Array<{ polls: number; intervalMs: number }> = [];
      env.on('heartbeat', (details) => beats.push(details));
      const result = await env.call(activities().waitForJobChange, waitInput());
      expect(result).toMatchObject({ reason: 'changed', status: 'IN_PROGRESS', polls: 4 });
      expect(beats.map((beat) => beat.polls)).toEqual([1, 2, 3]);
      // A schedule already past the inline limit does not loop.
      stub.answer('status', status('IN_QUEUE'));
      const error = failure(
        await rejection(
          waitEnv().call(
            activities().waitForJobChange,
            waitInput({ polling: { initialIntervalMs: 1_000, maxIntervalMs: 5_000, backoffCoefficient: 2 } }),
          ),
        ),
      );
      expect(error.type).toBe('JobUnchanged');
    });

    it('carries the latest progress update in the JobUnchanged details', async () => {
      stub.answer(
        'status',
        status('IN_PROGRESS', { output: 'x'.repeat(20_000) }),
        status('IN_PROGRESS', { output: { step: 3 } }),
      );
      const slow = { initialIntervalMs: 2_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const input = waitInput({ knownStatus: 'IN_PROGRESS', polling: slow });
      const big = failure(await rejection(waitEnv().call(activities().waitForJobChange, input)));
      expect(big.details?.[0]).toMatchObject({ progress: { omitted: true, bytes: 20_002 } });
      const small = failure(await rejection(waitEnv().call(activities().waitForJobChange, input)));
      expect(small.details?.[0]).toMatchObject({ progress: { step: 3 } });
    });

    it("under returnOn 'end' a start does not end the wait: it rides in the details until the job has finished", async () => {
      stub.answer(
        'status',
        status('IN_PROGRESS', { output: { step: 1 } }),
        status('COMPLETED', { output: { text: 'done' } }),
      );
      const slow = { initialIntervalMs: 2_000, maxIntervalMs: 30_000, backoffCoefficient: 1.5 };
      const input = waitInput({ returnOn: 'end', polling: slow });
      const started = failure(await rejection(waitEnv().call(activities().waitForJobChange, input)));
      expect(started.type).toBe('JobUnchanged');
      expect(started.details?.[0]).toMatchObject({
        knownStatus: 'IN_QUEUE',
        status: 'IN_PROGRESS',
        progress: { step: 1 },
      });
      const finished = await waitEnv().call(activities().waitForJobChange, input);
      expect(finished).toMatchObject({ reason: 'changed', status: 'COMPLETED', output: { text: 'done' } });
    });

    it("under returnOn 'change' (the default) a start ends the wait", async () => {
      stub.answer('status', status('IN_PROGRESS'));
      const result = await waitEnv().call(activities().waitForJobChange, waitInput());
      expect(result).toMatchObject({ reason: 'changed', status: 'IN_PROGRESS' });
    });

    it('returns with reason deadline when returnBy comes first', async () => {
      stub.answer('status', status('IN_QUEUE'));
      const result = await activityEnv().call(
        activities().waitForJobChange,
        waitInput({ returnBy: Date.now() + 50 }),
      );
      expect(result).toMatchObject({ reason: 'deadline', status: 'IN_QUEUE' });
    });

    it('ends with a CancelledFailure when the workflow cancels it', async () => {
      stub.answer('status', status('IN_QUEUE'));
      const env = activityEnv();
      let beats = 0;
      env.on('heartbeat', () => {
        beats += 1;
        if (beats === 3) env.cancel();
      });
      const error = await rejection(
        env.call(activities().waitForJobChange, waitInput({ polling: { ...polling, maxIntervalMs: 10 } })),
      );
      expect(error).toBeInstanceOf(CancelledFailure);
      expect(stub.named('status')).toHaveLength(3);
    });

    it('maps a 404 to JobExpired, never retried; a 5xx stays retryable', async () => {
      stub.answer(
        'status',
        serviceError({ kind: 'NotFound', status: 404 }),
        serviceError({ kind: 'ServerError', status: 503, retryable: true }),
      );
      const expired = failure(
        await rejection(activityEnv().call(activities().waitForJobChange, waitInput())),
      );
      expect(expired).toMatchObject({ type: 'JobExpired', nonRetryable: true });
      const server = failure(await rejection(activityEnv().call(activities().waitForJobChange, waitInput())));
      expect(server).toMatchObject({ type: 'ServerError', nonRetryable: false });
    });

    it('puts a large output in the result store and returns a reference', async () => {
      const big = { text: 'y'.repeat(5_000) };
      stub.answer('status', status('COMPLETED', { output: big }));
      const result = await activityEnv().call(
        activities({ inlineMaxBytes: 1_000 }).waitForJobChange,
        waitInput(),
      );
      expect(result.output).toBeUndefined();
      expect(result.outputRef).toMatchObject({
        kind: 'serverless-result-ref',
        store: 'local',
        key: 'wf-1/job-1',
      });
      expect(await createLocalResultStore(dir).get(result.outputRef!)).toEqual(big);
    });

    it('lets the workflow lower the inline limit per job', async () => {
      stub.answer('status', status('COMPLETED', { output: 'z'.repeat(500) }));
      const result = await activityEnv().call(
        activities().waitForJobChange,
        waitInput({ inlineMaxBytes: 100 }),
      );
      expect(result.outputRef).toBeDefined();
    });
  });

  describe('fetchJobStatus, cancelJob, retryJob', () => {
    it('passes a ttl to /status and shortens a long error text', async () => {
      stub.answer('status', status('FAILED', { error: 'e'.repeat(5_000) }));
      const result = await activityEnv().call(activities().fetchJobStatus, {
        endpointId: 'ep',
        jobId: 'job-1',
        ttl: 120_000,
      });
      expect(stub.named('status')[0]?.[2]).toMatchObject({ ttl: 120_000 });
      expect(result.error?.length).toBe(2_001);
    });

    it('looks ahead of plain looks when run as a local activity (it holds its workflow task open)', async () => {
      stub.answer('status', status('COMPLETED'), status('COMPLETED'));
      await activityEnv({ isLocal: true }).call(activities().fetchJobStatus, {
        endpointId: 'ep',
        jobId: 'job-1',
      });
      await activityEnv().call(activities().fetchJobStatus, { endpointId: 'ep', jobId: 'job-1' });
      expect(stub.named('status')[0]?.[2]).toMatchObject({ urgent: true });
      expect(stub.named('status')[1]?.[2]).not.toHaveProperty('urgent');
    });

    it('cancels, and takes a 404 as a job already gone', async () => {
      stub.answer(
        'cancel',
        { id: 'job-1', status: 'CANCELLED' },
        serviceError({ kind: 'NotFound', status: 404, operation: 'cancel' }),
      );
      expect(await activityEnv().call(activities().cancelJob, { endpointId: 'ep', jobId: 'job-1' })).toEqual({
        status: 'CANCELLED',
        gone: false,
      });
      expect(await activityEnv().call(activities().cancelJob, { endpointId: 'ep', jobId: 'job-1' })).toEqual({
        gone: true,
      });
    });

    it('retries; a refusal of a job already re-queued (a lost answer) is success', async () => {
      stub.answer('retry', serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' }));
      stub.answer('status', status('IN_QUEUE'));
      const result = await activityEnv({ attempt: 2 }).call(activities().retryJob, {
        endpointId: 'ep',
        jobId: 'job-1',
      });
      expect(result).toMatchObject({ jobId: 'job-1', status: 'IN_QUEUE' });
    });

    it('a refusal on a repeated attempt whose job already ran again is that run (COMPLETED, or FAILED again)', async () => {
      // Found by the reliability suite (test/reliability/faults.test.ts): the first /retry's answer
      // was lost, the re-queued job finished before the activity's next attempt, and the workflow
      // failed with BadRequest although the job had completed.
      stub.answer(
        'retry',
        serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' }),
        serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' }),
      );
      stub.answer('status', status('COMPLETED', { output: { ok: 1 } }), status('FAILED', { error: 'again' }));
      const completed = await activityEnv({ attempt: 3 }).call(activities().retryJob, {
        endpointId: 'ep',
        jobId: 'job-1',
      });
      expect(completed).toMatchObject({ jobId: 'job-1', status: 'COMPLETED', output: { ok: 1 } });
      const failedAgain = await activityEnv({ attempt: 2 }).call(activities().retryJob, {
        endpointId: 'ep',
        jobId: 'job-1',
      });
      expect(failedAgain).toMatchObject({ jobId: 'job-1', status: 'FAILED', error: 'again' });
    });

    it('on a first attempt, a refusal of a job someone else retried is that run', async () => {
      stub.answer('retry', serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' }));
      stub.answer('status', status('COMPLETED', { output: { ok: 2 } }));
      const result = await activityEnv().call(activities().retryJob, { endpointId: 'ep', jobId: 'job-1' });
      expect(result).toMatchObject({ jobId: 'job-1', status: 'COMPLETED', output: { ok: 2 } });
    });

    it('on a first attempt, a refusal of a job still FAILED stands; a 404 is JobExpired', async () => {
      stub.answer(
        'retry',
        serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' }),
        serviceError({ kind: 'NotFound', status: 404, operation: 'retry' }),
      );
      stub.answer('status', status('FAILED'));
      const refused = failure(
        await rejection(activityEnv().call(activities().retryJob, { endpointId: 'ep', jobId: 'job-1' })),
      );
      expect(refused.type).toBe('BadRequest');
      const expired = failure(
        await rejection(activityEnv().call(activities().retryJob, { endpointId: 'ep', jobId: 'job-1' })),
      );
      expect(expired.type).toBe('JobExpired');
    });
  });

  describe('streamJob', () => {
    const chunk = (text: string) => ({ output: { text: [text] }, metrics: { scenario: 'stream' } });

    it('drains /stream into a file, one batch at a time, until the job has finished', async () => {
      stub.answer(
        'stream',
        { chunks: [chunk('a'), chunk('b')] },
        { chunks: [] },
        { chunks: [chunk('c')] },
        { chunks: [] },
      );
      stub.answer('status', status('IN_PROGRESS'), status('COMPLETED'));
      const env = activityEnv();
      const beats: unknown[] = [];
      env.on('heartbeat', (details) => beats.push(details));
      const result = await env.call(activities().streamJob, {
        endpointId: 'ep',
        jobId: 'job-1',
        sink: { kind: 'file', name: 'out.jsonl' },
        firstIndex: 4,
        polling,
      });
      expect(result).toEqual({ chunks: 3, batches: 2, finalStatus: 'COMPLETED' });
      const lines = readFileSync(path.join(dir, 'streams', 'out.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.map((line) => [line.index, line.output.text[0], line.jobId])).toEqual([
        [4, 'a', 'job-1'],
        [5, 'b', 'job-1'],
        [6, 'c', 'job-1'],
      ]);
      expect(beats.at(-1)).toMatchObject({ chunks: 3, batches: 2 });
    });

    it('reads the status from the hosted service`s { status, stream } answer without asking /status', async () => {
      stub.answer(
        'stream',
        { status: 'IN_PROGRESS', chunks: [chunk('a')] },
        { status: 'COMPLETED', chunks: [] },
      );
      const batches: JobStreamBatch[] = [];
      const result = await activityEnv().call(
        activities({ streamSinks: { collect: async (batch) => void batches.push(batch) } }).streamJob,
        {
          endpointId: 'ep',
          jobId: 'job-1',
          sink: { kind: 'function', name: 'collect' },
          firstIndex: 0,
          polling,
        },
      );
      expect(result).toEqual({ chunks: 1, batches: 1, finalStatus: 'COMPLETED' });
      expect(batches).toEqual([{ workflowId: 'wf-1', jobId: 'job-1', firstIndex: 0, chunks: [chunk('a')] }]);
      expect(stub.named('status')).toHaveLength(0);
    });

    it('refuses an unknown sink function before reading anything', async () => {
      const error = failure(
        await rejection(
          activityEnv().call(activities().streamJob, {
            endpointId: 'ep',
            jobId: 'job-1',
            sink: { kind: 'function', name: 'nope' },
            firstIndex: 0,
            polling,
          }),
        ),
      );
      expect(error).toMatchObject({ type: 'StreamSinkError', nonRetryable: true });
      expect(stub.calls).toHaveLength(0);
    });

    it('fails (retryably) when the sink fails, without counting the batch', async () => {
      stub.answer('stream', { chunks: [chunk('a')] });
      const env = activityEnv();
      const beats: unknown[] = [];
      env.on('heartbeat', (details) => beats.push(details));
      const error = failure(
        await rejection(
          env.call(
            activities({
              streamSinks: {
                broken: async () => {
                  throw new Error('disk full');
                },
              },
            }).streamJob,
            {
              endpointId: 'ep',
              jobId: 'job-1',
              sink: { kind: 'function', name: 'broken' },
              firstIndex: 0,
              polling,
            },
          ),
        ),
      );
      expect(error.nonRetryable).toBe(false);
      expect(error.message).toContain('disk full');
      expect(beats).toHaveLength(0);
    });
  });
});
