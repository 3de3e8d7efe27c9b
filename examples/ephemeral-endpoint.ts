/**
 * An ephemeral endpoint run: one call provisions an endpoint, runs a batch on it and tears it
 * down, whatever happened in between (a failed batch or a cancellation tears down too). For a
 * night's work on hardware nobody keeps running.
 */
import {
  connectTemporalClient,
  ephemeralFailureOf,
  loadWorkerConfig,
  readBatchResults,
  runOnEphemeralEndpoint,
  runWorker,
} from 'durable-serverless';

async function main(): Promise<void> {
  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  const worker = runWorker(config, { signal: stop.signal });
  const client = await connectTemporalClient();
  try {
    const result = await runOnEphemeralEndpoint(
      client,
      {
        endpoint: { templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 4 },
        batch: {
          items: { inline: Array.from({ length: 12 }, (_, i) => ({ input: { output: { tile: i } } })) },
          maxConcurrency: 4,
        },
      },
      { workflowId: `example-ephemeral-${Date.now()}`, taskQueue: config.temporal.taskQueue },
    );
    const removed = result.teardown.endpointIds.join(', ');
    console.log(
      `[ephemeral] endpoint ${result.endpointId} (${result.name}) provisioned, then removed: ${removed}`,
    );
    if (result.batch) {
      const { counts, total } = result.batch;
      console.log(`[ephemeral] ${counts.completed} of ${total} items completed`);
      let lines = 0;
      for await (const _line of readBatchResults(client, {
        batch: result.batch,
        store: config.resultStoreDir,
      }))
        lines += 1;
      console.log(`[ephemeral] ${lines} result lines`);
    }
  } catch (error) {
    const failure = ephemeralFailureOf(error);
    if (!failure) throw error;
    console.error(
      `[ephemeral] ${failure.batchFailure.message}; endpoint ${failure.endpointId} torn down anyway`,
    );
    process.exitCode = 1;
  } finally {
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[ephemeral] failed:', error);
  process.exit(1);
});
