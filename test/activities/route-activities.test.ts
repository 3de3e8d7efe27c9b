/**
 * The route activities against the emulator over HTTP, on its frozen clock: an endpoint's room
 * from /health, and the withdrawal of queued jobs (cancelled only while queued, withdrawn only when
 * confirmed never started, a started job left where it runs), including an attempt retried after
 * it sent a /cancel and died before confirming it.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRouteActivities } from '../../activities/route';
import type { ServiceClient } from '../../api';
import { type LibraryMetrics, noopMetrics, type RouteWithdrawalOutcome } from '../../api/metrics';
import { clientFor, startService, TEST_KEY, type TestService } from '../api/helpers';

let service: TestService;
let client: ServiceClient;
let counted: RouteWithdrawalOutcome[];
const metrics: LibraryMetrics = { ...noopMetrics, routeWithdrawal: (outcome) => counted.push(outcome) };
let counter = 0;

beforeAll(async () => {
  service = await startService();
  client = clientFor(service);
});
afterAll(() => service.close());
beforeEach(() => {
  service.reset();
  counted = [];
});

function endpoint(workersMax = 1): string {
  return service.control.createEndpoint(TEST_KEY, {
    name: `route-${++counter}`,
    templateId: 'scripted',
    flashBootType: 'FLASHBOOT',
    workersMax,
  }).id;
}

function run<A extends unknown[], R>(
  fn: (...args: A) => Promise<R>,
  args: A,
  heartbeatDetails?: unknown,
): Promise<R> {
  const env = new MockActivityEnvironment({
    workflowExecution: { workflowId: 'wf-route', runId: 'run-1' },
    ...(heartbeatDetails === undefined ? {} : { heartbeatDetails }),
  });
  return env.run(fn, ...args);
}

const activities = () => createRouteActivities({ client, metrics });
const submit = async (endpointId: string, sleepMs = 60_000) =>
  (await client.jobs.run(endpointId, { input: { sleepMs } })).id;

describe('endpointCapacity', () => {
  it("reads /health's idle, running and queued counters, and throttled where the host reports it", async () => {
    const id = endpoint(1);
    service.control.starveEndpoint(id);
    await submit(id);
    service.control.advance(0);
    expect(await run(activities().endpointCapacity, [{ endpointId: id }])).toEqual({
      idle: 0,
      running: 0,
      inQueue: 1,
      throttled: 1,
    });
  });

  it('refuses a bad endpoint id before any call', async () => {
    await expect(run(activities().endpointCapacity, [{ endpointId: '' }])).rejects.toThrow(
      /invalid activity input: input\.endpointId/,
    );
  });
});

describe('endpointWorkers', () => {
  it("gives each named endpoint's maximum worker count from the account's listing, leaving out unknown ones", async () => {
    const a = endpoint(3);
    const b = endpoint(7);
    expect(await run(activities().endpointWorkers, [{ endpointIds: [a, b, 'not-mine'] }])).toEqual({
      workersMax: { [a]: 3, [b]: 7 },
    });
  });
});

describe('withdrawQueuedJobs', () => {
  it('cancels a queued job of a starved endpoint and confirms it never started', async () => {
    const id = endpoint(1);
    service.control.starveEndpoint(id);
    const jobId = await submit(id);
    service.control.advance(1_000);
    const answer = await run(activities().withdrawQueuedJobs, [{ endpointId: id, jobs: [[4, jobId]] }]);
    expect(answer.results).toEqual([{ i: 4, jobId, outcome: 'withdrawn' }]);
    expect((await client.jobs.status(id, jobId)).status).toBe('CANCELLED');
    expect(counted).toEqual(['withdrawn']);
  });

  it('leaves a started job where it runs, and tells a finished one from a gone one', async () => {
    const id = endpoint(2);
    const running = await submit(id);
    const finished = await submit(id, 1);
    service.control.advance(10_000);
    expect((await client.jobs.status(id, running)).status).toBe('IN_PROGRESS');
    expect((await client.jobs.status(id, finished)).status).toBe('COMPLETED');
    const answer = await run(activities().withdrawQueuedJobs, [
      {
        endpointId: id,
        jobs: [
          [0, running],
          [1, finished],
          [2, 'no-such-job'],
        ],
      },
    ]);
    expect(answer.results.map((result) => result.outcome)).toEqual(['started', 'ended', 'gone']);
    expect((await client.jobs.status(id, running)).status).toBe('IN_PROGRESS');
    expect(counted).toEqual(['started']);
  });

  it('a retried attempt confirms the cancel an earlier attempt sent before it died, and skips what it had done', async () => {
    const id = endpoint(1);
    service.control.starveEndpoint(id);
    const done = await submit(id);
    const cancelling = await submit(id);
    await client.jobs.cancel(id, cancelling);
    const answer = await run(
      activities().withdrawQueuedJobs,
      [
        {
          endpointId: id,
          jobs: [
            [0, done],
            [1, cancelling],
          ],
        },
      ],
      { results: [{ i: 0, jobId: done, outcome: 'withdrawn' }], cancelling },
    );
    expect(answer.results).toEqual([
      { i: 0, jobId: done, outcome: 'withdrawn' },
      { i: 1, jobId: cancelling, outcome: 'withdrawn' },
    ]);
    // The job the earlier attempt had done is not looked at again: still queued here.
    expect((await client.jobs.status(id, done)).status).toBe('IN_QUEUE');
  });

  it('a job cancelled by someone else is not taken for a withdrawal', async () => {
    const id = endpoint(1);
    service.control.starveEndpoint(id);
    const jobId = await submit(id);
    await client.jobs.cancel(id, jobId);
    const answer = await run(activities().withdrawQueuedJobs, [{ endpointId: id, jobs: [[0, jobId]] }]);
    expect(answer.results).toEqual([{ i: 0, jobId, outcome: 'ended' }]);
  });
});
