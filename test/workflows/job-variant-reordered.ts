/**
 * The job workflow as a careless change might leave it: a timer now comes before everything else.
 * Replaying the recorded history against this must fail, which proves the replay test guards the
 * job workflow's determinism.
 */
import { sleep } from '@temporalio/workflow';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { JobResult } from '../../contracts/job-snapshot';
import { serverlessJob as recorded } from '../../workflows/job/job';

export async function serverlessJob(input: JobWorkflowInput): Promise<JobResult> {
  await sleep(1);
  return recorded(input);
}
