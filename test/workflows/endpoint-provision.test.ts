import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointNameFor } from '../../contracts/endpoint-input';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import type {
  provisionEndpointWorkflow,
  updateEndpointWorkflow,
} from '../../workflows/endpoint/endpoint-lifecycle';
import { fakeEndpointService } from '../support/endpoint-fakes';
import { bundleEndpointWorkflows, failureOf, quietRuntime, withWorker } from '../support/endpoint-harness';
import { timeSkippingEnv, uniqueTaskQueue } from '../support/temporal';
import { activitySummaries } from '../support/workflow-metadata';

quietRuntime();

describe('provisionEndpointWorkflow (time-skipping, mocked activities)', () => {
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

  const provision = (
    taskQueue: string,
    workflowId: string,
    input: Parameters<typeof provisionEndpointWorkflow>[0],
  ) =>
    env.client.workflow.execute<typeof provisionEndpointWorkflow>('provisionEndpointWorkflow', {
      taskQueue,
      workflowId,
      args: [input],
    });

  it('looks the name up, then creates through GraphQL under a name derived from the workflow id', async () => {
    const fake = fakeEndpointService();
    const workflowId = uniqueTaskQueue('provision');
    const result = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      provision(taskQueue, workflowId, {
        templateId: 'tpl',
        gpuIds: 'AMPERE_24',
        workersMax: 2,
        scalerType: 'REQUEST_COUNT',
      }),
    );
    expect(fake.names()).toEqual(['findEndpointsByName', 'createEndpoint']);
    expect(fake.calls[0]!.args).toEqual([endpointNameFor(workflowId)]);
    expect(fake.calls[1]!.args[0]).toEqual({
      via: 'graphql',
      input: {
        name: endpointNameFor(workflowId),
        templateId: 'tpl',
        gpuIds: 'AMPERE_24',
        workersMax: 2,
        scalerType: 'REQUEST_COUNT',
      },
    });
    expect(result).toMatchObject({ name: endpointNameFor(workflowId), created: true, reconciled: [] });
    expect(fake.endpoints.size).toBe(1);
    // Each activity says in the UI what it does, with the name and template of this run.
    expect(activitySummaries(await env.client.workflow.getHandle(workflowId).fetchHistory())).toEqual([
      ['findEndpointsByName', `find endpoints named ${endpointNameFor(workflowId)}`],
      ['createEndpoint', `create endpoint ${endpointNameFor(workflowId)} from template tpl`],
    ]);
  });

  it('adopts the endpoint of the same name instead of creating a second one', async () => {
    const fake = fakeEndpointService();
    const existing = fake.seed({ name: 'mine', templateId: 'tpl', gpuIds: 'AMPERE_16', workersMax: 3 });
    const result = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      provision(taskQueue, uniqueTaskQueue('provision'), {
        name: 'mine',
        templateId: 'tpl',
        gpuIds: 'AMPERE_16',
      }),
    );
    expect(fake.names()).toEqual(['findEndpointsByName']);
    expect(result).toMatchObject({ endpointId: existing.id, created: false, reconciled: [] });
  });

  it('a second run under the same workflow id finds what the first one created', async () => {
    const fake = fakeEndpointService();
    const workflowId = uniqueTaskQueue('provision');
    const input = { templateId: 'tpl', gpuIds: 'AMPERE_16' } as const;
    const [first, second] = await withWorker(env, bundle, fake.activities, async (taskQueue) => [
      await provision(taskQueue, workflowId, input),
      await provision(taskQueue, workflowId, input),
    ]);
    expect(fake.names().filter((name) => name === 'createEndpoint')).toHaveLength(1);
    expect(fake.endpoints.size).toBe(1);
    expect(second).toMatchObject({ endpointId: first.endpointId, created: false });
  });

  it('brings an adopted endpoint to the requested fields, sending id, name, templateId and gpuIds', async () => {
    const fake = fakeEndpointService();
    const existing = fake.seed({
      name: 'mine',
      templateId: 'tpl',
      gpuIds: 'AMPERE_16',
      workersMax: 3,
      idleTimeout: 5,
    });
    const result = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      provision(taskQueue, uniqueTaskQueue('provision'), {
        name: 'mine',
        templateId: 'tpl',
        gpuIds: 'AMPERE_16',
        workersMax: 1,
        idleTimeout: 5,
      }),
    );
    expect(fake.names()).toEqual(['findEndpointsByName', 'updateEndpoint']);
    expect(fake.calls[1]!.args[0]).toEqual({
      id: existing.id,
      name: 'mine',
      templateId: 'tpl',
      gpuIds: 'AMPERE_16',
      workersMax: 1,
    });
    expect(result).toMatchObject({ created: false, reconciled: ['workersMax'] });
  });

  it('creates through REST when given gpuTypeIds, then sends the fields REST cannot carry', async () => {
    const fake = fakeEndpointService();
    const result = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      provision(taskQueue, uniqueTaskQueue('provision'), {
        name: 'rest',
        templateId: 'tpl',
        gpuTypeIds: ['ADA_24', 'AMPERE_24'],
        workersMax: 2,
        scalerType: 'REQUEST_COUNT',
        locations: 'US',
      }),
    );
    expect(fake.names()).toEqual(['findEndpointsByName', 'createEndpoint', 'updateEndpoint']);
    expect(fake.calls[1]!.args[0]).toEqual({
      via: 'rest',
      body: { name: 'rest', templateId: 'tpl', gpuTypeIds: ['ADA_24', 'AMPERE_24'], workersMax: 2 },
    });
    expect(fake.calls[2]!.args[0]).toMatchObject({
      name: 'rest',
      templateId: 'tpl',
      gpuIds: 'ADA_24',
      scalerType: 'REQUEST_COUNT',
      locations: 'US',
    });
    expect(result).toMatchObject({ created: true, reconciled: ['locations', 'scalerType'] });
  });

  it('refuses to adopt an endpoint of the name that runs another template', async () => {
    const fake = fakeEndpointService();
    fake.seed({ name: 'taken', templateId: 'someone-else', gpuIds: 'AMPERE_16' });
    const failure = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      failureOf(
        provision(taskQueue, uniqueTaskQueue('provision'), {
          name: 'taken',
          templateId: 'tpl',
          gpuIds: 'AMPERE_16',
        }),
      ),
    );
    expect(failure.type).toBe('EndpointNameConflict');
    expect(fake.names()).toEqual(['findEndpointsByName']);
  });

  it('refuses a name that several endpoints carry', async () => {
    const fake = fakeEndpointService();
    fake.seed({ name: 'twice', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    fake.seed({ name: 'twice', templateId: 'tpl', gpuIds: 'AMPERE_16' });
    const failure = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      failureOf(
        provision(taskQueue, uniqueTaskQueue('provision'), {
          name: 'twice',
          templateId: 'tpl',
          gpuIds: 'AMPERE_16',
        }),
      ),
    );
    expect(failure.type).toBe('DuplicateEndpointName');
    expect(fake.endpoints.size).toBe(2);
  });

  it('fails on bad input with the field named, before any activity', async () => {
    const fake = fakeEndpointService();
    const failure = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      failureOf(
        provision(taskQueue, uniqueTaskQueue('provision'), {
          templateId: 'tpl',
          gpuIds: 'AMPERE_16',
          workersMin: 3,
          workersMax: 1,
        }),
      ),
    );
    expect(failure.type).toBe('BadRequest');
    expect(failure.details).toEqual([{ field: 'workersMin', rule: 'must not exceed workersMax' }]);
    expect(fake.calls).toEqual([]);
  });

  it('shows its phases through the lifecycle query', async () => {
    const fake = fakeEndpointService();
    const workflowId = uniqueTaskQueue('provision');
    const status = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      await provision(taskQueue, workflowId, { templateId: 'tpl', gpuIds: 'AMPERE_16' });
      return env.client.workflow.getHandle(workflowId).query(endpointLifecycleQuery);
    });
    expect(status.phases.map((entry) => entry.phase)).toEqual(['starting', 'provisioning', 'done']);
    expect(status).toMatchObject({ phase: 'done', name: endpointNameFor(workflowId), endpointId: 'ep-1' });
  });
});

