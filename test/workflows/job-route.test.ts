/**
 * The job workflow on a route, on the time-skipping server with mocked activities: a job queued
 * past the route's queueDelayLimit on an endpoint with no idle worker is withdrawn and submitted to
 * the next endpoint; one that has room (or whose look failed) is looked at again half a limit later; one
 * seen started stays; one that finished first is watched to its end; a capacity failure moves on
 * instead of a retry; the last endpoint is never left.
 */
import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteActivities, WithdrawalOutcome } from '../../activities/route';
import { jobCurrentDetails } from '../../contracts/current-details';
import { JOB_UNCHANGED } from '../../contracts/failures';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { JobSnapshot } from '../../contracts/job-snapshot';
import type { WaitForJobChangeInput } from '../../contracts/job-types';
import type { EndpointCapacity } from '../../contracts/route';
import { jobSnapshotQuery } from '../../workflows/job/job-definitions';
import {
  bundleJobWorkflow,
  fakeJob,
  jobTestEnv,
  quietRuntime,
  submitted,
  waitResult,
  withWorker,
} from './job-harness';
import type { serverlessJob } from './job-test-workflows';

quietRuntime();

const ROOMLESS: EndpointCapacity = { idle: 0, running: 0, inQueue: 1, throttled: 1 };
const ROOMY: EndpointCapacity = { idle: 1, running: 0, inQueue: 1 };

const input = (extra: Partial<JobWorkflowInput> = {}): JobWorkflowInput => ({
  route: {
    endpoints: [{ endpointId: 'a' }, { endpointId: 'b', inputOverrides: { precision: 'fp16' } }],
    queueDelayLimit: '5 seconds',
    capacityFailures: ['out of memory'],
  },
  request: { input: { prompt: 'hello', precision: 'fp32' } },
  submitLease: false,
  ...extra,
});

type Call = { name: string; input: unknown; at: number };

/**
 * A job per endpoint (job-a, job-b, ...): `statuses[endpoint]` says how its poller answers (a
 * status, or 'queued': it stays IN_QUEUE until its poller is cancelled); the route activities
 * answer with `capacity` (one answer per look, the last repeated) and `withdrawal`.
 */
function routeFake(options: {
  statuses: Record<string, 'queued' | 'COMPLETED' | 'FAILED' | 'started' | 'ended'>;
  /** One answer per look, the last repeated; 'fails': the look itself fails. */
  capacity?: Array<EndpointCapacity | 'fails'>;
  withdrawal?: WithdrawalOutcome;
}) {
  const calls: Call[] = [];
  // When the workflow scheduled it, on the server's (skipping) clock.
  const record = (name: string, input: unknown) =>
    calls.push({ name, input, at: Context.current().info.currentAttemptScheduledTimestampMs });
  let withdrawn = false;
  const jobs = fakeJob({
    submitJob: async (req) => submitted(`job-${req.endpointId}`),
    waitForJobChange: async (req: WaitForJobChangeInput) => {
      const behaviour = options.statuses[req.endpointId];
      if (behaviour === 'COMPLETED')
        return waitResult(req.jobId, 'COMPLETED', { output: { on: req.endpointId } });
      if (behaviour === 'FAILED')
        return waitResult(req.jobId, 'FAILED', { error: 'torch.OutOfMemoryError: CUDA out of memory' });
      if (behaviour === 'started' && req.knownStatus === 'IN_PROGRESS')
        return waitResult(req.jobId, 'COMPLETED', { output: { on: req.endpointId } });
      // Queued ('started': until it was looked at): the look finds nothing new and hands the
      // timer to the server, as the real poller does, so the test server's clock can skip ahead.
      if (behaviour === 'started' && withdrawn) return waitResult(req.jobId, 'IN_PROGRESS');
      if (behaviour === 'ended' && withdrawn)
        return waitResult(req.jobId, 'COMPLETED', { output: { on: req.endpointId } });
      throw ApplicationFailure.create({
        type: JOB_UNCHANGED,
        message: 'unchanged',
        nextRetryDelay: '1 minute',
      });
    },
  });
  let looks = 0;
  const route: Pick<RouteActivities, 'endpointCapacity' | 'withdrawQueuedJobs'> = {
    endpointCapacity: async (req) => {
      record('endpointCapacity', req);
      const answers = options.capacity ?? [ROOMLESS];
      const answer = answers[Math.min(looks++, answers.length - 1)];
      if (answer === 'fails')
        throw ApplicationFailure.create({ type: 'Unauthorized', message: 'HTTP 401', nonRetryable: true });
      return answer as EndpointCapacity;
    },
    withdrawQueuedJobs: async (req) => {
      record('withdrawQueuedJobs', req);
      withdrawn = true;
      return {
        results: req.jobs.map(([i, jobId]) => ({ i, jobId, outcome: options.withdrawal ?? 'withdrawn' })),
      };
    },
  };
  const named = (name: string) => calls.filter((call) => call.name === name);
  return { activities: { ...jobs.activities, ...route }, jobs, named };
}

