/**
 * Workflows bundled for the endpoint lifecycle tests: the real lifecycle workflows, plus a stand-in
 * job workflow for the ephemeral workflow's children. The stand-in behaves as its input says and,
 * when cancelled, reports it through an activity (as a real job workflow cancels its remote job)
 * before it ends, so a test can see the jobs were stopped before the endpoint went.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  sleep,
} from '@temporalio/workflow';

export * from '../../workflows/endpoint/endpoint-lifecycle';

export interface StubJobActivities {
  stubJobStarted(job: string, endpointId: string): Promise<void>;
  stubJobCancelled(job: string, endpointId: string): Promise<void>;
  /** Heartbeats until cancelled. */
  stubJobHang(job: string): Promise<void>;
}

// Waiting for an activity's cancellation keeps the log in order: a report never lands after teardown.
const { stubJobStarted, stubJobCancelled } = proxyActivities<StubJobActivities>({
  startToCloseTimeout: '10 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

const { stubJobHang } = proxyActivities<StubJobActivities>({
  startToCloseTimeout: '1 day',
  // A cancel reaches the activity with the answer to a heartbeat, and the worker sends those at
  // most every 0.8 of this: short, so a cancelled job hears it within seconds.
  heartbeatTimeout: '3 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

export interface StubJobInput {
  endpointId: string;
  job: string;
  /**
   * Run until cancelled, inside an activity: the time-skipping server would fast-forward through
   * any timer, however long, as soon as nothing else is going on.
   */
  hang?: boolean;
  /** How long the job runs (workflow time). */
  runMs?: number;
  fail?: string;
  output?: unknown;
}

export async function stubJobWorkflow(input: StubJobInput): Promise<unknown> {
  try {
    // Cancellation may come while the start is reported (a busy machine): it counts all the same.
    await stubJobStarted(input.job, input.endpointId);
    if (input.hang) await stubJobHang(input.job);
    else await sleep(input.runMs ?? 60_000);
  } catch (error) {
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(() => stubJobCancelled(input.job, input.endpointId));
    }
    throw error;
  }
  if (input.fail !== undefined) throw ApplicationFailure.nonRetryable(input.fail, 'StubJobFailed');
  return input.output ?? { job: input.job, endpointId: input.endpointId };
}
