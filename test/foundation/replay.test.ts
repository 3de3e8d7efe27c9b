import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';

// Recorded from a real run on the dev server by `npx tsx scripts/record-history.ts stackCheck`.
const history = historyFromJSON(
  JSON.parse(readFileSync(path.join(__dirname, '../fixtures/stack-check.history.json'), 'utf8')),
);

describe('replay of a recorded history', () => {
  it('accepts the workflow code that produced the history', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/shared/stack-check.ts') },
        history,
        'recorded',
      ),
    ).resolves.toBeUndefined();
  });

  it('rejects a version of the workflow whose commands changed', async () => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../support/variants/stack-check-reordered.ts') },
        history,
        'recorded',
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
