/**
 * Event sources end to end: the real worker (runWorker, configured from the environment) with the
 * gateway beside it, a GitHub source from EVENT_SOURCES and a Stripe and a bearer source from the
 * automations module's defineEventSource, automations turning each event into a job on the
 * emulator, the shared dev server. Events signed by each sender's own library in its own body
 * shape (a Stripe thin event among them) start exactly the expected jobs; forged, stale, replayed,
 * wrong-source, unmapped, not-JSON, oversized and unknown-automation requests start nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineAutomation } from '../../activities/automation';
import { automationWorkflowId } from '../../client/automations';
import { runCli } from '../../client/cli';
import { type Emulator, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { temporalEventSink } from '../../worker/event-sink';
import { defineEventSource } from '../../worker/event-sources';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { createLogger } from '../../worker/logger';
import { automationStateQuery } from '../../workflows/automation/automation-definitions';
import {
  eventually,
  FAST_POLLING,
  quietTemporalRuntime,
  runWorkerUntilReady,
  serviceEnv,
} from '../support/integration';
import { createTempDir, removeTempDir } from '../support/temp-dir';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';

describe('event sources into automations (dev server, emulator, real worker)', () => {
  const apiKey = `sk-it-${randomUUID()}`;
  const suffix = randomUUID().slice(0, 8);
  const deploys = `deploys-${suffix}`;
  const billing = `billing-${suffix}`;
  const meters = `meters-${suffix}`;
  const githubSecret = randomBytes(24).toString('hex');
  const stripeSecret = `whsec_${randomBytes(24).toString('hex')}`;
  const teamToken = randomBytes(32).toString('base64url');
  const taskQueue = uniqueTaskQueue('event-sources');
  const dir = createTempDir('event-sources');
  const controller = new AbortController();
  let emulator: Emulator;
  let env: TestWorkflowEnvironment;
  let endpointId: string;
  let gatewayUrl = '';
  let replica: WebhookGateway;
  let running: Promise<void> = Promise.resolve();

  const stripe = defineEventSource({
    name: 'stripe',
    scheme: 'stripe',
    secrets: [stripeSecret],
    // Snapshot events name their object in data.object; thin events (v2.core.event) in related_object.
    automations: {
      [billing]: { key: 'body.data.object.customer' },
      [meters]: { key: 'body.related_object.id' },
    },
  });
  const team = defineEventSource({
    name: 'team',
    scheme: 'bearer',
    secrets: [teamToken],
    automations: { [deploys]: { key: 'body.service', id: 'body.deployId', type: 'body.kind' } },
  });
  // One job per event, its id in the input: the emulator's jobs say which events ran.
  const jobPerEvent = (name: string) =>
    defineAutomation({
      name,
      concurrency: 10,
      run: (events) => ({
        kind: 'job',
        input: {
          endpointId,
          request: { input: { sleepMs: 10, output: { eventId: events[0]?.id } } },
          polling: FAST_POLLING,
        },
      }),
    });

  beforeAll(async () => {
    quietTemporalRuntime();
    emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
    endpointId = emulator.control.createEndpoint(apiKey, {
      name: `sources-${suffix}`,
      templateId: 'scripted',
      workersMin: 0,
      workersMax: 10,
    }).id;
    env = await devServerEnv();
    const config = loadWorkerConfig({
      ...serviceEnv(emulator, apiKey),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      RESULT_STORE_DIR: dir,
      WORKER_SHUTDOWN_GRACE_MS: '500',
      WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
      WEBHOOK_PORT: '0',
      GITHUB_WEBHOOK_SECRETS: githubSecret,
      EVENT_SOURCES: JSON.stringify([
        {
          name: 'github',
          scheme: 'github',
          secretsEnv: 'GITHUB_WEBHOOK_SECRETS',
          automations: { [deploys]: { key: 'body.repository.full_name', data: 'body.after' } },
        },
      ]),
    });
    const automations = [jobPerEvent(deploys), jobPerEvent(billing), jobPerEvent(meters)];
    const started = await runWorkerUntilReady(config, {
      signal: controller.signal,
      logger: createLogger({ level: 'error', secrets: [apiKey, githubSecret, stripeSecret, teamToken] }),
      publicUrlFromGateway: true,
      automations,
      eventSources: [stripe, team],
    });
    running = started.running;
    const url = started.info.gatewayUrl;
    if (!url) throw new Error('no gateway beside the worker');
    gatewayUrl = url;
    // A second replica with a replay guard of its own: a replay through it is dropped by the automation.
    replica = await startWebhookGateway({
      client: env.client,
      secrets: [randomBytes(32).toString('base64url')],
      logger: createLogger({ level: 'error' }),
      events: {
        automations: automations.map((automation) => automation.name),
        sources: [stripe, team],
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
      removeTempDir(dir);
    }
  });

  async function post(base: string, pathAndQuery: string, body: string, headers: Record<string, string>) {
    const answer = await request(`${base}${pathAndQuery}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    return { status: answer.statusCode, body: await answer.body.text() };
  }

  async function cli(...args: string[]) {
    let out = '';
    const code = await runCli(args, { out: (text) => (out += text), err: () => undefined }, async () => {
      throw new Error('the CLI must not connect to Temporal with --to');
    });
    return { code, out };
  }

  it('starts exactly one job per valid event (a thin one too), none for forged, stale, replayed, wrong-source, unmapped, not-JSON or oversized ones', async () => {
    const { sign } = await import('@octokit/webhooks-methods');
    const { webhooks } = (await import('stripe')).default;
    const push = (repo: string, after: string) =>
      JSON.stringify({ ref: 'refs/heads/main', after, repository: { full_name: repo } });
    const github = async (body: string, delivery: string, secret = githubSecret) => ({
      'x-hub-signature-256': await sign(secret, body),
      'x-github-event': 'push',
      'x-github-delivery': delivery,
    });
    const invoice = (id: string, customer: string) =>
      JSON.stringify({ id, type: 'invoice.paid', data: { object: { customer } } });
    const stripeHeader = (body: string, timestamp = Math.floor(Date.now() / 1000)) => ({
      'stripe-signature': webhooks.generateTestHeaderString({
        payload: body,
        secret: stripeSecret,
        timestamp,
      }),
    });
    const at = (automation: string, source: string) => `/events/${automation}?source=${source}`;

    const thin = JSON.stringify({
      id: `evt_${suffix}_thin`,
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      livemode: false,
      created: new Date().toISOString(),
      related_object: { id: 'mtr_1', type: 'billing.meter', url: '/v1/billing/meters/mtr_1' },
    });
    // GitHub's largest push over the 1 MiB limit: refused with a 413 the sender reads.
    const oversized = push('acme/api', 'x'.repeat(1024 * 1024 + 1024));
    const pushA = push('acme/api', 'sha-a');
    const pushB = push('acme/web', 'sha-b');
    const paid = invoice(`evt_${suffix}_1`, 'cus_1');
    const answers = {
      pushA: await post(gatewayUrl, at(deploys, 'github'), pushA, await github(pushA, `gh-${suffix}-a`)),
      pushB: await post(gatewayUrl, at(deploys, 'github'), pushB, await github(pushB, `gh-${suffix}-b`)),
      redelivered: await post(
        gatewayUrl,
        at(deploys, 'github'),
        pushA,
        await github(pushA, `gh-${suffix}-a`),
      ),
      forged: await post(
        gatewayUrl,
        at(deploys, 'github'),
        pushA,
        await github(pushA, `gh-${suffix}-forged`, 'not-the-secret-0123456789'),
      ),
      wrongSource: await post(
        gatewayUrl,
        at(billing, 'github'),
        pushA,
        await github(pushA, `gh-${suffix}-w`),
      ),
      unmapped: await post(
        gatewayUrl,
        at(deploys, 'github'),
        '{"zen":"Keep it logically awesome."}',
        await github('{"zen":"Keep it logically awesome."}', `gh-${suffix}-ping`),
      ),
      unknown: await post(
        gatewayUrl,
        at(`nothing-${suffix}`, 'github'),
        pushA,
        await github(pushA, `gh-${suffix}-u`),
      ),
      paid: await post(gatewayUrl, at(billing, 'stripe'), paid, stripeHeader(paid)),
      thin: await post(gatewayUrl, at(meters, 'stripe'), thin, stripeHeader(thin)),
      thinUnmapped: await post(gatewayUrl, at(billing, 'stripe'), thin, stripeHeader(thin)),
      notJson: await post(gatewayUrl, at(billing, 'stripe'), 'id=evt_2', stripeHeader('id=evt_2')),
      oversized: await post(
        gatewayUrl,
        at(deploys, 'github'),
        oversized,
        await github(oversized, `gh-${suffix}-big`),
      ),
      stale: await post(
        gatewayUrl,
        at(billing, 'stripe'),
        invoice(`evt_${suffix}_stale`, 'cus_2'),
        stripeHeader(invoice(`evt_${suffix}_stale`, 'cus_2'), Math.floor(Date.now() / 1000) - 3600),
      ),
      // Stripe's retry of the same event, re-signed, through another replica: its guard has not
      // seen it, so it is signalled; the automation's de-duplication drops it.
      replayedElsewhere: await post(replica.url, at(billing, 'stripe'), paid, stripeHeader(paid)),
    };
    expect(answers.pushA).toEqual({ status: 200, body: '{"received":true}' });
    expect(answers.pushB.status).toBe(200);
    expect(answers.redelivered).toEqual({ status: 200, body: '{"received":true,"duplicate":true}' });
    expect(answers.forged.status).toBe(401);
    expect(answers.wrongSource.status).toBe(403);
    expect(answers.unmapped.status).toBe(422);
    expect(JSON.parse(answers.unmapped.body).field).toBe('body.repository.full_name');
    expect(answers.unknown.status).toBe(404);
    expect(answers.paid.status).toBe(200);
    expect(answers.thin).toEqual({ status: 200, body: '{"received":true}' });
    expect(answers.thinUnmapped.status).toBe(422);
    expect(JSON.parse(answers.thinUnmapped.body).error).toContain('a Stripe thin event');
    expect(answers.notJson).toEqual({
      status: 400,
      body: '{"error":"body must be valid JSON","field":"body"}',
    });
    expect(answers.oversized.status).toBe(413);
    expect(answers.stale.status).toBe(401);
    expect(answers.replayedElsewhere).toEqual({ status: 200, body: '{"received":true}' });

    // The CLI signs as the team's bearer sender, with the sender's own body from a file.
    const deployFile = path.join(dir, 'deploy.json');
    writeFileSync(
      deployFile,
      JSON.stringify({ service: 'billing-api', kind: 'deployed', deployId: `dep-${suffix}` }),
    );
    process.env.TEAM_TOKEN_FOR_TEST = teamToken;
    try {
      const sent = await cli(
        'event',
        'send',
        deploys,
        '--to',
        gatewayUrl,
        '--source',
        'team',
        '--scheme',
        'bearer',
        '--secret-env',
        'TEAM_TOKEN_FOR_TEST',
        '--body',
        `@${deployFile}`,
      );
      expect(sent.code).toBe(0);
      expect(JSON.parse(sent.out)).toEqual({ status: 200, answer: { received: true } });
    } finally {
      delete process.env.TEAM_TOKEN_FOR_TEST;
    }

    // The replay through the other replica reached the automation and was dropped there.
    const billingState = await eventually(async () => {
      const state = await env.client.workflow
        .getHandle(automationWorkflowId(billing, 'cus_1'))
        .query(automationStateQuery)
        .catch(() => undefined);
      return state && state.counters.received === 2 && state.counters.runsStarted === 1 ? state : undefined;
    }, 60_000);
    expect(billingState.counters.duplicates).toBe(1);

    // Exactly the valid events ran, once each: two pushes, one invoice, one thin event, one deploy.
    const expected = [
      `gh-${suffix}-a`,
      `gh-${suffix}-b`,
      `evt_${suffix}_1`,
      `evt_${suffix}_thin`,
      `dep-${suffix}`,
    ];
    await eventually(() => emulator.control.submissions(endpointId) >= expected.length, 120_000);
    const ran = emulator.control
      .jobs(endpointId)
      .map((job) => (job.input as { output?: { eventId?: string } } | undefined)?.output?.eventId);
    expect(ran.sort()).toEqual([...expected].sort());
    expect(emulator.control.submissions(endpointId)).toBe(expected.length);
  });
});
