import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackCheck } from '../../workflows/shared/stack-check';
import { timeSkippingEnv, uniqueTaskQueue } from '../support/temporal';

const TWO_DAYS_MS = 2 * 24 * 60 * 60 * 1000;

describe('time-skipping test server (Java, from Maven Central)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await timeSkippingEnv();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('crosses two days of workflow time while the workflow sleeps', async () => {
    const taskQueue = uniqueTaskQueue('stack-check');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../../workflows/shared/stack-check.ts'),
      activities: { describeWorker: async (name: string) => `mock worker for ${name}` },
    });
    const before = await env.currentTimeMs();
    const result = await worker.runUntil(
      env.client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId: uniqueTaskQueue('wf'),
        args: [{ name: 'skipper', wait: '2 days' }],
      }),
    );
    const after = await env.currentTimeMs();
    expect(result).toBe('hello skipper, after 2 days from mock worker for skipper');
    expect(after - before).toBeGreaterThanOrEqual(TWO_DAYS_MS);
  });
});
