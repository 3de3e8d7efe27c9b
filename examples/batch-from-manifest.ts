/**
 * A batch from a manifest: the requests are written once to the batch store (a JSONL file, read a
 * page at a time by the workflow, never carried in its history), then run as one batch with at
 * most 8 jobs in flight; the results are lines in the same store.
 */
import {
  awaitBatch,
  connectTemporalClient,
  loadWorkerConfig,
  readBatchResults,
  runWorker,
  startBatch,
  writeBatchManifest,
} from 'durable-serverless';

async function main(): Promise<void> {
  const endpointId = process.env.ENDPOINT_ID ?? 'my-endpoint';
  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  const worker = runWorker(config, { signal: stop.signal });
  const client = await connectTemporalClient();
  try {
    const id = `example-batch-${Date.now()}`;
    const requests = Array.from({ length: 50 }, (_, i) => ({ input: { prompt: `frame ${i}` } }));
    const manifest = await writeBatchManifest(requests, {
      store: config.resultStoreDir,
      key: `manifests/${id}.jsonl`,
    });
    console.log(`[batch] manifest ${manifest.key}: ${manifest.count} requests`);

    const handle = await startBatch(
      client,
      { endpointId, items: { manifest: { key: manifest.key } }, maxConcurrency: 8 },
      { workflowId: id, taskQueue: config.temporal.taskQueue },
    );
    console.log(`[batch] ${id} started`);
    const summary = await awaitBatch(client, { batch: handle });
    console.log(`[batch] ${summary.counts.completed} of ${summary.total} completed`);

    let lines = 0;
    for await (const line of readBatchResults(client, { batch: summary, store: config.resultStoreDir })) {
      if (line.status === 'COMPLETED') lines += 1;
    }
    console.log(`[batch] ${lines} completed result lines read back`);
  } finally {
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[batch] failed:', error);
  process.exit(1);
});
