/**
 * The workflow bundle of the job tests: the job workflow itself, and a parent that runs it as a
 * child (so that a `signal` stream sink without a workflow id has a parent to resolve to).
 */
import { executeChild, workflowInfo } from '@temporalio/workflow';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { JobResult } from '../../contracts/job-snapshot';
import { serverlessJob } from '../../workflows/job/job';

export { serverlessJob } from '../../workflows/job/job';

export async function jobParent(input: JobWorkflowInput): Promise<JobResult> {
  return executeChild(serverlessJob, { args: [input], workflowId: `${workflowInfo().workflowId}-child` });
}
