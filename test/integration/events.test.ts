/**
 * Events over HTTP end to end: the real worker (runWorker, configured from the environment as
 * `npm run worker` is) with the gateway beside it taking `POST /events/{automation}`, a registered
 * automation turning each event into a job, the emulator over HTTP counting submissions, the
 * shared dev server. 500 events over HTTP, duplicates, forged, stale and replayed ones mixed in,
 * give exactly one job per distinct valid event; the refused ones give none.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineAutomation } from '../../activities/automation';
import { automationWorkflowId } from '../../client/automations';
import { eventHeaders } from '../../client/event-signature';
import type { AutomationState } from '../../contracts/automation-input';
import { type Emulator, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { temporalEventSink } from '../../worker/event-sink';
import { nativeEventSource } from '../../worker/event-sources';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { createLogger } from '../../worker/logger';
import { automationStateQuery } from '../../workflows/automation/automation-definitions';
import { historyText } from '../support/history';
import {
  describeWorkflowWait,
  eventually,
  FAST_POLLING,
  quietTemporalRuntime,
  runWorkerUntilReady,
  serviceEnv,
} from '../support/integration';
import { createTempDir, removeTempDir } from '../support/temp-dir';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const KEYS = 10;
const VALID = 100;

interface Request {
  kind: 'valid' | 'duplicate' | 'replica-duplicate' | 'forged' | 'stale' | 'replay';
  id: string;
  body: string;
  headers: Record<string, string>;
  /** The replica gateway (its own replay cache) rather than the worker's. */
  replica?: boolean;
}

