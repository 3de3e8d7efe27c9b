/**
 * Records the histories of the endpoint lifecycle workflows (provision, update, teardown with a
 * job still running) from real runs: a throwaway dev server, the emulator over HTTP, the real API
 * client and activities. The replay test (test/workflows/endpoint-replay.test.ts) guards their
 * determinism with them.
 *
 * Re-record only when a workflow change is meant to be incompatible (and then version the
 * workflow with patched() instead, if runs of the old code may still be open).
 *
 *   npx tsx scripts/record-endpoint-history.ts
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { createEndpointActivities } from '../activities/endpoint';
import { createServiceClient } from '../api';
import { startProvisionEndpoint, startTeardownEndpoint, startUpdateEndpoint } from '../client/endpoints';
import { startEmulator } from '../emulator';
import { ensureTemporalCli } from './servers';

const fixtures = path.join(__dirname, '../test/fixtures');

async function record(name: string, handle: WorkflowHandle): Promise<void> {
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(path.join(fixtures, `${name}.history.json`), `${historyToJSON(history)}\n`);
  console.log(`wrote test/fixtures/${name}.history.json (${history.events?.length} events)`);
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cli = await ensureTemporalCli(console.log);
  const env = await TestWorkflowEnvironment.createLocal({
    server: cli ? { executable: { type: 'existing-path', path: cli } } : {},
  });
  const apiKey = 'record-key';
  const emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 50 });
  const client = createServiceClient({
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  });
  try {
    const taskQueue = 'record-endpoint-history';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../workflows'),
      activities: createEndpointActivities({ client }),
    });
    await worker.runUntil(async () => {
      const volume = emulator.control.createNetworkVolume(apiKey);
      const provision = await startProvisionEndpoint(
        env.client,
        {
          name: 'recorded',
          templateId: 'scripted',
          gpuIds: 'ADA_24',
          workersMax: 1,
          networkVolumeId: volume.id,
        },
        { taskQueue, workflowId: 'endpoint-provision-recorded' },
      );
      await record('endpoint-provision', provision);
      const { endpointId } = await provision.result();

      await record(
        'endpoint-update',
        await startUpdateEndpoint(
          env.client,
          { endpointId, changes: { workersMax: 2, idleTimeout: 9 } },
          { taskQueue, workflowId: 'endpoint-update-recorded' },
        ),
      );

      // A job still running at teardown, cancelled by id: every phase of teardown runs.
      const { id: jobId } = await client.jobs.run(endpointId, {
        input: { hang: true },
        policy: { executionTimeout: 604_800_000 },
      });
      while (emulator.control.job(jobId)?.status !== 'IN_PROGRESS')
        await new Promise((r) => setTimeout(r, 50));
      await record(
        'endpoint-teardown',
        await startTeardownEndpoint(
          env.client,
          {
            endpointId,
            jobs: { mode: 'cancel', jobIds: [jobId] },
            pollInterval: 200,
            deleteNetworkVolume: true,
          },
          { taskQueue, workflowId: 'endpoint-teardown-recorded' },
        ),
      );
    });
  } finally {
    await client.close();
    await emulator.close();
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
