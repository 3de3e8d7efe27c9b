/**
 * Replays recorded runs of the endpoint lifecycle workflows against today's code, as the worker
 * registers it (workflows/index.ts). A change that alters their commands fails here before it
 * can break a teardown that is open in production. Recorded by scripts/record-endpoint-history.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { quietRuntime } from '../support/workflow-harness';

quietRuntime();

const recorded = (name: string) =>
  historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, `../fixtures/${name}.history.json`), 'utf8')));

describe('replay of recorded endpoint lifecycle runs', () => {
  it.each([
    ['endpoint-provision', 'endpoint-provision-recorded'],
    ['endpoint-update', 'endpoint-update-recorded'],
    ['endpoint-teardown', 'endpoint-teardown-recorded'],
  ])('%s replays against the current workflow code', async (name, workflowId) => {
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
});