describe('job workflow on a route', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  let id = 0;

  beforeAll(async () => {
    env = await jobTestEnv();
    bundle = await bundleJobWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const run = (fake: ReturnType<typeof routeFake>, args: JobWorkflowInput = input()) =>
    withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof serverlessJob>('serverlessJob', {
        taskQueue,
        workflowId: `job-route-${++id}`,
        args: [args],
      });
      const result = await handle.result();
      return { result, snapshot: await handle.query(jobSnapshotQuery) };
    });

  it('withdraws a job starved on its endpoint after queueDelayLimit and completes it on the next one', async () => {
    const fake = routeFake({ statuses: { a: 'queued', b: 'COMPLETED' } });
    const { result, snapshot } = await run(fake);

    expect(result).toMatchObject({
      endpointId: 'b',
      jobId: 'job-b',
      output: { on: 'b' },
      jobIds: ['job-a', 'job-b'],
      submissions: 2,
      hops: [{ from: 'a', to: 'b', jobId: 'job-a', reason: 'starved' }],
    });
    const submits = fake.jobs.named('submitJob').map((call) => call.input);
    expect(submits).toEqual([
      { endpointId: 'a', request: { input: { prompt: 'hello', precision: 'fp32' } } },
      {
        endpointId: 'b',
        request: { input: { prompt: 'hello', precision: 'fp32' } },
        inputOverrides: { precision: 'fp16' },
        hop: 'starved',
      },
    ]);
    expect(fake.named('endpointCapacity').map((call) => call.input)).toEqual([{ endpointId: 'a' }]);
    expect(fake.named('withdrawQueuedJobs').map((call) => call.input)).toEqual([
      { endpointId: 'a', jobs: [[0, 'job-a']] },
    ]);
    // Looked at once the job had waited the limit since its submit, not before.
    const hop = result.hops?.[0];
    const firstSubmit = snapshot.timings.startedAt;
    expect((hop?.at ?? 0) - firstSubmit).toBeGreaterThanOrEqual(5_000);
    expect(snapshot).toMatchObject({ phase: 'completed', endpointId: 'b', hops: result.hops });
    // The job on the last endpoint is never looked at: it has nowhere to go.
    expect(fake.named('endpointCapacity')).toHaveLength(1);
  });

  it('looks again half a queueDelayLimit later when the endpoint has an idle worker', async () => {
    const fake = routeFake({ statuses: { a: 'queued', b: 'COMPLETED' }, capacity: [ROOMY, ROOMLESS] });
    const { result, snapshot } = await run(fake);

    const looks = fake.named('endpointCapacity').map((call) => call.at);
    expect(looks).toHaveLength(2);
    expect((looks[1] as number) - (looks[0] as number)).toBeGreaterThanOrEqual(2_500);
    expect(fake.named('withdrawQueuedJobs')).toHaveLength(1);
    expect(result.hops).toEqual([expect.objectContaining({ from: 'a', to: 'b', reason: 'starved' })]);
    expect((result.hops?.[0]?.at ?? 0) - snapshot.timings.startedAt).toBeGreaterThanOrEqual(7_500);
  });

  it('leaves a job seen started where it runs, and never looks at it again', async () => {
    const fake = routeFake({ statuses: { a: 'started' }, withdrawal: 'started' });
    const { result, snapshot } = await run(fake);

    expect(result).toMatchObject({ endpointId: 'a', jobId: 'job-a', jobIds: ['job-a'], hops: [] });
    expect(fake.jobs.named('submitJob')).toHaveLength(1);
    expect(fake.named('endpointCapacity')).toHaveLength(1);
    expect(snapshot).toMatchObject({ endpointId: 'a', hops: [] });
  });

  it('keeps watching a job that finished before its withdrawal', async () => {
    const fake = routeFake({ statuses: { a: 'ended' }, withdrawal: 'ended' });
    const { result } = await run(fake);

    expect(result).toMatchObject({ endpointId: 'a', jobIds: ['job-a'], output: { on: 'a' }, hops: [] });
    expect(fake.jobs.named('submitJob')).toHaveLength(1);
    expect(fake.named('withdrawQueuedJobs')).toHaveLength(1);
  });

  it('looks again half a queueDelayLimit later when the look at the endpoint fails', async () => {
    const fake = routeFake({ statuses: { a: 'queued', b: 'COMPLETED' }, capacity: ['fails', ROOMLESS] });
    const { result } = await run(fake);

    const looks = fake.named('endpointCapacity').map((call) => call.at);
    expect(looks).toHaveLength(2);
    expect((looks[1] as number) - (looks[0] as number)).toBeGreaterThanOrEqual(2_500);
    expect(result).toMatchObject({ endpointId: 'b', hops: [{ from: 'a', to: 'b', reason: 'starved' }] });
  });

  it('a job that fails on its last endpoint after a move names the move in its failure details', async () => {
    const fake = routeFake({ statuses: { a: 'FAILED', b: 'FAILED' } });
    const failure = await run(fake).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('JobFailed');
    expect(cause.details?.[0]).toMatchObject({
      endpointId: 'b',
      jobIds: ['job-a', 'job-b'],
      hops: [{ from: 'a', to: 'b', jobId: 'job-a', reason: 'capacity-failure' }],
    });
  });

  it('moves a capacity failure to the next endpoint instead of retrying it', async () => {
    const fake = routeFake({ statuses: { a: 'FAILED', b: 'COMPLETED' } });
    const { result } = await run(fake, input({ retry: { maxRetries: 2 } }));

    expect(result).toMatchObject({
      endpointId: 'b',
      jobIds: ['job-a', 'job-b'],
      retries: 0,
      hops: [{ from: 'a', to: 'b', jobId: 'job-a', reason: 'capacity-failure' }],
    });
    expect(fake.jobs.named('retryJob')).toHaveLength(0);
    expect(fake.jobs.named('submitJob')[1]?.input).toMatchObject({
      endpointId: 'b',
      hop: 'capacity-failure',
    });
    expect(fake.named('endpointCapacity')).toHaveLength(0);
  });

  it('a job on a single endpoint carries no moves and is never looked at', async () => {
    const fake = routeFake({ statuses: { 'ep-1': 'COMPLETED' } });
    const { result, snapshot } = await run(fake, {
      endpointId: 'ep-1',
      request: { input: {} },
      submitLease: false,
    });
    expect(result).not.toHaveProperty('hops');
    expect(snapshot).not.toHaveProperty('hops');
    expect(fake.jobs.named('submitJob')[0]?.input).toEqual({ endpointId: 'ep-1', request: { input: {} } });
  });
});

describe("a routed job's current details", () => {
  const snapshot = (extra: Partial<JobSnapshot>): JobSnapshot =>
    ({
      phase: 'waiting',
      endpointId: 'b',
      status: 'IN_QUEUE',
      jobId: 'job-b',
      attempts: 2,
      ...extra,
    }) as JobSnapshot;

  it('name the endpoint the job is on and each move', () => {
    const text = jobCurrentDetails(
      snapshot({ hops: [{ from: 'a', to: 'b', jobId: 'job-a', reason: 'starved', at: 1 }] }),
    );
    expect(text).toContain('| Endpoint | b |');
    expect(text).toContain('| Moves | a → b (starved, job job-a) |');
  });

  it('show no endpoint or moves for a job on a single endpoint', () => {
    const text = jobCurrentDetails(snapshot({}));
    expect(text).not.toContain('Endpoint');
    expect(text).not.toContain('Moves');
  });
});
