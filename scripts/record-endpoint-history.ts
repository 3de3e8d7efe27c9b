/**
 * Records the histories of the endpoint lifecycle workflows (provision, update, teardown with a
 * job still running) from real runs: a throwaway dev server, the emulator over HTTP, the real API
 * client and activities. The replay test (test/workflows/endpoint-replay.test.ts) guards their
 * determinism with them.
 *
 * A published version's histories are kept, never re-recorded: a change to a workflow's commands
 * ships with a patch or a Worker Versioning build, and its new histories are added beside the old
 * ones (docs/operations/workflow-changes.md).
 *
 *   npx tsx scripts/record-endpoint-history.ts
 */

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createBatchActivities } from '../activities/batch';
import { createEndpointActivities } from '../activities/endpoint';
import { createServiceClient } from '../api';
import {
  startEphemeralEndpoint,
  startProvisionEndpoint,
  startTeardownEndpoint,
  startUpdateEndpoint,
} from '../client/endpoints';
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
  const storeDir = mkdtempSync(path.join(os.tmpdir(), 'record-endpoint-'));
  try {
    await recordHistories(
      {
        taskQueue: 'record-endpoint-history',
        workflowsPath: require.resolve('../workflows'),
        activities: {
          ...createEndpointActivities({ client }),
          ...createBatchActivities({ client, resultStoreDir: storeDir }),
        },
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

        // An ephemeral endpoint whose two jobs run as one batch (a child workflow), then teardown.
        await save(
          'endpoint-ephemeral-jobs',
          await startEphemeralEndpoint(
            recordingClient,
            {
              endpoint: { name: 'recorded-ephemeral', templateId: 'echo', gpuIds: 'ADA_24', workersMax: 2 },
              jobs: [
                { input: { request: { input: { n: 1 } } } },
                { input: { request: { input: { n: 2 } } } },
              ],
            },
            { taskQueue, workflowId: 'endpoint-ephemeral-jobs-recorded' },
          ),
        );
      },
    );
  } finally {
    rmSync(storeDir, { recursive: true, force: true });
    await client.close();
    await emulator.close();
  }
});
