/**
 * Records the history of one job workflow run under a submit lease on a throwaway dev server into
 * test/fixtures/job-lease.history.json, for the replay test: an uncertain submit under the lease,
 * the wait for an orphan (one timer of lease + webhook window), a second submit, the extension of
 * its lease through /status?ttl=, and the wait that sees it COMPLETED. The activities are scripted
 * (no service needed). The lease is the 10 s minimum, so the run takes about 45 s.
 *
 *   npx tsx scripts/record-job-lease-history.ts
 */
import { ApplicationFailure } from '@temporalio/common';
import type { JobActivities } from '../activities/job';
import type { FetchJobStatusInput, WaitForJobChangeInput } from '../contracts/job-types';
import type { serverlessJob } from '../workflows/job/job';
import { recordHistories, runRecording } from './history-recorder';

const WORKFLOW_ID = 'job-lease-recorded';
const LEASE_MS = 10_000;

function scriptedActivities(): Partial<JobActivities> {
  let submits = 0;
  return {
    submitJob: async () => {
      submits += 1;
      if (submits === 1)
        throw ApplicationFailure.create({
          type: 'SubmitUncertain',
          message: 'the run request may have reached the service (socket closed)',
          nonRetryable: true,
          details: [{ operation: 'run', cause: 'NetworkError', webhookArmed: true, leaseTtlMs: LEASE_MS }],
        });
      return {
        jobId: 'job-lease-2',
        status: 'IN_QUEUE' as const,
        observedAt: Date.now(),
        webhookArmed: true,
        leaseTtlMs: LEASE_MS,
      };
    },
    fetchJobStatus: async (input: FetchJobStatusInput) => ({
      jobId: input.jobId,
      status: 'IN_QUEUE' as const,
      observedAt: Date.now(),
    }),
    waitForJobChange: async (input: WaitForJobChangeInput) => ({
      jobId: input.jobId,
      status: 'COMPLETED' as const,
      output: { text: 'leased' },
      observedAt: Date.now(),
      reason: 'changed' as const,
      polls: 1,
    }),
  };
}

runRecording(() =>
  recordHistories(
    {
      taskQueue: 'record-job-lease-history',
      workflowsPath: require.resolve('../workflows/job/job'),
      activities: scriptedActivities(),
    },
    async ({ client, taskQueue, save }) => {
      const handle = await client.workflow.start<typeof serverlessJob>('serverlessJob', {
        taskQueue,
        workflowId: WORKFLOW_ID,
        args: [{ endpointId: 'ep-rec', request: { input: { prompt: 'lease me' } }, submitLease: LEASE_MS }],
      });
      await save('job-lease', handle);
    },
  ),
);
