/**
 * Schedules: how long a triggered run takes to start and to finish, and how fast a backfill
 * starts and finishes its runs, with the scheduler's own history per run. Asserts nothing.
 *
 *   npx tsx bench/schedules.ts [--triggers 10] [--backfill 120]
 *
 * --triggers  triggers one after another, each waited to the end (default 10)
 * --backfill  minutes of a past window backfilled on a one-minute interval (default 120 runs)
 *
 * The dev server, one worker in its own process (as `npm run worker` runs it, polling only), the
 * emulator at time scale 1 with 200 warm workers and its rate limits on; jobs return at once
 * (`{ output }`, no sleep), so the figures are Temporal's and the library's, not the handler's.
 */
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { awaitJob } from '../client/jobs';
import {
  backfillSchedule,
  deleteSchedule,
  describeSchedule,
  scheduledRunWorkflowId,
  scheduleJob,
  triggerSchedule,
} from '../client/schedules';
import { startEmulator } from '../emulator';
import { numberArg, quietRuntime, say, seconds, spreadMs, startBenchWorker, startDevServer } from './support';

async function main() {
  const triggers = numberArg('triggers', 10);
  const backfillMinutes = numberArg('backfill', 120);
  quietRuntime();
  const apiKey = 'bench-schedules-key';
  const emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
  const env = await startDevServer();
  const client = env.client;
  const taskQueue = 'bench-schedules';
  const resultStoreDir = path.join(os.tmpdir(), `bench-schedules-${process.pid}`);
  const worker = await startBenchWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    webhooks: false,
    resultStoreDir,
  });
  const endpointId = emulator.control.createEndpoint(apiKey, {
    name: 'bench-schedules',
    templateId: 'scripted',
    workersMin: 200,
    workersMax: 200,
  }).id;
  const input = {
    endpointId,
    request: { input: { output: 'ok' } },
    polling: { initialIntervalMs: 100, maxIntervalMs: 250, backoffCoefficient: 1.5 },
  };
  try {
    const id = `bench-trigger-${Date.now()}`;
    await scheduleJob(client, input, {
      scheduleId: id,
      spec: { intervals: [{ every: '1 day' }] },
      taskQueue,
      paused: true,
      policies: { overlap: 'ALLOW_ALL' },
    });
    const toStart: number[] = [];
    const toEnd: number[] = [];
    for (let k = 0; k < triggers; k += 1) {
      const before = (await describeSchedule(client, { scheduleId: id })).numActionsTaken;
      const t0 = performance.now();
      await triggerSchedule(client, { scheduleId: id });
      let run: { workflowId: string; runId: string } | undefined;
      while (!run) {
        const d = await describeSchedule(client, { scheduleId: id });
        if (d.numActionsTaken > before) run = d.recentRuns.at(-1);
      }
      toStart.push(performance.now() - t0);
      await client.workflow.getHandle(run.workflowId, run.runId).result();
      toEnd.push(performance.now() - t0);
      // A new second, so the next trigger's run has an id of its own.
      while (Math.floor(Date.now() / 1000) === Math.floor((t0 + performance.timeOrigin) / 1000)) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    say(`trigger -> run seen started (describe): ${spreadMs(toStart)} over ${triggers}`);
    say(`trigger -> job completed: ${spreadMs(toEnd)}`);
    await deleteSchedule(client, { scheduleId: id });

    const bid = `bench-backfill-${Date.now()}`;
    await scheduleJob(client, input, {
      scheduleId: bid,
      spec: { intervals: [{ every: '1 minute' }] },
      taskQueue,
      paused: true,
    });
    const start = Math.floor(Date.now() / 60_000) * 60_000 - 24 * 3_600_000;
    const ids = Array.from({ length: backfillMinutes }, (_, k) =>
      scheduledRunWorkflowId(bid, new Date(start + k * 60_000)),
    );
    const t0 = performance.now();
    await backfillSchedule(client, {
      scheduleId: bid,
      start: new Date(start),
      end: new Date(start + (backfillMinutes - 1) * 60_000),
      overlap: 'ALLOW_ALL',
    });
    let taken = 0;
    while (taken < backfillMinutes)
      taken = (await describeSchedule(client, { scheduleId: bid })).numActionsTaken;
    const allStarted = performance.now() - t0;
    for (const workflowId of ids) {
      for (;;) {
        try {
          await awaitJob(client, { job: workflowId });
          break;
        } catch (error) {
          if ((error as Error).name !== 'WorkflowNotFoundError') throw error;
        }
      }
    }
    const allDone = performance.now() - t0;
    const history = await client.workflow.getHandle(`temporal-sys-scheduler:${bid}`).fetchHistory();
    const events = history.events?.length ?? 0;
    say(
      `backfill of ${backfillMinutes} times: all started in ${seconds(allStarted)} ` +
        `(${(backfillMinutes / (allStarted / 1000)).toFixed(1)} runs/s), all completed in ${seconds(allDone)}`,
    );
    say(
      `the scheduler's history: ${events} events for ${backfillMinutes + 0} runs (${(events / backfillMinutes).toFixed(2)} per run)`,
    );
    await deleteSchedule(client, { scheduleId: bid });
  } finally {
    await worker.stop();
    await env.teardown();
    await emulator.close();
    await rm(resultStoreDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
