/**
 * stackCheck as someone might carelessly change it: the activity now runs before the timer.
 * Replaying a recorded history of the real workflow against this must fail, which is what proves
 * the replay test guards determinism.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { StackCheckActivities } from '../../../activities/stack-check';
import type { StackCheckInput } from '../../../workflows/shared/stack-check';

const { describeWorker } = proxyActivities<StackCheckActivities>({ startToCloseTimeout: '10 seconds' });

export async function stackCheck(input: StackCheckInput): Promise<string> {
  const worker = await describeWorker(input.name);
  await sleep(input.wait);
  return `hello ${input.name}, after ${String(input.wait)} from ${worker}`;
}
