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
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createEndpointActivities } from '../activities/endpoint';
import { createServiceClient } from '../api';
import { startProvisionEndpoint, startTeardownEndpoint, startUpdateEndpoint } from '../client/endpoints';
import { startEmulator } from '../emulator';
import { recordHistories, runRecording } from './history-recorder';

runRecording(async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const apiKey = 'record-key';
  const emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 50 });
  const client = createServiceClient({
    apiKey,
    apiUrl: emulator.apiUrl,
    graphqlUrl: emulator.graphqlUrl,
    restUrl: emulator.restUrl,
  });
  try {
    await recordHistories(
      {
        taskQueue: 'record-endpoint-history',
        workflowsPath: require.resolve('../workflows'),
        activities: createEndpointActivities({ client }),
      },
      async ({ client: recordingClient, taskQueue, save }) => {
        const volume = emulator.control.createNetworkVolume(apiKey);
        const provision = await startProvisionEndpoint(
          recordingClient,
          {
            name: 'recorded',
            templateId: 'scripted',
            gpuIds: 'ADA_24',
            workersMax: 1,
            networkVolumeId: volume.id,
          },
          { taskQueue, workflowId: 'endpoint-provision-recorded' },
        );
        await save('endpoint-provision', provision);
        const { endpointId } = await provision.result();

        await save(
          'endpoint-update',
          await startUpdateEndpoint(
            recordingClient,
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
        await save(
          'endpoint-teardown',
          await startTeardownEndpoint(
            recordingClient,
            {
              endpointId,
              jobs: { mode: 'cancel', jobIds: [jobId] },
              pollInterval: 200,
              deleteNetworkVolume: true,
            },
            { taskQueue, workflowId: 'endpoint-teardown-recorded' },
          ),
        );
      },
    );
  } finally {
    await client.close();
    await emulator.close();
  }
});
