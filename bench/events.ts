/**
 * Events over HTTP: what the gateway's `POST /events/{automation}` takes on this machine, and what
 * an event costs downstream. Prints figures; asserts nothing.
 *
 *   npm run bench:events [-- --events 5000] [--concurrency 64] [--keys 100] [--latency-events 200] [--rate 20]
 *                        [--history-events 2000]
 *
 * 1. Ingress alone: signed events through real HTTP on loopback to a gateway whose sink does
 *    nothing: the cost of HTTP, the signature check, the replay cache and the body schema.
 * 2. Ingress to Temporal: the same through the real sink (sendEvent: signalWithStart of the
 *    automation's workflow) on a dev server of its own, spread over --keys keys.
 * 3. Event to job: the real worker (runWorker, in this process) with the gateway beside it and an
 *    automation turning each event into a job on the emulator (time scale 1); events sent at about
 *    --rate a second (20) over 10 keys; the latency from sending an event to the emulator recording its
 *    job's /run (the job's submittedAt).
 * 4. History: --history-events events (sendEvent) to one key of an automation batching them 100 to
 *    a job; the automation's history events over all its runs (continue-as-new after 1,000 events
 *    by default), per 1,000 events; and the process's memory (worker, gateway, emulator together).
 *
 * The load generator runs in the same process (2 cores shared): bodies are signed before the clock
 * starts, so the figure is the gateway's, not the signer's.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Pool } from 'undici';
import { defineAutomation } from '../activities/automation';
import { automationWorkflowId, sendEvent } from '../client/automations';
import { eventHeaders } from '../client/event-signature';
import type { AutomationState } from '../contracts/automation-input';
import { startEmulator } from '../emulator';
import type { EventSink } from '../worker/event-ingress';
import { temporalEventSink } from '../worker/event-sink';
import { nativeEventSource } from '../worker/event-sources';
import { startWebhookGateway, type WebhookGateway } from '../worker/gateway';
import { createLogger } from '../worker/logger';
import { automationStateQuery } from '../workflows/automation/automation-definitions';
import {
  mb,
  median,
  numberArg,
  quietRuntime,
  say,
  sleep,
  startDevServer,
  startInProcessWorker,
  until,
} from './support';

const EVENTS = numberArg('events', 5000);
const CONCURRENCY = numberArg('concurrency', 64);
const KEYS = numberArg('keys', 100);
const LATENCY_EVENTS = numberArg('latency-events', 200);
const HISTORY_EVENTS = numberArg('history-events', 2000);
/** Events a second sent in part 3. */
const RATE = numberArg('rate', 20);
/** `--from 3` skips parts 1 and 2, `--from 4` part 3 too. */
const FROM = numberArg('from', 1);
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

interface Signed {
  path: string;
  body: string;
  headers: Record<string, string>;
}

function signedEvents(count: number, automation: string, prefix: string): Signed[] {
  return Array.from({ length: count }, (_, i) => {
    const body = JSON.stringify({ key: `key-${i % KEYS}`, type: 'bench', data: { i, note: 'x'.repeat(64) } });
    return {
      path: `/events/${automation}`,
      body,
      headers: { 'content-type': 'application/json', ...eventHeaders(SECRET, `${prefix}-${i}`, body) },
    };
  });
}

/** Posts every event, CONCURRENCY at a time; the rate of 200s and each answer's latency. */
async function post(
  url: string,
  events: Signed[],
): Promise<{ perSecond: number; latencies: number[]; non200: number }> {
  const pool = new Pool(url, { connections: CONCURRENCY, pipelining: 1 });
  const latencies: number[] = [];
  let next = 0;
  let non200 = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < events.length) {
        const event = events[next++] as Signed;
        const at = performance.now();
        const response = await pool.request({ method: 'POST', ...event });
        await response.body.dump();
        latencies.push(performance.now() - at);
        if (response.statusCode !== 200) non200 += 1;
      }
    }),
  );
  const elapsed = performance.now() - started;
  await pool.close();
  return { perSecond: ((events.length - non200) / elapsed) * 1000, latencies, non200 };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const ms = (value: number) => `${value.toFixed(1)} ms`;

