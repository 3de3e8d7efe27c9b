/**
 * `npm run example:pipeline`: a scheduled fan-out and an event-driven automation, chained, on the
 * embedded default (the local Temporal dev server, the service emulator, one worker with its
 * webhook gateway), all started here and stopped at the end.
 *
 * 1. A nightly schedule (02:00 in Europe/Paris) of a batch that fans out 20 render jobs. The
 *    example does not wait for the night: it triggers the schedule now, as an operator would.
 * 2. When the batch ends, its `emitOnEnd` sends an event to the `nightly-report` automation, which
 *    runs one job that writes the night's report (the chaining of pipelines).
 * 3. The `orders` automation batches incoming events: signed events arrive over HTTP at the
 *    gateway's `POST /events/orders` (one of them sent twice, one forged), and every group of up
 *    to 5 events (or 2 s after the first) becomes one batch of jobs.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import { automationWorkflowId } from '../contracts/automation-input';
import { startEmulator } from '../emulator';
import {
  awaitBatch,
  defineAutomation,
  deleteSchedule,
  describeSchedule,
  eventHeaders,
  scheduleBatch,
  triggerSchedule,
} from '../index';
import { ensureServers } from '../scripts/servers';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { automationStateQuery } from '../workflows/automation-definitions';
import { searchAttributeKeys } from '../workflows/search-attributes';

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
  const { temporalCli } = await ensureServers(say);
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error'],
    },
  });
  // One service minute per real second: the renders "take" minutes in a few seconds.
  const apiKey = randomBytes(24).toString('base64url');
  const emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 60 });
  const workdir = path.join(os.tmpdir(), `durable-serverless-pipeline-${process.pid}`);
  const eventSecret = `whsec_${randomBytes(32).toString('base64')}`;
  const stop = new AbortController();
  let worker: Promise<void> | undefined;
  try {
    const endpointId = emulator.control.createEndpoint(apiKey, {
      name: 'pipeline-renders',
      templateId: 'scripted',
      workersMax: 10,
      flashBootType: 'FLASHBOOT',
    }).id;
    const render = (scene: string, frames: number) => ({
      input: { sleepMs: 30_000, output: { scene, frames, rendered: true } },
    });

    // What to run for the events: code registered on the worker, called in an activity.
    const nightlyReport = defineAutomation({
      name: 'nightly-report',
      run: (events) => ({
        kind: 'job',
        input: {
          endpointId,
          request: {
            input: { sleepMs: 5_000, output: { report: events.map((e) => e.type), night: 'done' } },
          },
        },
      }),
    });
    const orders = defineAutomation({
      name: 'orders',
      batch: { maxEvents: 5, maxWait: '2 seconds' },
      run: (events) => ({
        kind: 'batch',
        input: {
          endpointId,
          items: { inline: events.map((event) => render(String(event.id), 24)) },
        },
      }),
    });

    const config = loadWorkerConfig(
      {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: 'durable-serverless-pipeline',
        SERVERLESS_API_KEY: apiKey,
        SERVERLESS_API_URL: emulator.apiUrl,
        SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
        SERVERLESS_REST_URL: emulator.restUrl,
        WEBHOOK_PORT: '0',
        WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
        EVENT_SIGNING_SECRETS: eventSecret,
        RESULT_STORE_DIR: path.join(workdir, 'results'),
        LOG_LEVEL: 'warn',
      },
      workdir,
    );
    let gatewayUrl = '';
    const ready = new Promise<void>((resolve) => {
      worker = runWorker(config, {
        signal: stop.signal,
        logger: createLogger({ level: 'warn', secrets: [apiKey, eventSecret] }),
        publicUrlFromGateway: true,
        automations: [nightlyReport, orders],
        onReady: (info) => {
          gatewayUrl = info.gatewayUrl ?? '';
          resolve();
        },
      });
    });
    await Promise.race([ready, worker]);
    const client = env.client;
    const taskQueue = config.temporal.taskQueue;
    say(`dev server ${env.address}, emulator ${emulator.apiUrl}, gateway ${gatewayUrl}`);

    // 1. The nightly fan-out, kept by a Temporal Schedule; its end is an event (chaining).
    const scheduleId = `nightly-renders-${process.pid}`;
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
        taskQueue,
      },
    );
    const next = (await describeSchedule(client, scheduleId)).nextActionTimes[0];
    say(`1. schedule ${scheduleId}: next run ${next?.toISOString()} (02:00 Europe/Paris); triggering it now`);
    await triggerSchedule(client, scheduleId);
    const runId = await until('the scheduled run', async () => {
      const run = (await describeSchedule(client, scheduleId)).recentRuns[0];
      return run?.workflowId;
    });
    const nightly = await awaitBatch(client, runId);
    say(
      `1. scheduled batch ${runId}: ${nightly.counts.completed} of ${nightly.total} renders completed, ` +
        `${nightly.submissions} submissions`,
    );

    // 2. The batch's end started the report automation, which ran one job.
    const report = client.workflow.getHandle(automationWorkflowId('nightly-report', 'renders'));
    const reported = await until('the nightly report', async () => {
      const state = await report.query(automationStateQuery);
      return state.counters.runsCompleted >= 1 ? state : undefined;
    });
    say(
      `2. chained: the batch's end event started nightly-report: ${reported.counters.received} event, ` +
        `${reported.counters.runsCompleted} job completed`,
    );

    // 3. Events over HTTP: 12 orders signed with the gateway's secret, one resent, one forged.
    const post = async (id: string, key: string, secret = eventSecret) => {
      const body = JSON.stringify({ key, type: 'order.paid', data: { order: id } });
      const answer = await fetch(`${gatewayUrl}/events/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...eventHeaders(secret, id, body) },
        body,
      });
      return answer.status;
    };
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push(await post(`order-${i}`, 'shop-1'));
    statuses.push(await post('order-3', 'shop-1'));
    statuses.push(await post('order-99', 'shop-1', `whsec_${randomBytes(32).toString('base64')}`));
    say(
      `3. 14 events posted: answers ${statuses.join(' ')} (the resent one accepted once, the forged one 401)`,
    );
    const shop = client.workflow.getHandle(automationWorkflowId('orders', 'shop-1'));
    const grouped = await until('the order batches', async () => {
      const state = await shop.query(automationStateQuery);
      const c = state.counters;
      // A group goes from pending to ready when its window closes, then through starting (its run
      // planned and started) to in flight: every stage counts.
      return c.received >= 12 &&
        state.pending === 0 &&
        state.ready === 0 &&
        state.starting === 0 &&
        state.inFlight === 0 &&
        c.runsCompleted === c.runsStarted
        ? state
        : undefined;
    });
    const jobs = emulator.control.jobs(endpointId).length;
    say(
      `3. orders: ${grouped.counters.received} distinct events in ${grouped.counters.runsCompleted} batches ` +
        `of up to 5; the service ran ${jobs} jobs in all (20 renders, 1 report, 12 orders)`,
    );
    await deleteSchedule(client, scheduleId);
    say('done');
  } finally {
    stop.abort();
    await worker?.catch(() => undefined);
    await emulator.close();
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error('[pipeline] failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
