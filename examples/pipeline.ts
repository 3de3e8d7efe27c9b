/**
 * A chained pipeline: a scheduled fan-out whose end starts a report automation.
 *
 * 1. A nightly schedule (02:00 in Europe/Paris) of a batch that fans out 20 render jobs. The
 *    example does not wait for the night: it triggers the schedule now, as an operator would.
 * 2. When the batch ends, its `emitOnEnd` sends an event to the `nightly-report` automation, which
 *    runs one job that writes the night's report (the chaining of pipelines).
 */
import {
  awaitBatch,
  connectTemporalClient,
  defineAutomation,
  deleteSchedule,
  describeSchedule,
  getAutomationState,
  loadWorkerConfig,
  runWorker,
  scheduleBatch,
  triggerSchedule,
} from 'durable-serverless';

const say = (line: string) => console.log(`[pipeline] ${line}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks `check` until it answers; the example's only waiting, on what the system reports. */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function main(): Promise<void> {
  const endpointId = process.env.ENDPOINT_ID ?? 'my-endpoint';
  const render = (scene: string, frames: number) => ({
    input: { sleepMs: 30_000, output: { scene, frames, rendered: true } },
  });
  // What to run when the renders end: code registered on the worker, called in an activity.
  const nightlyReport = defineAutomation({
    name: 'nightly-report',
    run: (events) => ({
      kind: 'job',
      input: {
        endpointId,
        request: { input: { sleepMs: 5_000, output: { report: events.map((e) => e.type), night: 'done' } } },
      },
    }),
  });

  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  const worker = runWorker(config, { signal: stop.signal, automations: [nightlyReport] });
  const client = await connectTemporalClient();
  const scheduleId = `nightly-renders-${Date.now()}`;
  try {
    // 1. The nightly fan-out, kept by a Temporal Schedule; its end is an event (chaining).
    await scheduleBatch(
      client,
      {
        endpointId,
        items: { inline: Array.from({ length: 20 }, (_, i) => render(`scene-${i}`, 240)) },
        maxConcurrency: 10,
        emitOnEnd: { automation: 'nightly-report', key: 'renders' },
      },
      {
        scheduleId,
        spec: { cron: ['0 2 * * *'], timezone: 'Europe/Paris' },
        policies: { overlap: 'SKIP', catchupWindow: '1 hour' },
        taskQueue: config.temporal.taskQueue,
      },
    );
    const next = (await describeSchedule(client, { scheduleId })).nextActionTimes[0];
    say(`1. schedule ${scheduleId}: next run ${next?.toISOString()} (02:00 Europe/Paris); triggering it now`);
    await triggerSchedule(client, { scheduleId });
    const runId = await until('the scheduled run', async () => {
      const run = (await describeSchedule(client, { scheduleId })).recentRuns[0];
      return run?.workflowId;
    });
    const nightly = await awaitBatch(client, { batch: runId });
    say(
      `1. scheduled batch ${runId}: ${nightly.counts.completed} of ${nightly.total} renders completed, ` +
        `${nightly.submissions} submissions`,
    );

    // 2. The batch's end started the report automation, which ran one job.
    const reported = await until('the nightly report', async () => {
      const state = await getAutomationState(client, { automation: 'nightly-report', key: 'renders' });
      return state.counters.runsCompleted >= 1 ? state : undefined;
    });
    say(
      `2. chained: the batch's end event started nightly-report: ${reported.counters.received} event, ` +
        `${reported.counters.runsCompleted} job completed`,
    );
  } finally {
    await deleteSchedule(client, { scheduleId }).catch(() => undefined);
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[pipeline] failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
