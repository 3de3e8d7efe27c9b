import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecyclePhase } from '../../contracts/endpoint-results';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import type { teardownEndpointWorkflow } from '../../workflows/endpoint/endpoint-lifecycle';
import { type FakeOptions, fakeEndpointService, healthOf } from '../support/endpoint-fakes';
import { bundleEndpointWorkflows, failureOf, quietRuntime, withWorker } from '../support/endpoint-harness';
import { timeSkippingEnv, uniqueTaskQueue } from '../support/temporal';
import { activitySummaries, timerSummaries } from '../support/workflow-metadata';

quietRuntime();

type TeardownInput = Parameters<typeof teardownEndpointWorkflow>[0];

describe('teardownEndpointWorkflow (time-skipping, mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    // One after the other: the test server must answer within 5 s, which a busy machine may miss while bundling.
    env = await timeSkippingEnv();
    bundle = await bundleEndpointWorkflows();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  /** An endpoint with workers up, and a teardown of it run to the end; returns the phases entered too. */
  async function run(
    input: Omit<TeardownInput, 'endpointId'> & { endpointId?: string },
    options: FakeOptions = {},
  ) {
    const fake = fakeEndpointService(options);
    const endpoint = fake.seed({
      name: 'doomed',
      templateId: 'tpl',
      gpuIds: 'AMPERE_16',
      workersMin: 1,
      workersMax: 3,
      networkVolumeId: 'vol-1',
    });
    fake.volumes.add('vol-1');
    const workflowId = uniqueTaskQueue('teardown');
    const { result, phases, status, history } = await withWorker(
      env,
      bundle,
      fake.activities,
      async (taskQueue) => {
        const result = await env.client.workflow.execute<typeof teardownEndpointWorkflow>(
          'teardownEndpointWorkflow',
          {
            taskQueue,
            workflowId,
            args: [{ endpointId: endpoint.id, ...input } as TeardownInput],
          },
        );
        const handle = env.client.workflow.getHandle(workflowId);
        const status = await handle.query(endpointLifecycleQuery);
        return {
          result,
          phases: status.phases.map((entry) => entry.phase),
          status,
          history: await handle.fetchHistory(),
        };
      },
    );
    const times = new Map(status.phases.map((entry) => [entry.phase, entry.at]));
    return { fake, endpoint, result, phases, times, history };
  }

  it('purge (default): scales to zero, purges, drains, then deletes', async () => {
    const { fake, endpoint, result, phases, history } = await run({}, { queued: 4 });
    expect(phases).toEqual([
      'starting',
      'resolving',
      'scaling-to-zero',
      'purging-queue',
      'draining-workers',
      'deleting-endpoint',
      'done',
    ]);
    expect(fake.names()).toEqual([
      'readEndpoint',
      'updateEndpoint',
      'purgeEndpointQueue',
      'endpointHealth',
      'deleteEndpoint',
    ]);
    expect(fake.calls[1]!.args[0]).toEqual({
      id: endpoint.id,
      name: 'doomed',
      templateId: 'tpl',
      gpuIds: 'AMPERE_16',
      workersMin: 0,
      workersMax: 0,
    });
    expect(fake.endpoints.has(endpoint.id)).toBe(false);
    // Each activity says in the UI what it does to which endpoint.
    expect(activitySummaries(history)).toEqual([
      ['readEndpoint', `read endpoint ${endpoint.id}`],
      ['updateEndpoint', `scale endpoint ${endpoint.id} to zero workers`],
      ['purgeEndpointQueue', `purge the queue of endpoint ${endpoint.id}`],
      ['endpointHealth', `look at endpoint ${endpoint.id}'s health (waiting for its workers to stop)`],
      ['deleteEndpoint', `delete endpoint ${endpoint.id}`],
    ]);
    expect(result).toEqual({
      endpointIds: [endpoint.id],
      alreadyGone: false,
      purged: 4,
      cancelled: [],
      jobsFinished: true,
      drained: true,
      networkVolumesDeleted: [],
    });
    expect(fake.volumes.has('vol-1')).toBe(true);
  });

  it('cancel: purges, cancels the listed jobs, drains, then deletes', async () => {
    const { fake, result, phases } = await run({ jobs: { mode: 'cancel', jobIds: ['job-a', 'job-b'] } });
    expect(phases.slice(2, -1)).toEqual([
      'scaling-to-zero',
      'purging-queue',
      'cancelling-jobs',
      'draining-workers',
      'deleting-endpoint',
    ]);
    // Sent together, so they may reach the service in either order.
    const cancels = fake.calls
      .filter((call) => call.name === 'cancelEndpointJob')
      .map((call) => call.args[1]);
    expect(cancels.sort()).toEqual(['job-a', 'job-b']);
    expect(result.cancelled).toEqual([
      { jobId: 'job-a', status: 'CANCELLED' },
      { jobId: 'job-b', status: 'CANCELLED' },
    ]);
  });

  it('wait: lets in-progress jobs finish within the bound, cancels nothing, then purges and deletes', async () => {
    const { fake, result, phases } = await run(
      { jobs: { mode: 'wait', timeout: '1 hour', jobIds: ['job-a'] }, pollInterval: '10 seconds' },
      // In progress for the first three looks, then done; the worker stops with it.
      { health: (_id, n) => (n < 3 ? healthOf(1, 1) : healthOf(0, 0)) },
    );
    expect(phases.slice(2, -1)).toEqual([
      'scaling-to-zero',
      'waiting-for-jobs',
      'purging-queue',
      'draining-workers',
      'deleting-endpoint',
    ]);
    expect(fake.names()).not.toContain('cancelEndpointJob');
    expect(result).toMatchObject({ jobsFinished: true, drained: true, cancelled: [] });
  });

  it('wait: cancels the listed jobs still running when the bound runs out, and still deletes', async () => {
    const { fake, endpoint, result, phases } = await run(
      { jobs: { mode: 'wait', timeout: '5 minutes', jobIds: ['job-a'] }, pollInterval: '10 seconds' },
      { health: (_id, n) => (n < 100 ? healthOf(1, 1) : healthOf(0, 0)) },
    );
    expect(phases.slice(2, -1)).toEqual([
      'scaling-to-zero',
      'waiting-for-jobs',
      'cancelling-jobs',
      'purging-queue',
      'draining-workers',
      'deleting-endpoint',
    ]);
    expect(result).toMatchObject({
      jobsFinished: false,
      cancelled: [{ jobId: 'job-a', status: 'CANCELLED' }],
    });
    expect(fake.endpoints.has(endpoint.id)).toBe(false);
  });

  it('watches /health until no worker runs, with growing intervals', async () => {
    const { fake, result, endpoint, history } = await run(
      { pollInterval: '1 second' },
      { health: (_id, n) => healthOf(0, n < 5 ? 1 : 0) },
    );
    expect(fake.names().filter((name) => name === 'endpointHealth')).toHaveLength(6);
    expect(result.drained).toBe(true);
    // In the UI, each look and each wait between two says what it waits for.
    expect(timerSummaries(history)).toEqual(
      [1, 2, 4, 8, 16].map(
        (s) => `look at endpoint ${endpoint.id} again in ${s} s (waiting for its workers to stop)`,
      ),
    );
  });

  it('gives up watching at drainTimeout and deletes anyway (deletion stops the workers)', async () => {
    const { fake, endpoint, result, times } = await run(
      { drainTimeout: '2 minutes', pollInterval: '10 seconds' },
      { health: () => healthOf(1, 1) },
    );
    // Workflow time: the watch ends at its 2-minute bound, not one doubled interval (80 s) later.
    const watched = times.get('deleting-endpoint')! - times.get('draining-workers')!;
    expect(watched).toBeGreaterThanOrEqual(120_000);
    expect(watched).toBeLessThan(130_000);
    // 0 s, 10 s, 30 s, 70 s, then at the deadline (once more if it lands a hair before it).
    expect(fake.names().filter((name) => name === 'endpointHealth').length).toBeLessThanOrEqual(6);
    expect(result.drained).toBe(false);
    expect(fake.endpoints.has(endpoint.id)).toBe(false);
  });

  it('deletes the attached network volume after the endpoint when asked', async () => {
    const { fake, result, phases } = await run({ deleteNetworkVolume: true });
    expect(phases.slice(-3)).toEqual(['deleting-endpoint', 'deleting-network-volume', 'done']);
    expect(fake.names().slice(-2)).toEqual(['deleteEndpoint', 'deleteNetworkVolume']);
    expect(fake.calls.at(-1)!.args).toEqual(['vol-1']);
    expect(fake.volumes.has('vol-1')).toBe(false);
    expect(result.networkVolumesDeleted).toEqual(['vol-1']);
  });

  it('succeeds when the endpoint is already gone, deleting a named volume if asked', async () => {
    const fake = fakeEndpointService();
    fake.volumes.add('vol-9');
    const result = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      env.client.workflow.execute<typeof teardownEndpointWorkflow>('teardownEndpointWorkflow', {
        taskQueue,
        workflowId: uniqueTaskQueue('teardown'),
        args: [{ endpointId: 'gone', deleteNetworkVolume: true, networkVolumeId: 'vol-9' }],
      }),
    );
    expect(fake.names()).toEqual(['readEndpoint', 'deleteNetworkVolume']);
    expect(result).toMatchObject({ alreadyGone: true, endpointIds: [], networkVolumesDeleted: ['vol-9'] });
  });

  it('succeeds when the endpoint vanishes during teardown', async () => {
    const { fake, result } = await run(
      {},
      {
        before: (call, state) => {
          if (call.name === 'updateEndpoint') state.endpoints.clear();
        },
      },
    );
    expect(fake.names()).toEqual(['readEndpoint', 'updateEndpoint']);
    expect(result.alreadyGone).toBe(false);
  });

  it('scales to zero again when deletion is refused because someone raised the workers', async () => {
    let raised = false;
    const { fake, endpoint } = await run(
      {},
      {
        before: (call, state) => {
          if (call.name === 'deleteEndpoint' && !raised) {
            raised = true;
            const current = state.endpoints.get(call.args[0] as string)!;
            state.endpoints.set(current.id, { ...current, workersMax: 2 });
          }
        },
      },
    );
    expect(fake.names()).toEqual([
      'readEndpoint',
      'updateEndpoint',
      'purgeEndpointQueue',
      'endpointHealth',
      'deleteEndpoint',
      'updateEndpoint',
      'deleteEndpoint',
    ]);
    expect(fake.endpoints.has(endpoint.id)).toBe(false);
  });

  it('tears down by name, and refuses a name that several endpoints carry', async () => {
    const fake = fakeEndpointService();
    const one = fake.seed({ name: 'single', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    fake.seed({ name: 'double', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    fake.seed({ name: 'double', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    const [single, failure] = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const start = (name: string) =>
        env.client.workflow.execute<typeof teardownEndpointWorkflow>('teardownEndpointWorkflow', {
          taskQueue,
          workflowId: uniqueTaskQueue('teardown'),
          args: [{ name }],
        });
      return [await start('single'), await failureOf(start('double'))] as const;
    });
    expect(single.endpointIds).toEqual([one.id]);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe('DuplicateEndpointName');
    expect(fake.endpoints.size).toBe(2);
  });

  it('shows the phase it is in while it runs', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reached!: () => void;
    const draining = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const fake = fakeEndpointService({
      before: async (call) => {
        if (call.name === 'endpointHealth') {
          reached();
          await released;
        }
      },
    });
    const endpoint = fake.seed({ name: 'watched', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    const seen: LifecyclePhase[] = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof teardownEndpointWorkflow>(
        'teardownEndpointWorkflow',
        {
          taskQueue,
          workflowId: uniqueTaskQueue('teardown'),
          args: [{ endpointId: endpoint.id }],
        },
      );
      await draining;
      const during = (await handle.query(endpointLifecycleQuery)).phase;
      release();
      await handle.result();
      return [during, (await handle.query(endpointLifecycleQuery)).phase];
    });
    expect(seen).toEqual(['draining-workers', 'done']);
  });
});