describe('updateEndpointWorkflow (time-skipping, mocked activities)', () => {
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

  const update = (taskQueue: string, input: Parameters<typeof updateEndpointWorkflow>[0]) =>
    env.client.workflow.execute<typeof updateEndpointWorkflow>('updateEndpointWorkflow', {
      taskQueue,
      workflowId: uniqueTaskQueue('update'),
      args: [input],
    });

  it('reads the endpoint and sends id, name, templateId, gpuIds and only the changed field', async () => {
    const fake = fakeEndpointService();
    const existing = fake.seed({
      name: 'keep "me"',
      templateId: 'tpl',
      gpuIds: 'ADA_48_PRO',
      workersMin: 1,
      workersMax: 3,
      idleTimeout: 9,
      scalerType: 'REQUEST_COUNT',
    });
    const updated = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      update(taskQueue, { endpointId: existing.id, changes: { workersMax: 5 } }),
    );
    expect(fake.names()).toEqual(['readEndpoint', 'updateEndpoint']);
    expect(fake.calls[1]!.args[0]).toEqual({
      id: existing.id,
      name: 'keep "me"',
      templateId: 'tpl',
      gpuIds: 'ADA_48_PRO',
      workersMax: 5,
    });
    expect(updated).toMatchObject({
      workersMin: 1,
      workersMax: 5,
      idleTimeout: 9,
      scalerType: 'REQUEST_COUNT',
    });
  });

  it('fails with EndpointNotFound for an id the account does not have', async () => {
    const fake = fakeEndpointService();
    const failure = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      failureOf(update(taskQueue, { endpointId: 'nope', changes: { workersMax: 1 } })),
    );
    expect(failure.type).toBe('EndpointNotFound');
    expect(fake.names()).toEqual(['readEndpoint']);
  });

  it('refuses a change that puts workersMax below the current workersMin, naming the field', async () => {
    const fake = fakeEndpointService();
    const existing = fake.seed({
      name: 'e',
      templateId: 'tpl',
      gpuIds: 'AMPERE_16',
      workersMin: 2,
      workersMax: 4,
    });
    const failure = await withWorker(env, bundle, fake.activities, (taskQueue) =>
      failureOf(update(taskQueue, { endpointId: existing.id, changes: { workersMax: 1 } })),
    );
    expect(failure.type).toBe('BadRequest');
    expect(failure.details).toEqual([
      { field: 'changes.workersMax', rule: 'must not be below workersMin (2)' },
    ]);
    expect(fake.names()).toEqual(['readEndpoint']);
  });
});
