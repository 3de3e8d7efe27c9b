/**
 * A schedule: a job every weekday at 02:00 in Paris, kept by a Temporal Schedule (the server holds
 * the timetable, the overlap policy and catch-up). The example does not wait for the night: it
 * triggers a run now, as an operator would, awaits it, then deletes the schedule.
 */
import {
  awaitJob,
  connectTemporalClient,
  deleteSchedule,
  describeSchedule,
  loadWorkerConfig,
  runWorker,
  scheduleJob,
  triggerSchedule,
} from 'durable-serverless';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const endpointId = process.env.ENDPOINT_ID ?? 'my-endpoint';
  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  const worker = runWorker(config, { signal: stop.signal });
  const client = await connectTemporalClient();
  const scheduleId = `example-nightly-${Date.now()}`;
  try {
    await scheduleJob(
      client,
      { endpointId, request: { input: { report: 'nightly' } } },
      {
        scheduleId,
        spec: { cron: ['0 2 * * MON-FRI'], timezone: 'Europe/Paris' },
        policies: { overlap: 'SKIP', catchupWindow: '1 hour' },
        taskQueue: config.temporal.taskQueue,
      },
    );
    const { nextActionTimes } = await describeSchedule(client, { scheduleId });
    console.log(`[schedule] ${scheduleId}: next run ${nextActionTimes[0]?.toISOString()}`);

    await triggerSchedule(client, { scheduleId });
    // The run appears in the schedule's description once the server has started it.
    let runId: string | undefined;
    for (let look = 0; runId === undefined && look < 300; look++) {
      runId = (await describeSchedule(client, { scheduleId })).recentRuns[0]?.workflowId;
      if (runId === undefined) await sleep(100);
    }
    if (runId === undefined) throw new Error('the triggered run never started');
    const result = await awaitJob(client, { job: runId });
    console.log(`[schedule] triggered run ${runId}: ${result.status}`, JSON.stringify(result.output));
  } finally {
    await deleteSchedule(client, { scheduleId }).catch(() => undefined);
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[schedule] failed:', error);
  process.exit(1);
});
