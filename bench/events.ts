/**
 * Events over HTTP: what the gateway's `POST /events/{automation}` takes on this machine, and what
 * an event costs downstream. Prints figures; asserts nothing.
 *
 *   npm run bench:events [-- --events 5000] [--concurrency 64] [--keys 100]
 *
 * 1. Ingress alone: signed events through real HTTP on loopback to a gateway whose sink does
 *    nothing: the cost of HTTP, the signature check, the replay cache and the body schema.
 * 2. Ingress to Temporal: the same through the real sink (sendEvent: signalWithStart of the
 *    automation's workflow) on a dev server of its own, spread over --keys keys.
 *
 * The load generator runs in the same process (2 cores shared): bodies are signed before the clock
 * starts, so the figure is the gateway's, not the signer's.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Pool } from 'undici';
import { eventHeaders } from '../client/event-signature';
import type { EventSink } from '../worker/event-ingress';
import { temporalEventSink } from '../worker/event-sink';
import { startWebhookGateway, type WebhookGateway } from '../worker/gateway';
import { createLogger } from '../worker/logger';
import { median, numberArg, quietRuntime, say, startDevServer } from './support';

const EVENTS = numberArg('events', 5000);
const CONCURRENCY = numberArg('concurrency', 64);
const KEYS = numberArg('keys', 100);
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

async function gatewayWith(sink: EventSink, client: Client): Promise<WebhookGateway> {
  return startWebhookGateway({
    client,
    secrets: [randomBytes(32).toString('base64url')],
    logger: createLogger({ level: 'error' }),
    events: { secrets: [SECRET], sink },
  });
}

async function main(): Promise<void> {
  quietRuntime();
  say(`events over HTTP: ${EVENTS} events, ${CONCURRENCY} connections, ${KEYS} keys`);
  const env = await startDevServer();
  try {
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
    const client: Client = env.client;
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
  } finally {
    await env.teardown();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
