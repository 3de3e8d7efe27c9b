/**
 * Records the history of one job workflow run under a submit lease on a throwaway dev server into
 * test/fixtures/job-lease.history.json, for the replay test: an uncertain submit under the lease,
 * the wait for an orphan (one timer of lease + webhook window), a second submit, the extension of
 * its lease through /status?ttl=, and the wait that sees it COMPLETED. The activities are scripted
 * (no service needed). The lease is the 10 s minimum, so the run takes about 45 s.
 *
 *   npx tsx scripts/record-job-lease-history.ts
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { JobActivities } from '../activities/job';
import type { FetchJobStatusInput, WaitForJobChangeInput } from '../activities/job-types';
import type { serverlessJob } from '../workflows/job';
import { searchAttributeKeys } from '../workflows/search-attributes';
import { ensureTemporalCli } from './servers';

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

async function main(): Promise<void> {
  const cli = await ensureTemporalCli(console.log);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(cli ? { executable: { type: 'existing-path' as const, path: cli } } : {}),
      searchAttributes: searchAttributeKeys,
    },
  });
  try {
    const taskQueue = 'record-job-lease-history';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../workflows/job'),
      activities: scriptedActivities(),
    });
    const history = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start<typeof serverlessJob>('serverlessJob', {
        taskQueue,
        workflowId: WORKFLOW_ID,
        args: [{ endpointId: 'ep-rec', request: { input: { prompt: 'lease me' } }, submitLease: LEASE_MS }],
      });
      console.log('result:', await handle.result());
      return handle.fetchHistory();
    });
    const target = path.join(__dirname, '../test/fixtures/job-lease.history.json');
    writeFileSync(target, `${historyToJSON(history)}\n`);
    console.log(`wrote ${target} (${history.events?.length} events)`);
  } finally {
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
