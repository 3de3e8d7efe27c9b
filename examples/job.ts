/**
 * A job: start it under your own id (starting the same id again returns the same job), follow its
 * snapshot, then read its result or its typed failure.
 */
import {
  awaitJob,
  connectTemporalClient,
  getJobSnapshot,
  jobFailureOf,
  loadWorkerConfig,
  runWorker,
  startJob,
} from 'durable-serverless';

async function main(): Promise<void> {
  const endpointId = process.env.ENDPOINT_ID ?? 'my-endpoint';
  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  const worker = runWorker(config, { signal: stop.signal });
  const client = await connectTemporalClient();
  try {
    const handle = await startJob(
      client,
      { endpointId, request: { input: { prompt: 'a lighthouse at dawn' } } },
      { workflowId: `example-job-${Date.now()}`, taskQueue: config.temporal.taskQueue },
    );
    console.log(`[job] ${handle.workflowId} started`);
    // A large output stays in the worker's result store: `store` reads it back.
    const { output, jobId, attempts } = await awaitJob(client, { job: handle, store: config.resultStoreDir });
    console.log(`[job] ${jobId} completed after ${attempts} attempt(s):`, JSON.stringify(output));
    const snapshot = await getJobSnapshot(client, { workflowId: handle.workflowId });
    console.log(`[job] its snapshot: ${snapshot.status}, job ids ${snapshot.jobIds.join(', ')}`);
  } catch (error) {
    const failure = jobFailureOf(error);
    if (!failure) throw error;
    console.error(`[job] failed: ${failure.type}: ${failure.message}`);
    process.exitCode = 1;
  } finally {
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[job] failed:', error);
  process.exit(1);
});
