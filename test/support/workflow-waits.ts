/**
 * What a workflow is doing, in one line, for the message of a wait that ran out: its status, its
 * failure if it failed, and what it still waits on (pending activities with their attempt, state
 * and last failure; pending children). Only for error messages: tests assert on results and queries.
 */
import type { Client } from '@temporalio/client';

export async function describeWorkflowWait(client: Client, workflowId: string): Promise<string> {
  try {
    const handle = client.workflow.getHandle(workflowId);
    const { status, raw } = await handle.describe();
    if (status.name === 'FAILED') {
      const failure = await handle.result().then(
        () => 'no failure',
        (error: Error) => (error.cause as Error | undefined)?.message ?? error.message,
      );
      return `${workflowId}: FAILED (${failure})`;
    }
    const activities = (raw.pendingActivities ?? []).map(
      (activity) =>
        `${activity.activityType?.name} attempt ${activity.attempt} ${activity.state}` +
        (activity.lastFailure?.message ? ` (${activity.lastFailure.message})` : ''),
    );
    const children = (raw.pendingChildren ?? []).map((child) => `child ${child.workflowId}`);
    return `${workflowId}: ${status.name}, waiting on ${[...activities, ...children].join('; ') || 'nothing'}`;
  } catch (error) {
    return `${workflowId}: describe failed (${(error as Error).message})`;
  }
}
