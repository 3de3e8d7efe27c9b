/**
 * The ephemeral endpoint running its work through the batch engine, on the time-skipping server:
 * the endpoint activities and the batch activities are fakes, the batch workflow is the real one
 * (a child of the ephemeral workflow, in the same bundle). Teardown runs after a batch that
 * succeeded, failed past its tolerance (summary kept) or was cancelled; the window holds; `jobs`
 * of the library's job type run as one batch, other `jobs` as child job workflows.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchActivities } from '../../activities/batch';
import type { EphemeralBatch } from '../../contracts/endpoint-input';
import type { EphemeralBatchFailure } from '../../contracts/endpoint-results';
import { EPHEMERAL_FAILURE } from '../../contracts/failures';
import { batchProgressQuery } from '../../workflows/batch/batch-definitions';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import type { ephemeralEndpointWorkflow } from '../../workflows/endpoint/endpoint-lifecycle';
import { fakeEndpointService } from '../support/endpoint-fakes';
import { bundleWorkflows, failureOf, quietRuntime, withWorker } from '../support/workflow-harness';
import { type Fate, fakeService } from './batch-harness';
import { jobTestEnv } from './job-harness';
import { until } from './wait-for';

quietRuntime();

type EphemeralInput = Parameters<typeof ephemeralEndpointWorkflow>[0];

const ENDPOINT = { templateId: 'tpl', gpuIds: 'AMPERE_24', workersMax: 2 } as const;

const items = (count: number) => ({
  inline: Array.from({ length: count }, (_, i) => ({ input: { i } })),
});

/** The fake endpoint service and the fake batch service, writing one log of calls in order. */
function setup(total: number, plan?: (index: number, attempt: number) => Fate) {
  const events: string[] = [];
  const endpoint = fakeEndpointService({
    before: async (call) => {
      events.push(call.name);
    },
  });
  const batch = fakeService(total, plan);
  const logged = Object.fromEntries(
    Object.entries(batch.activities).map(([name, activity]) => [
      name,
      async (...args: unknown[]) => {
        events.push(name);
        return (activity as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as BatchActivities;
  const stubs = { async stubJobStarted() {}, async stubJobCancelled() {}, async stubJobHang() {} };
  return { events, endpoint, batch, activities: { ...endpoint.activities, ...logged, ...stubs } };
}

const batchInput = (batch: EphemeralBatch | Record<string, unknown>): EphemeralInput => ({
  endpoint: ENDPOINT,
  batch: batch as EphemeralInput['batch'],
});

let seq = 0;
const nextId = () => `ephemeral-batch-${++seq}-${Date.now()}`;

describe('ephemeralEndpointWorkflow through the batch engine (time-skipping, mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    // The batch child carries the endpoint id search attribute, which the test server must know.
    env = await jobTestEnv();
    bundle = await bundleWorkflows(require.resolve('./ephemeral-batch-workflows.ts'));
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs the batch as one child within its window, returns its summary, then tears down', async () => {
    const { events, endpoint, batch, activities } = setup(10, () => 'held');
    const workflowId = nextId();
    const { result, child, phases } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId,
          args: [batchInput({ items: items(10), maxConcurrency: 3, pageSize: 2 })],
        },
      );
      const batchHandle = env.client.workflow.getHandle(`${workflowId}/batch`);
      // The window is full: 3 jobs in flight and the 7 others wait for a slot.
      await until(() => batch.live() === 3, 'three jobs in flight');
      const progress = await batchHandle.query(batchProgressQuery);
      expect(progress).toMatchObject({ total: 10, maxConcurrency: 3, done: 0 });
      batch.releaseAll();
      const result = await handle.result();
      const status = await handle.query(endpointLifecycleQuery);
      return {
        result,
        child: (await batchHandle.describe()).type,
        phases: status.phases.map((entry) => entry.phase),
      };
    });
    expect(child).toBe('serverlessBatch');
    expect(batch.maxInFlight()).toBe(3);
    expect(result).toMatchObject({
      endpointId: 'ep-1',
      results: [],
      batch: {
        batchId: `${workflowId}/batch`,
        endpointId: 'ep-1',
        total: 10,
        counts: { completed: 10, failed: 0 },
        failures: 0,
        toleranceExceeded: false,
      },
      teardown: { endpointIds: ['ep-1'], alreadyGone: false },
    });
    expect(batch.lines).toHaveLength(10);
    expect(phases.slice(0, 3)).toEqual(['starting', 'provisioning', 'running-jobs']);
    expect(phases.at(-1)).toBe('done');
    // The batch ran on the endpoint, and ended before the first step of teardown.
    expect(events.indexOf('createEndpoint')).toBeLessThan(events.indexOf('stageBatchItems'));
    expect(events.lastIndexOf('watchBatchJobs')).toBeLessThan(events.indexOf('readEndpoint'));
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(endpoint.endpoints.size).toBe(0);
  });

  it('past the tolerance: tears down, then fails with EphemeralBatchFailed carrying the summary', async () => {
    const fails = new Set([1, 4, 7]);
    const { events, endpoint, batch, activities } = setup(10, (i) => (fails.has(i) ? 'FAILED' : 'COMPLETED'));
    const failure = await withWorker(env, bundle, activities, (taskQueue) =>
      failureOf(
        env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
          taskQueue,
          workflowId: nextId(),
          args: [batchInput({ items: items(10), failureTolerance: { count: 2 } })],
        }),
      ),
    );
    expect(failure.type).toBe(EPHEMERAL_FAILURE.batchFailed);
    expect(failure.nonRetryable).toBe(true);
    const details = failure.details?.[0] as EphemeralBatchFailure;
    expect(details).toMatchObject({
      endpointId: 'ep-1',
      batch: { total: 10, counts: { completed: 7, failed: 3 }, failures: 3, toleranceExceeded: true },
      batchFailure: { type: 'BatchToleranceExceeded' },
      teardown: { endpointIds: ['ep-1'] },
    });
    expect(details.batch.results.key).toBe('batch-test');
    // No result is lost: one line per item, the failures included.
    expect(batch.lines.map((line) => line.index).sort((a, b) => a - b)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(endpoint.endpoints.size).toBe(0);
  });

  it('within the tolerance: succeeds with the failures counted', async () => {
    const { endpoint, activities } = setup(6, (i) => (i === 2 ? 'FAILED' : 'COMPLETED'));
    const result = await withWorker(env, bundle, activities, (taskQueue) =>
      env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
        taskQueue,
        workflowId: nextId(),
        args: [batchInput({ items: items(6), failureTolerance: { count: 1 } })],
      }),
    );
    expect(result.batch).toMatchObject({ total: 6, counts: { completed: 5, failed: 1 }, failures: 1 });
    expect(endpoint.endpoints.size).toBe(0);
  });

  it('cancelled mid-batch: the jobs in flight are cancelled at the service, then the endpoint is deleted', async () => {
    const { events, endpoint, batch, activities } = setup(8, () => 'held');
    const workflowId = nextId();
    const { error, description, status } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        { taskQueue, workflowId, args: [batchInput({ items: items(8), maxConcurrency: 4 })] },
      );
      await until(() => batch.live() === 4, 'four jobs in flight');
      await handle.cancel();
      const error = await handle.result().catch((caught: unknown) => caught);
      return {
        error,
        description: await handle.describe(),
        status: await handle.query(endpointLifecycleQuery),
      };
    });
    expect(error).toBeInstanceOf(Error);
    expect(description.status.name).toBe('CANCELLED');
    expect(status.phase).toBe('cancelled');
    expect(batch.cancelled).toHaveLength(4);
    expect(events.indexOf('cancelBatchJobs')).toBeGreaterThan(-1);
    expect(events.indexOf('cancelBatchJobs')).toBeLessThan(events.indexOf('readEndpoint'));
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(endpoint.endpoints.size).toBe(0);
  });

  it('runs `jobs` of the library job type with shared options as one batch', async () => {
    const { endpoint, batch, activities } = setup(3);
    const workflowId = nextId();
    const { result, child } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const result = await env.client.workflow.execute<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId,
          args: [
            {
              endpoint: ENDPOINT,
              jobs: [0, 1, 2].map((i) => ({ input: { request: { input: { i } }, maxSubmissions: 2 } })),
            },
          ],
        },
      );
      return { result, child: (await env.client.workflow.getHandle(`${workflowId}/batch`).describe()).type };
    });
    expect(child).toBe('serverlessBatch');
    expect(result).toMatchObject({ results: [], batch: { total: 3, counts: { completed: 3 } } });
    expect(batch.submitsPerItem.size).toBe(3);
    expect(endpoint.endpoints.size).toBe(0);
  });

  it('runs `jobs` whose options differ as child job workflows, as before', async () => {
    const { endpoint, batch, activities } = setup(2);
    const workflowId = nextId();
    const { result, child } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const result = await env.client.workflow.execute<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId,
          args: [
            {
              endpoint: ENDPOINT,
              jobs: [
                { input: { request: { input: { i: 0 } }, maxSubmissions: 2 } },
                { input: { request: { input: { i: 1 } }, maxSubmissions: 3 } },
              ],
            },
          ],
        },
      );
      return { result, child: (await env.client.workflow.getHandle(`${workflowId}/job-1`).describe()).type };
    });
    // The stand-in registered as serverlessJob answers with the endpoint it was given.
    expect(child).toBe('serverlessJob');
    expect(result.results).toEqual([{ endpointId: 'ep-1' }, { endpointId: 'ep-1' }]);
    expect(result.batch).toBeUndefined();
    expect(batch.submitsPerItem.size).toBe(0);
    expect(endpoint.endpoints.size).toBe(0);
  });
});
