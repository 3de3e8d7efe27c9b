import { WorkflowNotFoundError } from '@temporalio/client';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError, ValidationError } from '../../api/errors';
import {
  provisionEndpoint,
  startProvisionEndpoint,
  teardownEndpoint,
  updateEndpoint,
} from '../../client/endpoints';
import type { EndpointState } from '../../emulator';
import { API_KEY, type Stack, startStack, withRealWorker } from '../support/endpoint-integration';
import { uniqueTaskQueue } from '../support/temporal';

/** What the emulator holds for an endpoint, without the parts that change by themselves. */
function fieldsOf(state: EndpointState | undefined) {
  if (!state) return undefined;
  const { workers: _workers, createdAt: _createdAt, ...fields } = state;
  return fields;
}

describe('endpoint provision and update (dev server, emulator over HTTP, real activities)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const endpointsNamed = (name: string) =>
    stack.emulator.control.endpoints(API_KEY).filter((endpoint) => endpoint.name === name);

  it('a create whose answer was lost is retried and still leaves exactly one endpoint', async () => {
    // The fault is armed as the create activity's first attempt begins, so it hits saveEndpoint
    // itself: the emulator creates the endpoint, then drops the connection before answering.
    const dropFirstCreate: ActivityInterceptorsFactory = (context) => ({
      inbound: {
        execute: (input, next) => {
          if (context.info.activityType === 'createEndpoint' && context.info.attempt === 1) {
            stack.emulator.control.injectFault({ operation: 'graphql', kind: 'drop-after', times: 1 });
          }
          return next(input);
        },
      },
    });
    const workflowId = uniqueTaskQueue('provision-lost');
    const name = `lost-answer-${workflowId}`;
    const { result, attempts } = await withRealWorker(
      stack,
      async (taskQueue) => {
        const handle = await startProvisionEndpoint(
          stack.env.client,
          { name, templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 1 },
          { taskQueue, workflowId },
        );
        const result = await handle.result();
        const history = await handle.fetchHistory();
        const attempts = (history.events ?? [])
          .map((event) => event.activityTaskStartedEventAttributes?.attempt)
          .filter((attempt): attempt is number => attempt !== undefined && attempt !== null);
        return { result, attempts };
      },
      [dropFirstCreate],
    );
    // find, then create on its second attempt (the first lost its answer).
    expect(attempts).toEqual([1, 2]);
    expect(result.created).toBe(true);
    expect(endpointsNamed(name)).toHaveLength(1);
    expect(endpointsNamed(name)[0]!.id).toBe(result.endpointId);

    // The same workflow id started again (a restarted provision) adopts it: still one.
    const again = await withRealWorker(stack, (taskQueue) =>
      provisionEndpoint(
        stack.env.client,
        { name, templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 1 },
        { taskQueue, workflowId },
      ),
    );
    expect(again).toMatchObject({ endpointId: result.endpointId, created: false });
    expect(endpointsNamed(name)).toHaveLength(1);
  });

  it('an update changes the one field it names and keeps every other', async () => {
    const name = `update-${uniqueTaskQueue('e')}`;
    const volume = stack.emulator.control.createNetworkVolume(API_KEY);
    const [before, after, updated] = await withRealWorker(stack, async (taskQueue) => {
      const provisioned = await provisionEndpoint(
        stack.env.client,
        {
          name,
          templateId: 'scripted',
          gpuIds: 'ADA_48_PRO',
          type: 'QB',
          idleTimeout: 7,
          locations: 'US,FR',
          flashBootType: 'FLASHBOOT',
          scalerType: 'REQUEST_COUNT',
          scalerValue: 3,
          workersMin: 0,
          workersMax: 2,
          networkVolumeId: volume.id,
        },
        { taskQueue },
      );
      const before = fieldsOf(
        stack.emulator.control.endpoints(API_KEY).find((e) => e.id === provisioned.endpointId),
      );
      const updated = await updateEndpoint(
        stack.env.client,
        { endpointId: provisioned.endpointId, changes: { workersMax: 4 } },
        { taskQueue },
      );
      const after = fieldsOf(
        stack.emulator.control.endpoints(API_KEY).find((e) => e.id === provisioned.endpointId),
      );
      return [before, after, updated] as const;
    });
    expect(before).toMatchObject({ idleTimeout: 7, scalerType: 'REQUEST_COUNT', networkVolumeId: volume.id });
    expect(after).toEqual({ ...before, workersMax: 4 });
    expect(updated).toMatchObject({ workersMax: 4, idleTimeout: 7, locations: 'US,FR', scalerValue: 3 });
  });

  it('names and fields with quotes, backslashes and newlines survive the GraphQL round trip exactly', async () => {
    const name = `it's "quoted" \\ back\\\\slash \\" \n new line \r\n tab\t ${uniqueTaskQueue('q')} é 😀 \u2028`;
    const templateId = 'tpl "with" \\ and\nnewline';
    const { provisioned, afterUpdate, teardown } = await withRealWorker(stack, async (taskQueue) => {
      const provisioned = await provisionEndpoint(
        stack.env.client,
        { name, templateId, gpuIds: 'AMPERE_24', workersMax: 1 },
        { taskQueue },
      );
      // The update sends name and templateId back; the teardown finds the endpoint by its name.
      const afterUpdate = await updateEndpoint(
        stack.env.client,
        { endpointId: provisioned.endpointId, changes: { idleTimeout: 11 } },
        { taskQueue },
      );
      const teardown = await teardownEndpoint(stack.env.client, { name, pollInterval: 200 }, { taskQueue });
      return { provisioned, afterUpdate, teardown };
    });
    expect(provisioned.name).toBe(name);
    expect(provisioned.endpoint.templateId).toBe(templateId);
    expect(afterUpdate).toMatchObject({ name, templateId, idleTimeout: 11 });
    expect(teardown.endpointIds).toEqual([provisioned.endpointId]);
    expect(endpointsNamed(name)).toEqual([]);
  });

  it('bad input is refused with the field named before anything reaches Temporal or the service', async () => {
    // A canary: the next request of any kind, from anyone, gets a 503. It must still be there after.
    const removeCanary = stack.emulator.control.injectFault({
      operation: '*',
      kind: 'status',
      httpStatus: 503,
      times: 1,
    });
    const valid = { templateId: 'scripted', gpuIds: 'AMPERE_16' } as const;
    const cases: Array<[string, Record<string, unknown>]> = [
      ['gpuIds', { ...valid, gpuIds: 'H100_80' }],
      ['locations', { ...valid, locations: 'US,ATLANTIS' }],
      ['scalerType', { ...valid, scalerType: 'GPU_UTILISATION' }],
      ['workersMin', { ...valid, workersMin: -1 }],
      ['workersMax', { ...valid, workersMax: -3 }],
      ['workersMin', { ...valid, workersMin: 4, workersMax: 2 }],
    ];
    for (const [field, input] of cases) {
      const workflowId = uniqueTaskQueue('refused');
      const error = await startProvisionEndpoint(stack.env.client, input as never, {
        taskQueue: 'nobody-polls-this',
        workflowId,
      }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
      await expect(stack.env.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
    }
    const canary = await stack.client.endpoints.list().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(canary).toBeInstanceOf(ServiceError);
    expect((canary as ServiceError).status).toBe(503);
    removeCanary();
  });
});
