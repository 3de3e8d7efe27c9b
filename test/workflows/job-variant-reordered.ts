/**
 * The job workflow as a careless change might leave it: a timer now comes before everything else.
 * Replaying the recorded history against this must fail, which proves the replay test guards the
 * job workflow's determinism.
 */
import { sleep } from '@temporalio/workflow';
import { serverlessJob as recorded } from '../../workflows/job';
import type { JobWorkflowInput } from '../../workflows/job-input';
import type { JobResult } from '../../workflows/job-snapshot';

export async function serverlessJob(input: JobWorkflowInput): Promise<JobResult> {
  await sleep(1);
  return recorded(input);
}
