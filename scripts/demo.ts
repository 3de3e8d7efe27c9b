/**
 * `npm run demo`: the embedded default, end to end on one machine. Starts the local Temporal dev
 * server (with its web UI), runs a worker, runs a workflow and prints what happened.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createStackCheckActivities } from '../activities/stack-check';
import { searchAttributeKeys } from '../workflows/search-attributes';
import { stackCheck } from '../workflows/stack-check';
import { ensureServers } from './servers';

const say = (line: string) => console.log(`[demo] ${line}`);

async function main(): Promise<void> {
  const { temporalCli } = await ensureServers(say);
  const uiPort = Number(process.env.DEMO_UI_PORT ?? 8233);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      ui: true,
      uiPort,
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error'],
    },
  });
  say(`Temporal dev server at ${env.address}; web UI at http://127.0.0.1:${uiPort}`);
  try {
    const taskQueue = 'durable-serverless-demo';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../workflows'),
      activities: createStackCheckActivities(),
    });
    await worker.runUntil(async () => {
      const result = await env.client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId: `stack-check-${Date.now()}`,
        args: [{ name: 'demo', wait: '1 second' }],
      });
      say(`stack check: ${result}`);
    });
  } finally {
    await env.teardown();
  }
  say('done');
}

main().catch((error: unknown) => {
  console.error('[demo] failed:', error);
  process.exit(1);
});
