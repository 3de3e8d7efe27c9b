/**
 * Records the history of a real run on a throwaway dev server into test/fixtures, for the replay
 * tests that guard determinism. A published version's histories are kept, never re-recorded
 * (docs/operations/workflow-changes.md).
 *
 *   npx tsx scripts/record-history.ts
 */
import { createStackCheckActivities } from '../activities/stack-check';
import { stackCheck } from '../workflows/shared/stack-check';
import { recordHistories, runRecording } from './history-recorder';

runRecording(() =>
  recordHistories(
    {
      taskQueue: 'record-history',
      workflowsPath: require.resolve('../workflows/shared/stack-check'),
      activities: createStackCheckActivities(),
    },
    async ({ client, taskQueue, save }) => {
      const handle = await client.workflow.start(stackCheck, {
        taskQueue,
        workflowId: 'stack-check-recorded',
        args: [{ name: 'replay', wait: '1 second' }],
      });
      await save('stack-check', handle);
    },
  ),
);
