import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import {
  getLifecyclePhase,
  startEphemeralEndpoint,
  startProvisionEndpoint,
  startTeardownEndpoint,
  startUpdateEndpoint,
} from '../../client/endpoints';
import { endpointNameFor } from '../../contracts/endpoint-input';

/** A Temporal client that records what would have been started. */
function recordingClient() {
  const started: Array<{ type: string; options: Record<string, unknown> }> = [];
  const client = {
    workflow: {
      start: async (type: string, options: Record<string, unknown>) => {
        started.push({ type, options });
        return { workflowId: options.workflowId };
      },
      getHandle: () => {
        throw new Error('not expected');
      },
    },
  } as unknown as Client;
  return { client, started };
}

async function refusal(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

const valid = { templateId: 'tpl', gpuIds: 'AMPERE_24' } as const;

describe('endpoint facade: bad input is refused before anything starts, with the field named', () => {
  it.each([
    ['unknown gpu tier', { ...valid, gpuIds: 'H100' }, 'gpuIds'],
    ['unknown location', { ...valid, locations: 'US,MARS' }, 'locations'],
    ['unknown scaler type', { ...valid, scalerType: 'CPU' }, 'scalerType'],
    ['negative workers', { ...valid, workersMin: -1 }, 'workersMin'],
    ['negative workersMax', { ...valid, workersMax: -2 }, 'workersMax'],
    ['min above max', { ...valid, workersMin: 3, workersMax: 2 }, 'workersMin'],
    ['no gpu at all', { templateId: 'tpl' }, 'gpuIds'],
    ['unknown tier in gpuTypeIds', { templateId: 'tpl', gpuTypeIds: ['ADA_24', 'B200'] }, 'gpuTypeIds.1'],
    ['unknown field', { ...valid, workersMaximum: 2 }, 'input'],
  ])('provision: %s', async (_name, input, field) => {
    const { client, started } = recordingClient();
    const error = await refusal(startProvisionEndpoint(client, input as never));
    expect(error.field).toBe(field);
    expect(started).toEqual([]);
  });

  it.each([
    ['unknown gpu tier', { gpuIds: 'RTX' }, 'changes.gpuIds'],
    ['unknown location', { locations: 'XX' }, 'changes.locations'],
    ['unknown scaler type', { scalerType: 'X' }, 'changes.scalerType'],
    ['negative workers', { workersMax: -1 }, 'changes.workersMax'],
    ['min above max', { workersMin: 5, workersMax: 1 }, 'changes.workersMin'],
    ['nothing to change', {}, 'changes'],
  ])('update: %s', async (_name, changes, field) => {
    const { client, started } = recordingClient();
    const error = await refusal(
      startUpdateEndpoint(client, { endpointId: 'ep-1', changes: changes as never }),
    );
    expect(error.field).toBe(field);
    expect(started).toEqual([]);
  });

  it('teardown: needs exactly one of endpointId and name, and a known job handling mode', async () => {
    const { client, started } = recordingClient();
    expect((await refusal(startTeardownEndpoint(client, {}))).field).toBe('endpointId');
    expect((await refusal(startTeardownEndpoint(client, { endpointId: 'a', name: 'b' }))).field).toBe(
      'endpointId',
    );
    expect(
      (await refusal(startTeardownEndpoint(client, { endpointId: 'a', jobs: { mode: 'drop' } as never })))
        .field,
    ).toBe('jobs.mode');
    expect(
      (
        await refusal(
          startTeardownEndpoint(client, { endpointId: 'a', jobs: { mode: 'wait', timeout: 'soon' } }),
        )
      ).field,
    ).toBe('jobs.timeout');
    expect(started).toEqual([]);
  });

  it("ephemeral: endpoint fields, and each job's input against the job workflow's own rules", async () => {
    const { client, started } = recordingClient();
    const job = { input: { request: { input: { prompt: 'hi' } } } };
    expect(
      (
        await refusal(
          startEphemeralEndpoint(client, { endpoint: { ...valid, locations: 'MOON' }, jobs: [job] }),
        )
      ).field,
    ).toBe('endpoint.locations');
    expect((await refusal(startEphemeralEndpoint(client, { endpoint: valid, jobs: [] }))).field).toBe('jobs');
    expect(
      (
        await refusal(
          startEphemeralEndpoint(client, { endpoint: valid, jobs: [job, { input: { request: {} } }] }),
        )
      ).field,
    ).toBe('jobs.1.input.request.input');
    expect(
      (
        await refusal(
          startEphemeralEndpoint(client, {
            endpoint: valid,
            jobs: [{ input: { ...job.input, endpointId: 'x' } }],
          }),
        )
      ).field,
    ).toBe('jobs.0.input');
    expect(started).toEqual([]);
  });

  it('options and query ids are checked too', async () => {
    const { client, started } = recordingClient();
    expect((await refusal(startProvisionEndpoint(client, valid, { taskQueue: '' }))).field).toBe(
      'options.taskQueue',
    );
    expect((await refusal(getLifecyclePhase(client, { workflowId: '' }))).field).toBe('workflowId');
    expect(started).toEqual([]);
  });
});

describe('endpoint facade: what it starts', () => {
  it('provision: the parsed input, an id that follows the name, and a running workflow joined', async () => {
    const { client, started } = recordingClient();
    await startProvisionEndpoint(client, { ...valid, name: 'my "endpoint"' });
    expect(started).toEqual([
      {
        type: 'provisionEndpointWorkflow',
        options: {
          taskQueue: 'durable-serverless',
          workflowId: 'endpoint-provision:my "endpoint"',
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ ...valid, name: 'my "endpoint"' }],
          staticSummary: 'Provision endpoint my "endpoint" from template tpl',
          staticDetails: expect.stringContaining('| Step | provision |'),
        },
      },
    ]);
  });

  it('teardown: durations parsed to ms, one workflow id per endpoint', async () => {
    const { client, started } = recordingClient();
    await startTeardownEndpoint(
      client,
      { endpointId: 'ep-1', jobs: { mode: 'wait', timeout: '5 minutes' } },
      { taskQueue: 'q' },
    );
    expect(started[0]!.options).toMatchObject({
      taskQueue: 'q',
      workflowId: 'endpoint-teardown:ep-1',
      args: [
        {
          endpointId: 'ep-1',
          jobs: { mode: 'wait', timeout: 300_000, jobIds: [] },
          drainTimeout: 600_000,
          pollInterval: 2_000,
          deleteNetworkVolume: false,
        },
      ],
    });
  });
});

describe('endpointNameFor', () => {
  it('is the workflow id behind a prefix, and a bounded, stable and distinct name for long ids', () => {
    expect(endpointNameFor('wf-1')).toBe('ds-wf-1');
    const long = 'x'.repeat(300);
    expect(endpointNameFor(long).length).toBeLessThanOrEqual(120);
    expect(endpointNameFor(long)).toBe(endpointNameFor(long));
    expect(endpointNameFor(`${long}a`)).not.toBe(endpointNameFor(`${long}b`));
  });
});
