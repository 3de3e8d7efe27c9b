import { createHmac } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { hmacSpecSchema, signAs } from '../../client/event-signature';
import type { EventSink, IngressEvent } from '../../worker/event-ingress';
import { jsonDepthExceeds } from '../../worker/event-json';
import { mapEvent } from '../../worker/event-mapping';
import { createEventMetrics } from '../../worker/event-metrics';
import { defineEventSource, type EventSource } from '../../worker/event-sources';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { createLogger } from '../../worker/logger';
import { captureLines } from './capture';

// The gateway's clock, fixed: every signature is made relative to it.
const NOW_S = 1_790_000_000;
const GITHUB_OLD = 'github-old-secret-0123456789';
const GITHUB_NEW = 'github-new-secret-0123456789';
const STRIPE = 'whsec_stripe_test_secret_0123456789';
const HMAC = 'hmac-shared-secret-0123456789';
const TOKEN = 'bearer-token-0123456789-0123456789-abcdef';
const ORDERS = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

const pushBody = (delivery: string) =>
  JSON.stringify({ ref: 'refs/heads/main', after: delivery, repository: { full_name: 'acme/api' } });

describe('event sources: each sender signs with its own library, the gateway verifies and maps', () => {
  const delivered: Array<{ automation: string; key: string; event: IngressEvent }> = [];
  const sink: EventSink = async (automation, key, event) => {
    delivered.push({ automation, key, event });
  };
  const logs = captureLines();
  const registry = new Registry();
  let gateway: WebhookGateway;
  /** How many refusals the gateway counted under `reason`. */
  const refused = async (reason: string) =>
    (await registry.getSingleMetric('durable_serverless_events_total')?.get())?.values.find(
      (sample) => sample.labels.result === 'refused' && sample.labels.reason === reason,
    )?.value ?? 0;

  const github = defineEventSource({
    name: 'github',
    scheme: 'github',
    secrets: [GITHUB_NEW, GITHUB_OLD],
    automations: { deploys: { key: 'body.repository.full_name', data: 'body.ref' } },
  });
  const stripe = defineEventSource({
    name: 'stripe',
    scheme: 'stripe',
    secrets: [STRIPE],
    // Snapshot events carry the object in data.object; thin events name it in related_object.
    automations: { billing: { key: 'body.data.object.customer' }, meters: { key: 'body.related_object.id' } },
  });
  const orders = defineEventSource({
    name: 'orders-service',
    scheme: 'standard-webhooks',
    secrets: [ORDERS],
    automations: { orders: { key: 'body.customer' } },
  });
  const hmac = defineEventSource({
    name: 'storage',
    scheme: 'hmac',
    hmac: {
      header: 'X-Storage-Signature',
      encoding: 'base64',
      prefix: 'v1=',
      signed: 'timestamp.body',
      timestampHeader: 'X-Storage-Timestamp',
    },
    secrets: [HMAC],
    automations: {
      // A transform, for what paths cannot say: the bucket and the object's folder make the key.
      ingest: ({ body }) => {
        const record = (body as { records?: Array<{ bucket: string; object: string; id: string }> })
          .records?.[0];
        if (!record) return undefined;
        return {
          key: `${record.bucket}/${record.object.split('/')[0]}`,
          id: record.id,
          type: 'object.created',
          data: record,
        };
      },
    },
  });
  const bearer = defineEventSource({
    name: 'team',
    scheme: 'bearer',
    secrets: [TOKEN],
    automations: { deploys: { key: 'body.service', id: 'header.x-request-id', type: 'body.kind' } },
  });

  beforeAll(async () => {
    gateway = await startWebhookGateway({
      client: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
      secrets: ['event-sources-test-webhook-secret-012345'],
      logger: createLogger({
        level: 'debug',
        secrets: [GITHUB_NEW, GITHUB_OLD, STRIPE, HMAC, TOKEN, ORDERS],
        destination: logs,
      }),
      events: {
        automations: ['deploys', 'billing', 'meters', 'orders', 'ingest', 'reports'],
        sources: [github, stripe, orders, hmac, bearer],
        sink,
        now: () => NOW_S * 1000,
        metrics: createEventMetrics(registry),
      },
    });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function post(path: string, body: string, headers: Record<string, string>) {
    const response = await request(`${gateway.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    const text = await response.body.text();
    return { status: response.statusCode, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  async function startsNothing(act: () => Promise<{ status: number; json: Record<string, unknown> }>) {
    const before = delivered.length;
    const answer = await act();
    expect(delivered.length).toBe(before);
    return answer;
  }

  it('GitHub: a push signed by @octokit/webhooks-methods (either secret of a rotation) is one event', async () => {
    const { sign } = await import('@octokit/webhooks-methods');
    const body = pushBody('d-1');
    const answer = await post('/events/deploys?source=github', body, {
      'x-hub-signature-256': await sign(GITHUB_OLD, body),
      'x-github-event': 'push',
      'x-github-delivery': 'delivery-1',
    });
    expect(answer).toEqual({ status: 200, json: { received: true } });
    expect(delivered.at(-1)).toEqual({
      automation: 'deploys',
      key: 'acme/api',
      event: {
        id: 'delivery-1',
        type: 'push',
        data: 'refs/heads/main',
        time: new Date(NOW_S * 1000).toISOString(),
      },
    });
    // GitHub's redelivery carries the same delivery id: answered 200, nothing started again.
    const again = await startsNothing(() =>
      signAs({ scheme: 'github' }, GITHUB_NEW, body, { id: 'delivery-1' }).then((headers) =>
        post('/events/deploys?source=github', body, { ...headers, 'x-github-event': 'push' }),
      ),
    );
    expect(again.json).toEqual({ received: true, duplicate: true });
  });

  it('GitHub: forged, tampered, unsigned and wrong-secret requests start nothing (401)', async () => {
    const { sign } = await import('@octokit/webhooks-methods');
    const body = pushBody('d-2');
    const headers = { 'x-github-event': 'push', 'x-github-delivery': 'delivery-2' };
    const wrong = await sign('not-the-secret-0123456789', body);
    expect(
      (
        await startsNothing(() =>
          post('/events/deploys?source=github', body, { ...headers, 'x-hub-signature-256': wrong }),
        )
      ).status,
    ).toBe(401);
    const signed = await sign(GITHUB_NEW, body);
    const tampered = body.replace('acme/api', 'acme/web');
    expect(
      (
        await startsNothing(() =>
          post('/events/deploys?source=github', tampered, { ...headers, 'x-hub-signature-256': signed }),
        )
      ).status,
    ).toBe(401);
    const unsigned = await startsNothing(() => post('/events/deploys?source=github', body, headers));
    expect(unsigned).toEqual({
      status: 401,
      json: { error: 'an x-hub-signature-256 header (sha256=<hex>) is required' },
    });
    // The refusals did not take the delivery id.
    expect(
      (await post('/events/deploys?source=github', body, { ...headers, 'x-hub-signature-256': signed }))
        .status,
    ).toBe(200);
  });

  it('Stripe: an event signed by the stripe package is one event; stale and future timestamps start nothing', async () => {
    const { webhooks } = (await import('stripe')).default;
    const body = JSON.stringify({
      id: 'evt_1',
      type: 'invoice.paid',
      data: { object: { customer: 'cus_42' } },
    });
    const header = (timestamp: number, secret = STRIPE) => ({
      'stripe-signature': webhooks.generateTestHeaderString({ payload: body, secret, timestamp }),
    });
    const stale = await startsNothing(() => post('/events/billing?source=stripe', body, header(NOW_S - 301)));
    expect(stale.status).toBe(401);
    expect(String(stale.json.error)).toContain('more than 300 s');
    expect(
      (await startsNothing(() => post('/events/billing?source=stripe', body, header(NOW_S + 301)))).status,
    ).toBe(401);
    expect(
      (
        await startsNothing(() =>
          post('/events/billing?source=stripe', body, header(NOW_S, 'whsec_other_0123456789abcdef')),
        )
      ).status,
    ).toBe(401);
    // A captured old signature sent behind a fresh `t=` (the library signs with the last `t`).
    const captured = header(NOW_S - 3600)['stripe-signature'];
    for (const forged of [`t=${NOW_S},${captured}`, `${captured},t=${NOW_S}`]) {
      const answer = await startsNothing(() =>
        post('/events/billing?source=stripe', body, { 'stripe-signature': forged }),
      );
      expect(answer.status, forged).toBe(401);
    }
    expect((await post('/events/billing?source=stripe', body, header(NOW_S - 300))).status).toBe(200);
    expect(delivered.at(-1)).toMatchObject({
      automation: 'billing',
      key: 'cus_42',
      event: { id: 'evt_1', type: 'invoice.paid', data: JSON.parse(body) },
    });
    // The same event re-signed later (Stripe's retry): a duplicate, nothing started.
    const retried = await startsNothing(() => post('/events/billing?source=stripe', body, header(NOW_S)));
    expect(retried.json.duplicate).toBe(true);
  });

  it('Stripe: a signed body that is not JSON is 400 and counted malformed, not a bad signature', async () => {
    const { webhooks } = (await import('stripe')).default;
    const body = 'id=evt_2&type=invoice.paid';
    const header = (secret: string) => ({
      'stripe-signature': webhooks.generateTestHeaderString({ payload: body, secret, timestamp: NOW_S }),
    });
    const [malformed, badSignature] = [await refused('malformed'), await refused('bad-signature')];
    expect(await startsNothing(() => post('/events/billing?source=stripe', body, header(STRIPE)))).toEqual({
      status: 400,
      json: { error: 'body must be valid JSON', field: 'body' },
    });
    expect(await refused('malformed')).toBe(malformed + 1);
    expect(await refused('bad-signature')).toBe(badSignature);
    // The same body under another secret: the signature is what is wrong, 401.
    expect(
      await startsNothing(() =>
        post('/events/billing?source=stripe', body, header('whsec_other_0123456789abcdef')),
      ),
    ).toEqual({ status: 401, json: { error: 'signature does not match' } });
    expect(await refused('bad-signature')).toBe(badSignature + 1);
  });

  it('Stripe: a signed thin event (v2.core.event) is mapped by its own paths; a snapshot path on it is 422 saying why', async () => {
    const Stripe = (await import('stripe')).default;
    const { webhooks } = Stripe;
    const body = JSON.stringify({
      id: 'evt_test_65R9Ijk8Ytq7Bj5Mmbv16R9Ijk8YSQgPwRRcrD3sxNWC',
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      livemode: false,
      created: '2026-09-22T06:20:52.246Z',
      related_object: {
        id: 'mtr_test_61R9IhYTKEmCH8VaT41H7qBI9oK6LhfM',
        type: 'billing.meter',
        url: '/v1/billing/meters/mtr_test_61R9IhYTKEmCH8VaT41H7qBI9oK6LhfM',
      },
    });
    const headers = {
      'stripe-signature': webhooks.generateTestHeaderString({
        payload: body,
        secret: STRIPE,
        timestamp: NOW_S,
      }),
    };
    // Stripe's own library takes it as a thin event notification under this signature...
    const notification = new Stripe('sk_test_not_used').parseEventNotification(
      body,
      headers['stripe-signature'],
      STRIPE,
      undefined,
      undefined,
      NOW_S * 1000,
    );
    expect(notification.id).toBe('evt_test_65R9Ijk8Ytq7Bj5Mmbv16R9Ijk8YSQgPwRRcrD3sxNWC');
    // ...and the snapshot helper refuses it: the gateway must not take that refusal for a bad signature.
    expect(() => webhooks.constructEvent(body, headers['stripe-signature'], STRIPE, 0)).toThrow(/thin event/);
    expect(await post('/events/meters?source=stripe', body, headers)).toEqual({
      status: 200,
      json: { received: true },
    });
    expect(delivered.at(-1)).toEqual({
      automation: 'meters',
      key: 'mtr_test_61R9IhYTKEmCH8VaT41H7qBI9oK6LhfM',
      event: {
        id: 'evt_test_65R9Ijk8Ytq7Bj5Mmbv16R9Ijk8YSQgPwRRcrD3sxNWC',
        type: 'v1.billing.meter.error_report_triggered',
        data: JSON.parse(body),
        time: new Date(NOW_S * 1000).toISOString(),
      },
    });
    // Bound by a snapshot event's path: nothing there, and the answer says what a thin event holds.
    const unmapped = await startsNothing(() => post('/events/billing?source=stripe', body, headers));
    expect(unmapped).toEqual({
      status: 422,
      json: {
        error:
          'body.data.object.customer: no key found at this path in the request: a Stripe thin event (object v2.core.event) has no data; its object is named at body.related_object',
        field: 'body.data.object.customer',
      },
    });
  });

  it('every scheme: a correctly signed body that is not JSON is 400, a wrong signature over it 401', async () => {
    const { sign } = await import('@octokit/webhooks-methods');
    const { webhooks } = (await import('stripe')).default;
    const { Webhook } = await import('standardwebhooks');
    const body = 'not json at all';
    const storage = (secret: string) => ({
      'x-storage-signature': `v1=${createHmac('sha256', secret).update(`${NOW_S}.${body}`).digest('base64')}`,
      'x-storage-timestamp': String(NOW_S),
    });
    const senders: Array<{
      path: string;
      signed: (secret: string) => Promise<Record<string, string>>;
      right: string;
      wrong: string;
    }> = [
      {
        path: '/events/deploys?source=github',
        signed: async (secret) => ({
          'x-hub-signature-256': await sign(secret, body),
          'x-github-event': 'push',
          'x-github-delivery': 'not-json-1',
        }),
        right: GITHUB_NEW,
        wrong: 'not-the-secret-0123456789',
      },
      {
        path: '/events/billing?source=stripe',
        signed: async (secret) => ({
          'stripe-signature': webhooks.generateTestHeaderString({ payload: body, secret, timestamp: NOW_S }),
        }),
        right: STRIPE,
        wrong: 'whsec_other_0123456789abcdef',
      },
      {
        path: '/events/orders?source=orders-service',
        signed: async (secret) => ({
          'webhook-id': 'msg_not_json',
          'webhook-timestamp': String(NOW_S),
          'webhook-signature': new Webhook(secret).sign('msg_not_json', new Date(NOW_S * 1000), body),
        }),
        right: ORDERS,
        wrong: `whsec_${Buffer.alloc(32, 8).toString('base64')}`,
      },
      {
        path: '/events/ingest?source=storage',
        signed: async (secret) => storage(secret),
        right: HMAC,
        wrong: `${HMAC}x`,
      },
      {
        path: '/events/deploys?source=team',
        signed: async (secret) => ({ authorization: `Bearer ${secret}`, 'x-request-id': 'not-json-1' }),
        right: TOKEN,
        wrong: `${TOKEN}x`,
      },
    ];
    const [malformed, badSignature] = [await refused('malformed'), await refused('bad-signature')];
    for (const sender of senders) {
      expect(
        await startsNothing(async () => post(sender.path, body, await sender.signed(sender.right))),
        sender.path,
      ).toEqual({ status: 400, json: { error: 'body must be valid JSON', field: 'body' } });
      expect(
        await startsNothing(async () => post(sender.path, body, await sender.signed(sender.wrong))),
        sender.path,
      ).toEqual({ status: 401, json: { error: 'signature does not match' } });
    }
    expect(await refused('malformed')).toBe(malformed + senders.length);
    expect(await refused('bad-signature')).toBe(badSignature + senders.length);
  });

  it('generic HMAC header: base64 with a prefix over timestamp.body; a transform makes the event', async () => {
    const spec = hmacSpecSchema.parse(hmac.hmac);
    const body = JSON.stringify({
      records: [{ bucket: 'uploads', object: 'invoices/2026/a.pdf', id: 'obj-1' }],
    });
    // Signed here by hand, the way such a sender documents it, and by signAs: the same header.
    const manual = `v1=${createHmac('sha256', HMAC).update(`${NOW_S}.${body}`).digest('base64')}`;
    const headers = await signAs({ scheme: 'hmac', hmac: spec }, HMAC, body, { timestamp: NOW_S });
    expect(headers['x-storage-signature']).toBe(manual);
    expect((await post('/events/ingest?source=storage', body, headers)).status).toBe(200);
    expect(delivered.at(-1)).toMatchObject({
      automation: 'ingest',
      key: 'uploads/invoices',
      event: { id: 'obj-1', type: 'object.created' },
    });
    // The transform finds no record: 422 naming it, nothing started.
    const empty = JSON.stringify({ records: [] });
    const unmapped = await startsNothing(async () =>
      post(
        '/events/ingest?source=storage',
        empty,
        await signAs({ scheme: 'hmac', hmac: spec }, HMAC, empty, { timestamp: NOW_S }),
      ),
    );
    expect(unmapped).toEqual({
      status: 422,
      json: { error: 'transform: the transform gave no event', field: 'transform' },
    });
    const old = await signAs({ scheme: 'hmac', hmac: spec }, HMAC, body, { timestamp: NOW_S - 3600 });
    expect((await startsNothing(() => post('/events/ingest?source=storage', body, old))).status).toBe(401);
  });

  it('bearer token: the right token is one event, any other starts nothing', async () => {
    const body = JSON.stringify({ service: 'billing-api', kind: 'deployed' });
    const answer = await post('/events/deploys?source=team', body, {
      authorization: `Bearer ${TOKEN}`,
      'x-request-id': 'req-1',
    });
    expect(answer.status).toBe(200);
    expect(delivered.at(-1)).toMatchObject({ key: 'billing-api', event: { id: 'req-1', type: 'deployed' } });
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, '']) {
      const refused = await startsNothing(() =>
        post('/events/deploys?source=team', body, { authorization, 'x-request-id': 'req-2' }),
      );
      expect(refused.status, authorization).toBe(401);
    }
  });

  it('wrong source, unknown automation and unmapped body start nothing', async () => {
    const { sign } = await import('@octokit/webhooks-methods');
    const body = pushBody('d-3');
    const headers = {
      'x-hub-signature-256': await sign(GITHUB_NEW, body),
      'x-github-event': 'push',
      'x-github-delivery': 'delivery-3',
    };
    // A GitHub source is not bound to billing: 403 before the body is read.
    expect(await startsNothing(() => post('/events/billing?source=github', body, headers))).toEqual({
      status: 403,
      json: { error: 'this source may not send events to this automation' },
    });
    // Registered, but bound to no source of this name; and a source that does not exist.
    expect((await startsNothing(() => post('/events/reports?source=github', body, headers))).status).toBe(
      403,
    );
    expect((await startsNothing(() => post('/events/deploys?source=gitlab', body, headers))).status).toBe(
      404,
    );
    // GitHub's signature presented to the Stripe source: 401.
    expect((await startsNothing(() => post('/events/billing?source=stripe', body, headers))).status).toBe(
      401,
    );
    // No automation of this name: 404.
    expect((await startsNothing(() => post('/events/nothing?source=github', body, headers))).status).toBe(
      404,
    );
    // A body without the declared key: 422 naming the path.
    const ping = JSON.stringify({ zen: 'Design for failure.' });
    const unmapped = await startsNothing(async () =>
      post('/events/deploys?source=github', ping, {
        ...headers,
        'x-hub-signature-256': await sign(GITHUB_NEW, ping),
      }),
    );
    expect(unmapped).toEqual({
      status: 422,
      json: {
        error: 'body.repository.full_name: no key found at this path in the request',
        field: 'body.repository.full_name',
      },
    });
  });

  it('the CLI signs as each scheme (event send --to), the secret read from a variable', async () => {
    const cli = async (...args: string[]) => {
      let out = '';
      const code = await runCli(args, { out: (text) => (out += text), err: () => undefined }, async () => {
        throw new Error('no Temporal connection with --to');
      });
      return { code, out };
    };
    process.env.CLI_TEST_SECRET = GITHUB_NEW;
    process.env.CLI_TEST_STRIPE = STRIPE;
    process.env.CLI_TEST_HMAC = HMAC;
    try {
      const push = pushBody('cli');
      const github = await cli(
        'event',
        'send',
        'deploys',
        '--to',
        gateway.url,
        '--source',
        'github',
        '--scheme',
        'github',
        '--secret-env',
        'CLI_TEST_SECRET',
        '--id',
        'cli-delivery',
        '--header',
        'x-github-event:push',
        '--body',
        push,
      );
      expect(github.code).toBe(0);
      expect(delivered.at(-1)).toMatchObject({
        key: 'acme/api',
        event: { id: 'cli-delivery', type: 'push' },
      });
      const invoice = JSON.stringify({
        id: 'evt_cli',
        type: 'invoice.paid',
        data: { object: { customer: 'cus_cli' } },
      });
      // The stripe source's tolerance is checked against the gateway's fixed clock: the CLI signs with
      // the real time, so the answer is 401 stale, which shows the header was made and read as Stripe's.
      const stripeAnswer = await cli(
        'event',
        'send',
        'billing',
        '--to',
        gateway.url,
        '--source',
        'stripe',
        '--scheme',
        'stripe',
        '--secret-env',
        'CLI_TEST_STRIPE',
        '--body',
        invoice,
      );
      expect(stripeAnswer.code).toBe(1);
      expect(JSON.parse(stripeAnswer.out).status).toBe(401);
      expect(String(JSON.parse(stripeAnswer.out).answer.error)).toContain('more than 300 s');
      const wrongSecret = await cli(
        'event',
        'send',
        'deploys',
        '--to',
        gateway.url,
        '--source',
        'github',
        '--scheme',
        'github',
        '--secret-env',
        'CLI_TEST_HMAC',
        '--id',
        'cli-forged',
        '--body',
        push,
      );
      expect(JSON.parse(wrongSecret.out)).toEqual({
        status: 401,
        answer: { error: 'signature does not match' },
      });
      // Bad input is exit 2, before anything is sent: an unknown scheme, a variable that is not set.
      expect(
        (
          await cli(
            'event',
            'send',
            'deploys',
            '--to',
            gateway.url,
            '--scheme',
            'nope',
            '--secret-env',
            'CLI_TEST_HMAC',
            '--body',
            '{}',
          )
        ).code,
      ).toBe(2);
      expect(
        (
          await cli(
            'event',
            'send',
            'deploys',
            '--to',
            gateway.url,
            '--secret-env',
            'CLI_TEST_UNSET',
            '--body',
            '{}',
          )
        ).code,
      ).toBe(2);
    } finally {
      delete process.env.CLI_TEST_SECRET;
      delete process.env.CLI_TEST_STRIPE;
      delete process.env.CLI_TEST_HMAC;
    }
  });

  it('logs no secret, token or signature', () => {
    const text = logs.text();
    expect(text).toContain('event refused');
    for (const secret of [GITHUB_NEW, GITHUB_OLD, STRIPE, HMAC, TOKEN, ORDERS])
      expect(text).not.toContain(secret);
    expect(text).not.toContain('sha256=');
  });
});

describe('event mapping and JSON limits (pure)', () => {
  const source: EventSource = defineEventSource({
    name: 'gh',
    scheme: 'github',
    secrets: ['x'.repeat(16)],
    automations: { a: { key: 'body.repository.full_name' } },
  });
  const time = new Date(NOW_S * 1000);

  it('takes key, type and id by paths with the scheme defaults; a path never reaches a prototype', () => {
    const binding = source.automations.get('a');
    if (!binding) throw new Error('bound');
    const headers = { 'x-github-event': 'release', 'x-github-delivery': 'd-9' };
    expect(
      mapEvent(binding, 'github', { body: { repository: { full_name: 'o/r' } }, headers }, time),
    ).toEqual({
      ok: true,
      key: 'o/r',
      event: {
        id: 'd-9',
        type: 'release',
        data: { repository: { full_name: 'o/r' } },
        time: time.toISOString(),
      },
    });
    expect(mapEvent({ key: 'body.constructor.name' }, 'github', { body: {}, headers }, time)).toMatchObject({
      ok: false,
      status: 422,
      field: 'body.constructor.name',
    });
    expect(
      mapEvent(binding, 'github', { body: { repository: { full_name: 'o/r' } }, headers: {} }, time),
    ).toMatchObject({
      ok: false,
      field: 'header.x-github-delivery',
    });
  });

  it('measures nesting outside strings only', () => {
    expect(jsonDepthExceeds('[[[]]]', 3)).toBe(false);
    expect(jsonDepthExceeds('[[[[]]]]', 3)).toBe(true);
    expect(jsonDepthExceeds(JSON.stringify({ text: '[[[[[[\\"[[[[' }), 2)).toBe(false);
  });

  it('refuses a source definition naming the field, never a secret', () => {
    expect(() =>
      defineEventSource({
        name: 'Bad Name',
        scheme: 'github',
        secrets: ['x'.repeat(16)],
        automations: { a: { key: 'body.k' } },
      }),
    ).toThrow(/^name: /);
    expect(() =>
      defineEventSource({
        name: 's',
        scheme: 'stripe',
        secrets: ['short'],
        automations: { a: { key: 'body.k' } },
      }),
    ).toThrow(/^secrets\.0: must be at least 16 characters$/);
    expect(() =>
      defineEventSource({ name: 's', scheme: 'github', secrets: ['x'.repeat(16)], automations: {} }),
    ).toThrow(/^automations: must bind at least one automation$/);
  });
});
