/**
 * Replays recorded runs of the endpoint lifecycle workflows against today's code, as the worker
 * registers it (workflows/index.ts). A change that alters their commands fails here before it
 * can break a teardown that is open in production. Recorded by scripts/record-endpoint-history.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { quietRuntime } from '../support/workflow-harness';

quietRuntime();

const recorded = (name: string) =>
  historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, `../fixtures/${name}.history.json`), 'utf8')));

const RECORDED = [
  ['endpoint-provision', 'endpoint-provision-recorded'],
  ['endpoint-update', 'endpoint-update-recorded'],
  ['endpoint-teardown', 'endpoint-teardown-recorded'],
  // `jobs` of the library's job type, run as one batch (a child workflow), then the teardown.
  ['endpoint-ephemeral-jobs', 'endpoint-ephemeral-jobs-recorded'],
];

describe('replay of recorded endpoint lifecycle runs', () => {
  it.each(RECORDED)('%s replays against the current workflow code', async (name, workflowId) => {
    const history = recorded(name);
    expect(history.events?.length).toBeGreaterThan(10);
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('../../workflows/index.ts') },
        history,
        workflowId,
      ),
    ).resolves.toBeUndefined();
  });

  it.each(RECORDED)('%s fails replay against a version whose commands changed', async (name, workflowId) => {
    await expect(
      Worker.runReplayHistory(
        { workflowsPath: require.resolve('./endpoint-variant-reordered.ts') },
        recorded(name),
        workflowId,
      ),
    ).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
