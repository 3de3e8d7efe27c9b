import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';

// Recorded by `npx tsx scripts/record-batch-history.ts batch`: a watcher of its own for a page
// answered after a watcher started, a retry and the results. Every published version's histories
// are kept here and replayed (docs/operations/workflow-changes.md).
const histories = ['batch'].map((name) => ({
  name,
  history: JSON.parse(readFileSync(path.join(__dirname, `../fixtures/${name}.history.json`), 'utf8')),
}));

describe.each(histories)('replay of the recorded batch history $name', ({ history }) => {
  it('accepts the current batch workflow code', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/batch/batch.ts') },
        history,
        'batch-recorded',
      ),
    ).resolves.toBeUndefined();
  });

  it('rejects a version of the batch workflow whose commands changed', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('./batch-variant-reordered.ts') },
        history,
        'batch-recorded',
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
