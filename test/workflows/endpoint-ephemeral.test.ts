import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointNameFor } from '../../contracts/endpoint-input';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import type { ephemeralEndpointWorkflow } from '../../workflows/endpoint/endpoint-lifecycle';
import { type FakeOptions, fakeEndpointService } from '../support/endpoint-fakes';
import { bundleEndpointWorkflows, failureOf, quietRuntime, withWorker } from '../support/endpoint-harness';
import type { StubJobActivities, StubJobInput } from '../support/endpoint-workflows';
import { timeSkippingEnv, uniqueTaskQueue } from '../support/temporal';
import { until } from './wait-for';

quietRuntime();

type EphemeralInput = Parameters<typeof ephemeralEndpointWorkflow>[0];

/** The fake service and the stand-in jobs, writing one log so order across them can be checked. */
function setup(options: FakeOptions = {}) {
  const events: string[] = [];
  const fake = fakeEndpointService({
    ...options,
    before: async (call, state, attempt) => {
      events.push(call.name);
      await options.before?.(call, state, attempt);
    },
  });
  const started = new Set<string>();
  const stubs: StubJobActivities = {
    async stubJobStarted(job) {
      started.add(job);
      events.push(`started:${job}`);
    },
    async stubJobCancelled(job) {
      events.push(`cancelled:${job}`);
    },
    async stubJobHang() {
      const context = Context.current();
      for (;;) {
        context.heartbeat();
        await context.sleep(20);
      }
    },
  };
  return { fake, events, started, activities: { ...fake.activities, ...stubs } };
}

function input(
  jobs: Array<Omit<StubJobInput, 'endpointId'>>,
  extra: Partial<EphemeralInput> = {},
): EphemeralInput {
  return {
    endpoint: { templateId: 'tpl', gpuIds: 'AMPERE_24', workersMax: 2 },
    jobs: jobs.map((job) => ({ input: job })),
    jobWorkflowType: 'stubJobWorkflow',
    ...extra,
  };
}