async function gatewayWith(
  sink: EventSink,
  client: TestWorkflowEnvironment['client'],
): Promise<WebhookGateway> {
  return startWebhookGateway({
    client,
    secrets: [randomBytes(32).toString('base64url')],
    logger: createLogger({ level: 'error' }),
    events: {
      automations: ['bench-events', 'latency'],
      sources: [nativeEventSource([SECRET], ['bench-events', 'latency'])],
      sink,
    },
  });
}

async function main(): Promise<void> {
  quietRuntime();
  say(`events over HTTP: ${EVENTS} events, ${CONCURRENCY} connections, ${KEYS} keys`);
  const env = await startDevServer();
  try {
    if (FROM <= 2) await ingress(env);
    // A worker of its own for each: run together in one worker, part 4 crashed the process (see the note).
    if (FROM <= 3) await downstream(env, 3);
    await downstream(env, 4);
  } finally {
    await env.teardown();
  }
}

/** Parts 1 and 2: the gateway alone, then in front of Temporal. */
async function ingress(env: TestWorkflowEnvironment): Promise<void> {
  {
    // 1. Ingress alone.
    let delivered = 0;
    const alone = await gatewayWith(async () => {
      delivered += 1;
    }, env.client);
    // A warm-up round, then the measured one (JIT, sockets).
    await post(alone.url, signedEvents(Math.min(1000, EVENTS), 'bench', 'warm'));
    const a = await post(alone.url, signedEvents(EVENTS, 'bench', 'alone'));
    await alone.close();
    say(
      `1. ingress alone (no-op sink): ${a.perSecond.toFixed(0)} events/s accepted; answer median ${ms(median(a.latencies))}, p99 ${ms(percentile(a.latencies, 99))}; non-200: ${a.non200}; delivered ${delivered}`,
    );

    // 2. Ingress to Temporal (signalWithStart on the dev server; no worker needed to take a signal).
    const client = env.client;
    const toTemporal = await gatewayWith(
      temporalEventSink(client, { taskQueue: 'bench-events-no-worker' }),
      client,
    );
    await post(toTemporal.url, signedEvents(Math.min(500, EVENTS), 'benchwarm', 'warm2'));
    const b = await post(toTemporal.url, signedEvents(EVENTS, 'bench', 'temporal'));
    await toTemporal.close();
    say(
      `2. ingress to Temporal (signalWithStart, ${KEYS} keys): ${b.perSecond.toFixed(0)} events/s accepted; answer median ${ms(median(b.latencies))}, p99 ${ms(percentile(b.latencies, 99))}; non-200: ${b.non200}`,
    );
  }
}

