/**
 * The smallest workflow that exercises the whole stack: a durable timer and one activity.
 * `npm run demo` and the foundation tests use it to show the servers and the worker work.
 */
import type { Duration } from '@temporalio/common';
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { StackCheckActivities } from '../../activities/stack-check';

const { describeWorker } = proxyActivities<StackCheckActivities>({ startToCloseTimeout: '10 seconds' });

export interface StackCheckInput {
  name: string;
  /** How long to wait first; the time-skipping server crosses days of it in milliseconds. */
  wait: Duration;
}

export async function stackCheck(input: StackCheckInput): Promise<string> {
  await sleep(input.wait);
  const worker = await describeWorker(input.name);
  return `hello ${input.name}, after ${String(input.wait)} from ${worker}`;
}
