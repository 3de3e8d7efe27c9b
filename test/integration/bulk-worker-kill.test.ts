/**
 * A bulk action survives its worker's crash: the worker running it is SIGKILLed mid-way (a page
 * at a time, several pages done), another is started, and the action carries on from where it
 * was and acts on each run exactly once (a retry: each failed job has exactly one run more).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBulkAction, getBulkProgress, startBulkAction } from '../../client/bulk';
import { startJob } from '../../client/jobs';
import { eventually, type JobStack, spawnWorker, startJobStack } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

const FAILED_JOBS = 30;

let stack: JobStack;
beforeAll(async () => {
  // The in-process worker runs the jobs; the bulk action runs on child processes, on a queue of its own.
  stack = await startJobStack({ name: 'bulk-kill', timeScale: 1 });
}, 300_000);
afterAll(async () => {
  await stack?.close();
});

describe('a bulk action and a worker crash', () => {
  it('SIGKILL mid-action, another worker started: it resumes and retries each failed job once', async () => {
    const tag = `kill-${randomUUID().slice(0, 8)}`;
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 50 });
    const ids = Array.from({ length: FAILED_JOBS }, (_, index) => `bulk-kill-${index}-${tag}`);
    await Promise.all(
      ids.map(async (workflowId, index) => {
        const handle = await startJob(
          stack.client,
          { endpointId, request: { input: { output: { index }, fail: 'always' } }, submitLease: false },
          { workflowId, taskQueue: stack.taskQueue, tags: [tag] },
        );
        await handle.result().catch(() => undefined);
      }),
    );
    const failed = `ServerlessTags = "${tag}" AND ExecutionStatus = "Failed"`;
    await eventually(
      async () => ((await stack.client.workflow.count(failed)).count === FAILED_JOBS ? true : undefined),
      60_000,
    );

    const bulkQueue = uniqueTaskQueue('bulk-kill-actions');
    const { TEMPORAL_ADDRESS: _address, ...vars } = stack.workerEnv;
    const first = spawnWorker({ ...vars, TEMPORAL_TASK_QUEUE: bulkQueue });
    const workers = [first];
    try {
      await first.running;
      // A page a run: the crash falls between pages or inside one.
      const handle = await startBulkAction(
        stack.client,
        'retry',
        { tags: [tag] },
        { taskQueue: bulkQueue, pageSize: 1 },
      );
      const before = await eventually(async () => {
        const progress = await getBulkProgress(stack.client, { workflowId: handle.workflowId }).catch(
          () => undefined,
        );
        return progress && progress.pages >= 5 ? progress : undefined;
      }, 120_000);
      await first.kill();
      expect(first.child.signalCode).toBe('SIGKILL');
      expect(before.done).toBe(false);

      const second = spawnWorker({ ...vars, TEMPORAL_TASK_QUEUE: bulkQueue });
      workers.push(second);
      await second.running;
      const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
      expect(progress).toMatchObject({ done: true, seen: FAILED_JOBS, failed: 0 });
      // A page cut short by the crash is acted on again: the run it had retried already is skipped.
      expect(progress.acted + progress.skipped).toBe(FAILED_JOBS);
      for (const workflowId of ids) {
        await eventually(async () => {
          const runs = await stack.client.workflow.count(`WorkflowId = "${workflowId}"`);
          return runs.count === 2 ? true : undefined;
        }, 60_000);
      }
      // Every retry ran to its end at the service: one job each more, no more.
      await eventually(
        async () =>
          (await stack.client.workflow.count(failed)).count === 2 * FAILED_JOBS ? true : undefined,
        60_000,
      );
      expect(stack.control.submissions(endpointId)).toBe(2 * FAILED_JOBS);
    } finally {
      for (const worker of workers) await worker.kill();
    }
  }, 600_000);
});
