/**
 * Records the history of one job workflow run on a throwaway dev server into
 * test/fixtures/job.history.json, for the replay test that guards the job workflow's determinism.
 * The activities are scripted (no service needed) so the run takes every common road: a submit, a
 * wait that sees FAILED, a backoff timer and a /retry, a poller (which sees the job start and goes
 * on) cancelled by a webhook, the confirming /status (a local activity), search attribute upserts
 * and the result.
 *
 * A published version's histories are kept, never re-recorded: a change to a workflow's commands
 * ships with a patch or a Worker Versioning build, and its new histories are added beside the old
 * ones (docs/operations/workflow-changes.md).
 *
 *   npx tsx scripts/record-job-history.ts
 */
import { Context } from '@temporalio/activity';
import type { JobActivities } from '../activities/job';
import type { WaitForJobChangeInput } from '../contracts/job-types';
import type { serverlessJob } from '../workflows/job/job';
import { jobWebhookSignal } from '../workflows/job/job-definitions';
import { recordHistories, runRecording } from './history-recorder';

const WORKFLOW_ID = 'job-recorded';

function scriptedActivities(): Partial<JobActivities> & { waits: number } {
  const state = { waits: 0 };
  const observedAt = () => Date.now();
  return Object.assign(state, {
    submitJob: async () => ({
      jobId: 'job-rec-1',
      status: 'IN_QUEUE' as const,
      observedAt: observedAt(),
      webhookArmed: true,
    }),
    waitForJobChange: async (input: WaitForJobChangeInput) => {
      state.waits += 1;
      if (state.waits === 1)
        return {
          jobId: input.jobId,
          status: 'FAILED' as const,
          error: 'first try fails',
          observedAt: observedAt(),
          reason: 'changed' as const,
          polls: 3,
        };
      // A start is returned only when the workflow records it (recordStart, or a route).
      if (state.waits === 2 && input.returnOn === 'change')
        return {
          jobId: input.jobId,
          status: 'IN_PROGRESS' as const,
          progress: { step: 1 },
          observedAt: observedAt(),
          reason: 'changed' as const,
          polls: 2,
        };
      // The last wait polls (seeing the start) until the webhook wins and the workflow cancels it.
      const context = Context.current();
      for (;;) {
        context.heartbeat({
          jobId: input.jobId,
          knownStatus: input.knownStatus,
          status: 'IN_PROGRESS',
          polls: 1,
          intervalMs: 100,
        });
        await context.sleep(100);
      }
    },
    fetchJobStatus: async (input: { jobId: string }) => ({
      jobId: input.jobId,
      status: 'COMPLETED' as const,
      output: { text: 'recorded' },
      executionTime: 1234,
      observedAt: observedAt(),
    }),
    retryJob: async (input: { jobId: string }) => ({
      jobId: input.jobId,
      status: 'IN_QUEUE' as const,
      observedAt: observedAt(),
    }),
  });
}

runRecording(async () => {
  const activities = scriptedActivities();
  await recordHistories(
    { taskQueue: 'record-job-history', workflowsPath: require.resolve('../workflows/job/job'), activities },
    async ({ client, taskQueue, save }) => {
      const handle = await client.workflow.start<typeof serverlessJob>('serverlessJob', {
        taskQueue,
        workflowId: WORKFLOW_ID,
        args: [
          {
            endpointId: 'ep-rec',
            request: { input: { prompt: 'replay me' } },
            retry: { maxRetries: 2, initialInterval: '1 second' },
          },
        ],
      });
      while (activities.waits < 2) await new Promise((resolve) => setTimeout(resolve, 50));
      await handle.signal(jobWebhookSignal, { jobId: 'job-rec-1', status: 'COMPLETED' });
      await save('job', handle);
    },
  );
});
