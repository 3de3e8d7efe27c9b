import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStackCheckActivities } from '../../activities/stack-check';
import { stackCheck } from '../../workflows/shared/stack-check';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';

describe('dev server (Temporal CLI built from the Go module proxy)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await devServerEnv();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs a workflow that calls a real activity on a real worker', async () => {
    const taskQueue = uniqueTaskQueue('stack-check');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../../workflows/shared/stack-check.ts'),
      activities: createStackCheckActivities(),
    });
    const workflowId = uniqueTaskQueue('wf');
    const result = await worker.runUntil(
      env.client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId,
        args: [{ name: 'dev', wait: '10 ms' }],
      }),
    );
    expect(result).toBe(
      `hello dev, after 10 ms from ${taskQueue} (activity describeWorker for dev, attempt 1)`,
    );
    // The history is on the server: the activity really was scheduled and completed there.
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const types = (history.events ?? []).map((event) => event.activityTaskCompletedEventAttributes);
    expect(types.filter(Boolean)).toHaveLength(1);
  });
});
