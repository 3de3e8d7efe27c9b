/**
 * Records the history of a real run on a throwaway dev server into test/fixtures, for the replay
 * tests that guard determinism. Re-record only when a workflow change is meant to be incompatible
 * (and then version the workflow with patched() instead, if runs of the old code may be open).
 *
 *   npx tsx scripts/record-history.ts
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createStackCheckActivities } from '../activities/stack-check';
import { stackCheck } from '../workflows/stack-check';
import { ensureTemporalCli } from './servers';

async function main(): Promise<void> {
  const cli = await ensureTemporalCli(console.log);
  const env = await TestWorkflowEnvironment.createLocal({
    server: cli ? { executable: { type: 'existing-path', path: cli } } : {},
  });
  try {
    const taskQueue = 'record-history';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../workflows/stack-check'),
      activities: createStackCheckActivities(),
    });
    const workflowId = 'stack-check-recorded';
    await worker.runUntil(
      env.client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId,
        args: [{ name: 'replay', wait: '1 second' }],
      }),
    );
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const target = path.join(__dirname, '../test/fixtures/stack-check.history.json');
    writeFileSync(target, `${historyToJSON(history)}\n`);
    console.log(`wrote ${target} (${history.events?.length} events)`);
  } finally {
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
