/**
 * The batch workflow as a careless change might leave it: a timer now comes before everything else.
 * Replaying a recorded batch history against this must fail, which proves the batch replay test
 * guards the batch workflow's determinism.
 */
import { sleep } from '@temporalio/workflow';
import { serverlessBatch as recorded } from '../../workflows/batch/batch';

export async function serverlessBatch(...args: Parameters<typeof recorded>): ReturnType<typeof recorded> {
  await sleep(1);
  return recorded(...args);
}