/** A fixed shuffle (a seeded LCG), so a failing order can be run again. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

describe('events over HTTP into an automation (dev server, emulator, real worker)', () => {
  const apiKey = `sk-it-${randomUUID()}`;
  const eventSecret = secret();
  const taskQueue = uniqueTaskQueue('events');
  const automation = `ingest-${randomUUID().slice(0, 8)}`;
  const resultDir = createTempDir('events');
  const controller = new AbortController();
  let emulator: Emulator;
  let env: TestWorkflowEnvironment;
  let endpointId: string;
  let gatewayUrl: string;
  let replica: WebhookGateway;
  let running: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    quietTemporalRuntime();
    // Service time as real time: finished jobs stay listed (their results are kept 30 minutes).
    emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
    endpointId = emulator.control.createEndpoint(apiKey, {
      name: `events-${randomUUID().slice(0, 8)}`,
      templateId: 'scripted',
      workersMin: 0,
      workersMax: 50,
    }).id;
    env = await devServerEnv();
    const config = loadWorkerConfig({
      ...serviceEnv(emulator, apiKey),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      RESULT_STORE_DIR: resultDir,
      WORKER_SHUTDOWN_GRACE_MS: '500',
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_PORT: '0',
      EVENT_SIGNING_SECRETS: eventSecret,
    });
    const started = await runWorkerUntilReady(config, {
      signal: controller.signal,
      logger: createLogger({ level: 'error', secrets: [apiKey, eventSecret] }),
      publicUrlFromGateway: true,
      automations: [
        defineAutomation({
          name: automation,
          concurrency: VALID / KEYS,
          // One job per event, its id in the input: the emulator's jobs say which events ran.
          run: (events) => ({
            kind: 'job',
            input: {
              endpointId,
              request: { input: { sleepMs: 200, output: { eventId: events[0]?.id } } },
              polling: FAST_POLLING,
            },
          }),
        }),
      ],
    });
    running = started.running;
    const url = started.info.gatewayUrl;
    if (!url) throw new Error('no gateway beside the worker');
    gatewayUrl = url;
    // A second gateway, as a replica behind a load balancer would be: a replay cache of its own.
    replica = await startWebhookGateway({
      client: env.client,
      secrets: [randomBytes(32).toString('base64url')],
      logger: createLogger({ level: 'error' }),
      events: {
        automations: [automation],
        sources: [nativeEventSource([eventSecret], [automation])],
        sink: temporalEventSink(env.client, { taskQueue }),
      },
    });
  });

  afterAll(async () => {
    await replica?.close();
    controller.abort();
    try {
      await running;
    } finally {
      await env?.teardown();
      await emulator?.close();
      removeTempDir(resultDir);
    }
  });

  async function send(requests: Request[]): Promise<Map<Request, { status: number; body: string }>> {
    const pools = {
      main: new Pool(gatewayUrl, { connections: 16 }),
      replica: new Pool(replica.url, { connections: 4 }),
    };
    const answers = new Map<Request, { status: number; body: string }>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < requests.length) {
          const request = requests[next++] as Request;
          const pool = request.replica ? pools.replica : pools.main;
          const response = await pool.request({
            method: 'POST',
            path: `/events/${automation}`,
            headers: { 'content-type': 'application/json', ...request.headers },
            body: request.body,
          });
          answers.set(request, { status: response.statusCode, body: await response.body.text() });
        }
      }),
    );
    await pools.main.close();
    await pools.replica.close();
    return answers;
  }

  const signed = (id: string, key: string, options: { secret?: string; at?: Date } = {}) => {
    const body = JSON.stringify({ key, type: 'upload', data: { n: id } });
    return { id, body, headers: { ...eventHeaders(options.secret ?? eventSecret, id, body, options.at) } };
  };

  it('500 events over HTTP give exactly one job per distinct valid event, none for the rest', async () => {
    const keyOf = (i: number) => `user-${i % KEYS}`;
    const valid: Request[] = Array.from({ length: VALID }, (_, i) => ({
      kind: 'valid',
      ...signed(`evt-${i}`, keyOf(i)),
    }));
    // Forged: signed with a secret the gateway does not know, on a key nothing valid uses.
    const forged: Request[] = Array.from({ length: 80 }, (_, i) => ({
      kind: 'forged',
      ...signed(`forged-${i}`, 'forged-only', { secret: secret() }),
    }));
    // Stale: correctly signed an hour ago (the tolerance is 300 s), on their own key too.
    const stale: Request[] = Array.from({ length: 40 }, (_, i) => ({
      kind: 'stale',
      ...signed(`stale-${i}`, 'stale-only', { at: new Date(Date.now() - 3_600_000) }),
    }));
    // Phase 1: the originals with the refused ones mixed in.
    const first = shuffled([...valid, ...forged, ...stale], 13);
    const firstAnswers = await send(first);

    // Phase 2: the same events again: re-signed (a sender's retry), replayed byte for byte (a
    // third party), and through the replica, whose cache has not seen them.
    const duplicates: Request[] = [...valid, ...valid.slice(0, 50)].map((v) => ({
      ...signed(v.id, keyOf(Number(v.id.slice(4)))),
      kind: 'duplicate' as const,
    }));
    const replays: Request[] = valid.map((v) => ({ ...v, kind: 'replay' as const }));
    const viaReplica: Request[] = valid.slice(0, 30).map((v) => ({
      ...signed(v.id, keyOf(Number(v.id.slice(4)))),
      kind: 'replica-duplicate' as const,
      replica: true,
    }));
    const second = shuffled([...duplicates, ...replays, ...viaReplica], 29);
    const secondAnswers = await send(second);
    expect(first.length + second.length).toBe(500);

    const answers = new Map([...firstAnswers, ...secondAnswers]);
    const byKind = (kind: Request['kind']) => [...answers].filter(([request]) => request.kind === kind);
    for (const [, answer] of byKind('valid'))
      expect(answer).toEqual({ status: 200, body: '{"received":true}' });
    for (const kind of ['forged', 'stale'] as const) {
      for (const [, answer] of byKind(kind)) expect(answer.status).toBe(401);
    }
    for (const kind of ['duplicate', 'replay'] as const) {
      for (const [, answer] of byKind(kind))
        expect(answer).toEqual({ status: 200, body: '{"received":true,"duplicate":true}' });
    }
    // The replica has not seen them: it signals, and the automation's own de-duplication drops them.
    for (const [, answer] of byKind('replica-duplicate')) expect(answer.status).toBe(200);

    // Every signal handled: the 100 originals and the replica's 30, which are duplicates.
    let seen = 'no state yet';
    const states = await eventually(async () => {
      const all = await Promise.all(
        Array.from({ length: KEYS }, (_, k) =>
          env.client.workflow
            .getHandle(automationWorkflowId(automation, `user-${k}`))
            .query(automationStateQuery)
            .catch(() => undefined),
        ),
      );
      if (all.some((state) => !state)) return undefined;
      const states = all as AutomationState[];
      const sum = (pick: (state: AutomationState) => number) => states.reduce((n, s) => n + pick(s), 0);
      seen = JSON.stringify({
        received: sum((s) => s.counters.received),
        runsStarted: sum((s) => s.counters.runsStarted),
        runsFailed: sum((s) => s.counters.runsFailed),
        duplicates: sum((s) => s.counters.duplicates),
        groupsSkipped: sum((s) => s.counters.groupsSkipped),
        pending: sum((s) => s.pending),
        ready: sum((s) => s.ready),
        starting: sum((s) => s.starting),
        inFlight: sum((s) => s.inFlight),
        submissions: emulator.control.submissions(endpointId),
      });
      return sum((s) => s.counters.received) === VALID + 30 && sum((s) => s.counters.runsStarted) === VALID
        ? states
        : undefined;
    }, 240_000).catch(async (error: Error) => {
      // What each key's workflow still waits on (a run being planned or started shows here).
      const waits = await Promise.all(
        Array.from({ length: KEYS }, (_, k) =>
          describeWorkflowWait(env.client, automationWorkflowId(automation, `user-${k}`)),
        ),
      );
      throw new Error(`${error.message}: ${seen}; waiting on: ${waits.join(' | ')}`);
    });
    expect(states.reduce((n, s) => n + s.counters.duplicates, 0)).toBe(30);

    // At the emulator: every valid event's job submitted once, nothing else.
    await eventually(() => emulator.control.submissions(endpointId) >= VALID, 120_000);
    const ran = emulator.control
      .jobs(endpointId)
      .map((job) => (job.input as { output?: { eventId?: string } } | undefined)?.output?.eventId);
    expect(ran).toHaveLength(VALID);
    expect(new Set(ran)).toEqual(new Set(valid.map((v) => v.id)));
    expect(emulator.control.submissions(endpointId)).toBe(VALID);

    // The refused events never reached Temporal: no automation was started for their keys.
    for (const key of ['forged-only', 'stale-only']) {
      await expect(
        env.client.workflow.getHandle(automationWorkflowId(automation, key)).describe(),
      ).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }

    // History never holds the signing secret nor a signature: the gateway passes the event on,
    // never its headers. Searched decoded (historyText): payloads are bytes, which a plain
    // JSON.stringify shows as base64 or numbers, hiding every string. A failure prints no value.
    const signatures = [...answers.keys()].flatMap((request) =>
      (request.headers['webhook-signature'] ?? '').split(' ').filter((entry) => entry.startsWith('v1,')),
    );
    expect(signatures).toHaveLength(500);
    const forbidden = [
      eventSecret,
      eventSecret.slice('whsec_'.length),
      ...signatures,
      ...signatures.map((entry) => entry.slice('v1,'.length)),
    ];
    for (let k = 0; k < KEYS; k++) {
      const history = await env.client.workflow
        .getHandle(automationWorkflowId(automation, `user-${k}`))
        .fetchHistory();
      const text = historyText(history);
      // The same search finds what belongs there: this key's first event id, inside a signal's payload.
      expect(text).toContain(`"evt-${k}"`);
      const found = forbidden.filter((value) => text.includes(value)).length;
      expect(found, `secrets or signatures in the history of user-${k}`).toBe(0);
    }
  }, 360_000);
});
