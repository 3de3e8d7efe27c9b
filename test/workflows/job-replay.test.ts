import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';

// Recorded from real runs on the dev server by `npx tsx scripts/record-job-history.ts`: a submit, a
// FAILED run, a backoff and a /retry, a poller cancelled by a webhook, and the confirming /status.
// Every published version's histories are kept here and replayed (docs/operations/workflow-changes.md).
const histories = ['job'].map((name) => ({
  name,
  history: JSON.parse(readFileSync(path.join(__dirname, `../fixtures/${name}.history.json`), 'utf8')),
}));

describe.each(histories)('replay of the recorded job workflow history $name', ({ history }) => {
  it('accepts the current job workflow code', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/job/job.ts') },
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

// Recorded by `npx tsx scripts/record-job-lease-history.ts`: under a submit lease, an uncertain
// submit, the wait for an orphan (one timer), a second submit, its lease extension and the result.
const leaseHistory = JSON.parse(
  readFileSync(path.join(__dirname, '../fixtures/job-lease.history.json'), 'utf8'),
);

describe('replay of a recorded job workflow history under a submit lease', () => {
  it('accepts the job workflow code that produced it', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/job/job.ts') },
        leaseHistory,
        'job-lease-recorded',
      ),
    ).resolves.toBeUndefined();
  });
});