/** Parts 3 and 4: the real worker with automations, the gateway beside it, the emulator. */
async function downstream(env: TestWorkflowEnvironment, part: 3 | 4): Promise<void> {
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
  const endpointId = emulator.control.createEndpoint(apiKey, {
    name: 'bench-events',
    templateId: 'scripted',
    workersMin: 20,
    workersMax: 50,
  }).id;
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-events-'));
  const taskQueue = `bench-events-${randomUUID()}`;
  const job = (eventId: string | undefined) => ({
    kind: 'job' as const,
    input: {
      endpointId,
      request: { input: { sleepMs: 100, output: { eventId } } },
      polling: { initialInterval: 100, maxInterval: 250, backoffCoefficient: 1.5 },
    },
  });
  let gatewayUrl = '';
  // 3. Event to job, paced at ~RATE events/s over 10 keys.
  const latency = async () => {
    const sentAt = new Map<string, number>();
    const events = Array.from({ length: LATENCY_EVENTS }, (_, i) => {
      const id = `lat-${i}`;
      const body = JSON.stringify({ key: `k-${i % 10}`, data: { i } });
      return { id, body };
    });
    const pool = new Pool(gatewayUrl, { connections: 16 });
    const sends: Promise<unknown>[] = [];
    for (const event of events) {
      const headers = { 'content-type': 'application/json', ...eventHeaders(SECRET, event.id, event.body) };
      sentAt.set(event.id, Date.now());
      sends.push(
        pool
          .request({ method: 'POST', path: '/events/latency', headers, body: event.body })
          .then((r) => r.body.dump()),
      );
      await sleep(1000 / RATE);
    }
    await Promise.all(sends);
    await pool.close();
    await until(() => emulator.control.submissions(endpointId) >= LATENCY_EVENTS, 300_000);
    const latencies = emulator.control.jobs(endpointId).flatMap((j) => {
      const id = (j.input as { output?: { eventId?: string } } | undefined)?.output?.eventId;
      const at = id ? sentAt.get(id) : undefined;
      return at === undefined ? [] : [j.submittedAt - at];
    });
    say(
      `3. event to job submission (${latencies.length} of ${LATENCY_EVENTS} events, ~${RATE}/s, 10 keys, one job each): median ${ms(median(latencies))}, p95 ${ms(percentile(latencies, 95))}, max ${ms(Math.max(...latencies))}`,
    );
  };
  const memoryBefore = process.memoryUsage();
  const worker = await startInProcessWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    resultStoreDir: resultDir,
    webhooks: true,
    env: { EVENT_SIGNING_SECRETS: SECRET },
    secrets: [SECRET],
    run: {
      automations: [
        defineAutomation({ name: 'latency', concurrency: 100, run: (events) => job(events[0]?.id) }),
        defineAutomation({
          name: 'history',
          concurrency: 5,
          batch: { maxEvents: 100, maxWait: 1_000 },
          run: (events) => job(events[0]?.id),
        }),
      ],
    },
  });
  gatewayUrl = worker.info.gatewayUrl ?? '';
  try {
    if (part === 3) {
      await latency();
      return;
    }
    // 4. History per 1,000 events, with continue-as-new.
    const client = env.client;
    const submittedBefore = emulator.control.submissions(endpointId);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < HISTORY_EVENTS) {
          const i = next++;
          await sendEvent(
            client,
            { id: `h-${i}`, data: { i } },
            { automation: 'history', key: 'one-key', taskQueue },
          );
        }
      }),
    );
    const sendSeconds = (performance.now() - started) / 1000;
    const workflowId = automationWorkflowId('history', 'one-key');
    const expectedJobs = Math.ceil(HISTORY_EVENTS / 100);
    await until(() => emulator.control.submissions(endpointId) - submittedBefore >= expectedJobs, 300_000);
    // A run just continued-as-new answers queries only once it has read its definition: ask again.
    let state: AutomationState | undefined;
    while (!state) {
      state = await client.workflow
        .getHandle(workflowId)
        .query(automationStateQuery)
        .catch(() => undefined);
      if (!state) await sleep(100);
    }
    let historyEvents = 0;
    let runs = 0;
    for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const history = await client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
      historyEvents += history.events?.length ?? 0;
      runs += 1;
    }
    const memory = process.memoryUsage();
    say(
      `4. automation history: ${HISTORY_EVENTS} events (${(HISTORY_EVENTS / sendSeconds).toFixed(0)}/s by sendEvent) to one key, batches of 100: ${state.counters.runsStarted} job runs, ${runs} workflow runs (continue-as-new), ${historyEvents} history events = ${((historyEvents / HISTORY_EVENTS) * 1000).toFixed(0)} per 1,000 events`,
    );
    say(
      `   memory of this process (worker + gateway + emulator + load): RSS ${mb(memoryBefore.rss)} -> ${mb(memory.rss)}, heap ${mb(memoryBefore.heapUsed)} -> ${mb(memory.heapUsed)}`,
    );
  } finally {
    await worker.stop();
    await emulator.close();
    rmSync(resultDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
