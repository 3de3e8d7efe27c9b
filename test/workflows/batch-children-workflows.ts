/**
 * The batch workflow bundled with a fake `serverlessJob` (for the child mode's tests): the child
 * asks the test, through an activity, what to do for its item (complete after a while, fail, or
 * hold until signalled), and reports when it ends, so the test counts the children open at once.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import { firstEndpoint, type JobWorkflowInput } from '../../contracts/job-input';
import type { JobResult } from '../../contracts/job-snapshot';

export { serverlessBatch } from '../../workflows/batch/batch';

export type ChildFate = { kind: 'COMPLETED' | 'FAILED' | 'UNCERTAIN' | 'held'; ms: number };

export interface FakeChildActivities {
  childStarted(input: { index: number; workflowInput: JobWorkflowInput }): Promise<ChildFate>;
  childEnded(input: { index: number }): Promise<void>;
}

export const releaseChildSignal = defineSignal('releaseChild');

const acts = proxyActivities<FakeChildActivities>({ startToCloseTimeout: '1 minute' });

export async function serverlessJob(input: JobWorkflowInput): Promise<JobResult> {
  const index = input.requestRef?.index ?? -1;
  let released = false;
  setHandler(releaseChildSignal, () => {
    released = true;
  });
  const fate = await acts.childStarted({ index, workflowInput: input });
  try {
    if (fate.kind === 'held') await condition(() => released);
    else await sleep(fate.ms);
  } finally {
    await CancellationScope.nonCancellable(() => acts.childEnded({ index }));
  }
  const tally = { endpointId: firstEndpoint(input), jobId: `job-${index}`, jobIds: [`job-${index}`] };
  if (fate.kind === 'FAILED')
    throw ApplicationFailure.create({
      type: 'JobFailed',
      message: `job job-${index} failed after 2 attempt(s) (1 retry): item ${index} is broken`,
      nonRetryable: true,
      details: [{ ...tally, attempts: 2, retries: 1, submissions: 1, uncertainSubmits: 0, error: 'broken' }],
    });
  if (fate.kind === 'UNCERTAIN')
    throw ApplicationFailure.create({
      type: 'SubmitUncertain',
      message: 'the submit may have created a job whose id never arrived',
      nonRetryable: true,
      details: [
        {
          endpointId: firstEndpoint(input),
          jobIds: [],
          attempts: 0,
          retries: 0,
          submissions: 1,
          uncertainSubmits: 1,
        },
      ],
    });
  return {
    ...tally,
    status: 'COMPLETED',
    outputRef: {
      kind: 'serverless-result-ref',
      store: 'local',
      key: `out-${index}`,
      bytes: 10,
      sha256: '0'.repeat(64),
    },
    executionTime: 1_000,
    cost: { amount: 0.25, currency: 'USD', tier: 'AMPERE_16', seconds: 1 },
    attempts: 1,
    retries: 0,
    submissions: 1,
    uncertainSubmits: 0,
  };
}
