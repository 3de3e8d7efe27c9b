import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOnEphemeralEndpoint, startEphemeralEndpoint } from '../../client/endpoints';
import { endpointLifecycleQuery } from '../../workflows/endpoint-definitions';
import { API_KEY, type Stack, startStack, withRealWorker } from '../support/endpoint-integration';
import { eventually } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

describe('ephemeral endpoint with real job workflows (dev server, emulator over HTTP)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const endpoint = { templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 2 } as const;
  const exists = (endpointId: string) =>
    stack.emulator.control.endpoints(API_KEY).some((candidate) => candidate.id === endpointId);

  it('runs the jobs on a fresh endpoint, returns their results and deletes the endpoint', async () => {
    const workflowId = uniqueTaskQueue('ephemeral');
    const result = await withRealWorker(stack, (taskQueue) =>
      runOnEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          jobs: [
            { input: { request: { input: { sleepMs: 2_000, output: { n: 1 } } }, mode: 'sync' } },
            { input: { request: { input: { sleepMs: 4_000, output: { n: 2 } } }, mode: 'sync' } },
          ],
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      ),
    );
    expect(result.results).toMatchObject([
      { status: 'COMPLETED', output: { n: 1 }, endpointId: result.endpointId },
      { status: 'COMPLETED', output: { n: 2 }, endpointId: result.endpointId },
    ]);
    expect(result.teardown).toMatchObject({ endpointIds: [result.endpointId], alreadyGone: false });
    expect(exists(result.endpointId)).toBe(false);
    const jobs = stack.emulator.control.jobs().filter((job) => job.endpointId === result.endpointId);
    expect(jobs).toEqual([]);
  });

  it('cancelled while its jobs run: the jobs end CANCELLED on the service, then the endpoint is deleted', async () => {
    const workflowId = uniqueTaskQueue('ephemeral-cancel');
    const outcome = await withRealWorker(stack, async (taskQueue) => {
      const handle = await startEphemeralEndpoint(
        stack.env.client,
        {
          endpoint,
          jobs: [
            // A week of service time, so the jobs hang until cancelled however slow the machine.
            {
              input: {
                request: {
                  input: { hang: true },
                  policy: { executionTimeout: 604_800_000, ttl: 604_800_000 },
                },
              },
            },
            {
              input: {
                request: {
                  input: { hang: true },
                  policy: { executionTimeout: 604_800_000, ttl: 604_800_000 },
                },
              },
            },
          ],
          teardown: { pollInterval: 200 },
        },
        { taskQueue, workflowId },
      );
      const endpointId = await eventually(
        async () => (await handle.query(endpointLifecycleQuery)).endpointId,
      );
      const jobIds = await eventually(() => {
        const running = stack.emulator.control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS');
        return running.length === 2 && running.map((job) => job.id);
      });
      await handle.cancel();
      const error = await handle.result().catch((caught: unknown) => caught);
      const children = await Promise.all(
        [0, 1].map(
          async (index) =>
            (await stack.env.client.workflow.getHandle(`${workflowId}/job-${index}`).describe()).status.name,
        ),
      );
      return { endpointId, jobIds, error, description: await handle.describe(), children };
    });
    expect(outcome.error).toBeInstanceOf(WorkflowFailedError);
    expect((outcome.error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(outcome.description.status.name).toBe('CANCELLED');
    expect(outcome.children).toEqual(['CANCELLED', 'CANCELLED']);
    expect(outcome.jobIds.map((jobId) => stack.emulator.control.job(jobId)?.status)).toEqual([
      'CANCELLED',
      'CANCELLED',
    ]);
    expect(exists(outcome.endpointId)).toBe(false);
  });
});