describe('ephemeralEndpointWorkflow (time-skipping, mocked activities, stand-in job workflows)', () => {
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

  it('provisions, runs the jobs on the endpoint, returns their results and tears down', async () => {
    const { fake, events, activities } = setup();
    const workflowId = uniqueTaskQueue('ephemeral');
    const { result, phases } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const result = await env.client.workflow.execute<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId,
          args: [
            input([
              { job: 'a', runMs: 60_000, output: 'A' },
              { job: 'b', runMs: 1_000, output: 'B' },
            ]),
          ],
        },
      );
      const status = await env.client.workflow.getHandle(workflowId).query(endpointLifecycleQuery);
      return { result, phases: status.phases.map((entry) => entry.phase) };
    });
    expect(result).toMatchObject({
      endpointId: 'ep-1',
      name: endpointNameFor(workflowId),
      results: ['A', 'B'],
    });
    expect(result.teardown).toMatchObject({ endpointIds: ['ep-1'], alreadyGone: false });
    expect(phases).toEqual([
      'starting',
      'provisioning',
      'running-jobs',
      'resolving',
      'scaling-to-zero',
      'purging-queue',
      'draining-workers',
      'deleting-endpoint',
      'done',
    ]);
    // Every job ran on the endpoint before any step of teardown.
    expect(events.indexOf('createEndpoint')).toBeLessThan(events.indexOf('started:a'));
    expect(events.lastIndexOf('started:b')).toBeLessThan(events.indexOf('readEndpoint'));
    expect(fake.endpoints.size).toBe(0);
  });

  it('passes each job its input plus the endpoint id, under a workflow id derived from its own', async () => {
    const { activities } = setup();
    const workflowId = uniqueTaskQueue('ephemeral');
    const children = await withWorker(env, bundle, activities, async (taskQueue) => {
      await env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
        taskQueue,
        workflowId,
        args: [input([{ job: 'a', runMs: 1 }])],
      });
      const child = env.client.workflow.getHandle(`${workflowId}/job-0`);
      return { type: (await child.describe()).type, result: await child.result() };
    });
    expect(children).toEqual({ type: 'stubJobWorkflow', result: { job: 'a', endpointId: 'ep-1' } });
  });

  it('on a failed job cancels the others, then tears down, then fails', async () => {
    const { fake, events, started, activities } = setup();
    // The children start concurrently: 'a' may only fail once 'b' runs, or there is no 'b' to cancel.
    const stubJobStarted = activities.stubJobStarted;
    activities.stubJobStarted = async (job, endpointId) => {
      while (job === 'a' && !started.has('b')) await new Promise((resolve) => setTimeout(resolve, 10));
      await stubJobStarted(job, endpointId);
    };
    const failure = await withWorker(env, bundle, activities, (taskQueue) =>
      failureOf(
        env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
          taskQueue,
          workflowId: uniqueTaskQueue('ephemeral'),
          args: [
            input([
              { job: 'a', runMs: 1_000, fail: 'boom' },
              { job: 'b', hang: true },
            ]),
          ],
        }),
      ),
    );
    expect(failure.type).toBe('StubJobFailed');
    expect(events).toContain('cancelled:b');
    expect(events.indexOf('cancelled:b')).toBeLessThan(events.indexOf('readEndpoint'));
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(fake.endpoints.size).toBe(0);
  });

  it('with failFast off lets the other jobs finish before it tears down and fails', async () => {
    const { fake, events, activities } = setup();
    const failure = await withWorker(env, bundle, activities, (taskQueue) =>
      failureOf(
        env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
          taskQueue,
          workflowId: uniqueTaskQueue('ephemeral'),
          args: [
            input(
              [
                { job: 'a', runMs: 1_000, fail: 'boom' },
                { job: 'b', runMs: 600_000 },
              ],
              { failFast: false },
            ),
          ],
        }),
      ),
    );
    expect(failure.type).toBe('StubJobFailed');
    expect(events).not.toContain('cancelled:b');
    expect(fake.endpoints.size).toBe(0);
  });

  it('cancelled while its jobs run: the jobs are cancelled first, then the endpoint is deleted', async () => {
    const { fake, events, started, activities } = setup();
    const workflowId = uniqueTaskQueue('ephemeral');
    const { error, status, description } = await withWorker(env, bundle, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId,
          // Each runs in an activity until cancelled: no timer the time-skipping server could
          // fire early, however slow the machine.
          args: [
            input([
              { job: 'a', hang: true },
              { job: 'b', hang: true },
            ]),
          ],
        },
      );
      await until(() => started.size === 2, 'both jobs started');
      await handle.cancel();
      const error = await handle.result().catch((caught: unknown) => caught);
      return {
        error,
        status: await handle.query(endpointLifecycleQuery),
        description: await handle.describe(),
      };
    });
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(description.status.name).toBe('CANCELLED');
    const firstTeardownStep = events.indexOf('readEndpoint');
    expect(events.indexOf('cancelled:a')).toBeGreaterThan(-1);
    expect(events.indexOf('cancelled:a')).toBeLessThan(firstTeardownStep);
    expect(events.indexOf('cancelled:b')).toBeLessThan(firstTeardownStep);
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(fake.endpoints.size).toBe(0);
    expect(status.phase).toBe('cancelled');
    expect(status.phases.map((entry) => entry.phase)).toContain('deleting-endpoint');
  });

  it('cancelled while provisioning: the creation completes, no job starts, the endpoint is deleted', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let creating = false;
    const { fake, events, activities } = setup({
      before: async (call) => {
        if (call.name === 'createEndpoint') {
          creating = true;
          await released;
        }
      },
    });
    const description = await withWorker(env, bundle, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start<typeof ephemeralEndpointWorkflow>(
        'ephemeralEndpointWorkflow',
        {
          taskQueue,
          workflowId: uniqueTaskQueue('ephemeral'),
          args: [input([{ job: 'a' }])],
        },
      );
      await until(() => creating, 'the endpoint being created');
      await handle.cancel();
      release();
      await handle.result().catch(() => undefined);
      return handle.describe();
    });
    expect(description.status.name).toBe('CANCELLED');
    expect(events.filter((event) => event.startsWith('started:'))).toEqual([]);
    expect(events).toContain('deleteEndpoint');
    expect(fake.endpoints.size).toBe(0);
  });

  it('a create that failed after it may have created: teardown finds the endpoint by name and deletes it', async () => {
    const { fake, events, activities } = setup({
      before: (call, state) => {
        if (call.name === 'createEndpoint') {
          // The service made it, and the answer said otherwise.
          const request = call.args[0] as { input: { name: string } };
          state.endpoints.set('ep-lost', {
            id: 'ep-lost',
            name: request.input.name,
            templateId: 'tpl',
            gpuIds: 'AMPERE_24',
            workersMin: 0,
            workersMax: 2,
          });
          throw ApplicationFailure.create({
            type: 'InvalidResponse',
            message: 'garbled answer',
            nonRetryable: true,
          });
        }
      },
    });
    const failure = await withWorker(env, bundle, activities, (taskQueue) =>
      failureOf(
        env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
          taskQueue,
          workflowId: uniqueTaskQueue('ephemeral'),
          args: [input([{ job: 'a' }])],
        }),
      ),
    );
    expect(failure.message).toContain('garbled answer');
    expect(events.filter((event) => event === 'findEndpointsByName')).toHaveLength(2);
    expect(events.at(-1)).toBe('deleteEndpoint');
    expect(fake.endpoints.size).toBe(0);
  });

  it('a provision that failed before creating anything tears nothing down, not even a namesake', async () => {
    const { fake, events, activities } = setup();
    fake.seed({ name: 'shared-name', templateId: 'another-template', gpuIds: 'AMPERE_16' });
    const failure = await withWorker(env, bundle, activities, (taskQueue) =>
      failureOf(
        env.client.workflow.execute<typeof ephemeralEndpointWorkflow>('ephemeralEndpointWorkflow', {
          taskQueue,
          workflowId: uniqueTaskQueue('ephemeral'),
          args: [
            {
              ...input([{ job: 'a' }]),
              endpoint: { name: 'shared-name', templateId: 'tpl', gpuIds: 'AMPERE_16' },
            },
          ],
        }),
      ),
    );
    expect(failure.type).toBe('EndpointNameConflict');
    expect(events).toEqual(['findEndpointsByName']);
    expect(fake.endpoints.size).toBe(1);
  });
});
