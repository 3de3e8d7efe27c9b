/**
 * Cancelling the job workflow cancels the remote job (POST /cancel in a non-cancellable scope)
 * before the workflow ends as cancelled, whether the job was queued or running. Real stack: dev
 * server, emulator over HTTP, real worker, polling only.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, cancelJob, getJobSnapshot } from '../../client/jobs';
import { eventually, FAST_POLLING, type JobStack, seenRunning, startJobStack } from '../support/integration';

describe('cancelling the job workflow (dev server, emulator over HTTP, real worker)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'job-cancel', timeScale: 100 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** Cancels the workflow and checks it ended cancelled after cancelling the remote job. */
  async function cancelAndCheck(workflowId: string, jobId: string) {
    await cancelJob(stack.client, { workflowId });

    const error = await awaitJob(stack.client, { job: workflowId }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const handle = stack.client.workflow.getHandle(workflowId);
    expect((await handle.describe()).status.name).toBe('CANCELLED');

    expect(stack.control.job(jobId)?.status).toBe('CANCELLED');
    const snapshot = await getJobSnapshot(stack.client, { workflowId });
    expect(snapshot).toMatchObject({
      phase: 'cancelled',
      status: 'CANCELLED',
      remoteCancel: { sent: true, status: 'CANCELLED' },
    });
    // The cancel went out before the workflow ended: its activity completed inside the history.
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const cancelScheduled = events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'cancelJob',
    );
    expect(cancelScheduled).toBeDefined();
    const cancelCompleted = events.findIndex(
      (e) =>
        e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() ===
        cancelScheduled?.eventId?.toString(),
    );
    const ended = events.findIndex((e) => e.workflowExecutionCanceledEventAttributes);
    expect(cancelCompleted).toBeGreaterThan(0);
    expect(ended).toBeGreaterThan(cancelCompleted);
  }

  it('while queued: the job is removed from the queue (CANCELLED), then the workflow ends cancelled', async () => {
    // No workers allowed: the job waits in the queue for ever.
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 0 });
    const handle = await stack.start({
      endpointId,
      request: { input: { sleepMs: 1_000 } },
      polling: FAST_POLLING,
    });
    const queued = await stack.snapshotWhen(
      handle.workflowId,
      (s) => s.phase === 'waiting' && s.status === 'IN_QUEUE',
    );
    const jobId = queued.jobId as string;
    expect(stack.control.job(jobId)?.status).toBe('IN_QUEUE');

    await cancelAndCheck(handle.workflowId, jobId);
    expect(stack.control.job(jobId)?.attempts).toBe(0); // it never started
    expect(stack.control.submissions(endpointId)).toBe(1);
  });

  it('while running: the running job is stopped (CANCELLED), then the workflow ends cancelled', async () => {
    const endpointId = stack.endpoint();
    const handle = await stack.start({
      endpointId,
      // A week of service time: at time scale 100 the default 10 minutes is 6 real seconds.
      request: { input: { hang: true }, policy: { executionTimeout: 604_800_000, ttl: 604_800_000 } },
      polling: FAST_POLLING,
    });
    const running = await stack.snapshotWhen(handle.workflowId, seenRunning);
    const jobId = running.jobId as string;
    expect(stack.control.job(jobId)?.status).toBe('IN_PROGRESS');

    await cancelAndCheck(handle.workflowId, jobId);
    expect(stack.control.job(jobId)?.attempts).toBe(1);
    // Its worker is free again: the endpoint reports nothing in progress.
    await eventually(() => stack.control.health(endpointId).jobs.inProgress === 0);
    expect(stack.control.submissions(endpointId)).toBe(1);
  });
});
