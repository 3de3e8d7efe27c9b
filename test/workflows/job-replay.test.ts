import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';

// Recorded from real runs on the dev server by `npx tsx scripts/record-job-history.ts`: a submit, a
// FAILED run, a backoff and a /retry, a poller cancelled by a webhook, and the confirming /status.
// `job-heartbeat-wait` was recorded when the wait was one long heartbeating activity; `job` with the
// slot-free wait (one look per attempt). Workflows started by either version may still be open in a
// user's cluster, so today's code must replay both.
const histories = ['job-heartbeat-wait', 'job'].map((name) => ({
  name,
  history: JSON.parse(readFileSync(path.join(__dirname, `../fixtures/${name}.history.json`), 'utf8')),
}));

describe.each(histories)('replay of the recorded job workflow history $name', ({ history }) => {
  it('accepts the current job workflow code', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/job.ts') },
        history,
        'job-recorded',
      ),
    ).resolves.toBeUndefined();
  });

  it('rejects a version of the job workflow whose commands changed', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('./job-variant-reordered.ts') },
        history,
        'job-recorded',
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
