import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { eventHeaders, signEvent } from '../../client/event-signature';
import { MAX_EVENT_BYTES } from '../../contracts/automation-input';
import { DEFAULT_EVENT_MAX_BODY_BYTES, type EventSink, type IngressEvent } from '../../worker/event-ingress';
import { createEventMetrics } from '../../worker/event-metrics';
import { nativeEventSource } from '../../worker/event-sources';
import { startWebhookGateway, type WebhookGateway } from '../../worker/gateway';
import { DEFAULT_OVERSIZED_BODY_DISCARD_BYTES } from '../../worker/gateway-body';
import { createLogger } from '../../worker/logger';
import { captureLines } from './capture';

const secret = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString('base64')}`;
const OLD = secret(1);
const NEW = secret(2);
const REMOVED = secret(3);
const WEBHOOK_SECRET = 'event-test-webhook-secret-0123456789abcd';
// The gateway's clock, fixed: timestamps are signed relative to it, never to the wall clock.
const NOW_S = 1_790_000_000;
const TOLERANCE = 300;
const MAX_BODY = 2048;

type Delivery = { automation: string; key: string; event: IngressEvent };
type Answer = { status: number; json: Record<string, unknown>; headers: Record<string, unknown> };

describe('event ingress (real HTTP on loopback, recording sink)', () => {
  const delivered: Delivery[] = [];
  let failNext: unknown;
  const sink: EventSink = async (automation, key, event) => {
    if (failNext) {
      const error = failNext;
      failNext = undefined;
      throw error;
    }
    delivered.push({ automation, key, event });
  };
  const logs = captureLines();
  const registry = new Registry();
  const metrics = createEventMetrics(registry);
  let gateway: WebhookGateway;
  let rotated: WebhookGateway;

  const start = (secrets: string[]) =>
    startWebhookGateway({
      // Never used by these tests: the events go to the recording sink.
      client: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
      secrets: [WEBHOOK_SECRET],
      logger: createLogger({ level: 'debug', secrets: [WEBHOOK_SECRET, ...secrets], destination: logs }),
      events: {
        automations: ['orders', 'billing'],
        sources: [nativeEventSource(secrets, ['orders', 'billing'], TOLERANCE)],
        sink,
        maxBodyBytes: MAX_BODY,
        now: () => NOW_S * 1000,
        metrics,
      },
    });

  beforeAll(async () => {
    gateway = await start([OLD, NEW]);
    rotated = await start([NEW]);
  });
  afterAll(async () => {
    await gateway?.close();
    await rotated?.close();
  });
  afterEach(() => {
    failNext = undefined;
  });

  let seq = 0;
  const nextId = () => `evt_${process.pid}_${++seq}`;

  async function post(
    path: string,
    body: string | Buffer | Readable,
    headers: Record<string, string> = {},
    target = gateway,
  ): Promise<Answer> {
    const response = await request(`${target.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    const text = await response.body.text();
    return { status: response.statusCode, json: text ? JSON.parse(text) : {}, headers: response.headers };
  }

  const send = (
    automation: string,
    body: string,
    options: { id?: string; secrets?: string[]; at?: number; target?: WebhookGateway } = {},
  ) =>
    post(
      `/events/${automation}`,
      body,
      { ...eventHeaders(options.secrets ?? [NEW], options.id ?? nextId(), body, options.at ?? NOW_S) },
      options.target,
    );

  /** Runs `act` and checks it delivered nothing. */
  async function nothingDelivered(act: () => Promise<Answer>): Promise<Answer> {
    const before = delivered.length;
    const answer = await act();
    expect(delivered.length).toBe(before);
    return answer;
  }

  it('delivers a correctly signed event, exactly as the event', async () => {
    const body = JSON.stringify({ key: 'user-42', type: 'order.paid', data: { amount: 12, items: ['a'] } });
    const answer = await send('orders', body, { id: 'evt_first' });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ received: true });
    expect(delivered.at(-1)).toEqual({
      automation: 'orders',
      key: 'user-42',
      event: {
        id: 'evt_first',
        type: 'order.paid',
        data: { amount: 12, items: ['a'] },
        time: new Date(NOW_S * 1000).toISOString(),
      },
    });
  });

  it('delivers an event without type or data as data null, and keeps the body bytes exact', async () => {
    // Spacing and key order as sent: the signature covers these bytes, not a re-serialization.
    const body = '{ "key" : "k1" ,\n "data":{"b":1,"a":"é"} }';
    expect((await send('orders', body, { id: 'evt_exact' })).status).toBe(200);
    expect(delivered.at(-1)?.event).toEqual({
      id: 'evt_exact',
      data: { b: 1, a: 'é' },
      time: new Date(NOW_S * 1000).toISOString(),
    });
    const bare = await send('orders', JSON.stringify({ key: 'k1' }), { id: 'evt_bare' });
    expect(bare.status).toBe(200);
    expect(delivered.at(-1)?.event).toEqual({ id: 'evt_bare', data: null, time: expect.any(String) });
  });

  it('refuses a bad signature with 401 and delivers nothing', async () => {
    const body = JSON.stringify({ key: 'k', data: 1 });
    const id = nextId();
    // Signed by a secret the gateway does not know.
    expect((await nothingDelivered(() => send('orders', body, { id, secrets: [REMOVED] }))).status).toBe(401);
    // Signed correctly, then the body changed by one byte.
    const headers = eventHeaders(NEW, id, body, NOW_S);
    const tampered = body.replace('1', '2');
    const answer = await nothingDelivered(() => post('/events/orders', tampered, { ...headers }));
    expect(answer.status).toBe(401);
    expect(answer.json.error).toBe('signature does not match');
    // Another id, timestamp or automation: the id and timestamp are signed.
    const otherId = await nothingDelivered(() =>
      post('/events/orders', body, { ...headers, 'webhook-id': `${id}x` }),
    );
    expect(otherId.status).toBe(401);
    const otherTime = await nothingDelivered(() =>
      post('/events/orders', body, { ...headers, 'webhook-timestamp': String(NOW_S + 1) }),
    );
    expect(otherTime.status).toBe(401);
    // A version other than v1, and garbage, never match.
    const v2 = headers['webhook-signature'].replace('v1,', 'v2,');
    expect(
      (await nothingDelivered(() => post('/events/orders', body, { ...headers, 'webhook-signature': v2 })))
        .status,
    ).toBe(401);
    expect(
      (
        await nothingDelivered(() =>
          post('/events/orders', body, { ...headers, 'webhook-signature': 'v1,AAAA' }),
        )
      ).status,
    ).toBe(401);
    // Not UTF-8, signed over other text: the signature does not match, 401.
    const latin1 = Buffer.from([0x7b, 0xff, 0x7d]);
    expect(
      (
        await nothingDelivered(() =>
          post('/events/orders', latin1, { ...eventHeaders(NEW, id, '{}', NOW_S) }),
        )
      ).status,
    ).toBe(401);
    // Signed over the text it reads as (the byte as U+FFFD): the signature holds, the body is the fault.
    expect(
      await nothingDelivered(() =>
        post('/events/orders', latin1, { ...eventHeaders(NEW, id, '{\uFFFD}', NOW_S) }),
      ),
    ).toMatchObject({ status: 400, json: { error: 'body must be UTF-8 text', field: 'body' } });
    // An empty body is no event, whoever sent it: 400.
    expect(
      await nothingDelivered(() => post('/events/orders', '', { ...eventHeaders(NEW, id, '', NOW_S) })),
    ).toMatchObject({ status: 400, json: { error: 'body must be valid JSON', field: 'body' } });
    // The valid event still goes through afterwards: none of the refusals took its id.
    expect((await send('orders', body, { id })).status).toBe(200);
  });

  it('refuses missing or malformed headers with 401 and delivers nothing', async () => {
    const body = JSON.stringify({ key: 'k' });
    const full = eventHeaders(NEW, nextId(), body, NOW_S);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const { [name]: _dropped, ...rest } = full;
      const answer = await nothingDelivered(() => post('/events/orders', body, rest));
      expect(answer.status).toBe(401);
      expect(String(answer.json.error)).toContain('webhook-signature');
    }
    const isoTime = await nothingDelivered(() =>
      post('/events/orders', body, { ...full, 'webhook-timestamp': new Date(NOW_S * 1000).toISOString() }),
    );
    expect(isoTime.status).toBe(401);
    expect((await nothingDelivered(() => post('/events/orders', body))).status).toBe(401);
  });

  it('refuses a timestamp outside the tolerance, past or future, with 401; accepts one at its edge', async () => {
    const body = JSON.stringify({ key: 'k' });
    for (const at of [NOW_S - TOLERANCE - 1, NOW_S + TOLERANCE + 1, NOW_S - 86_400]) {
      const answer = await nothingDelivered(() => send('orders', body, { at }));
      expect(answer.status).toBe(401);
      expect(String(answer.json.error)).toContain(`more than ${TOLERANCE} s`);
    }
    expect((await send('orders', body, { at: NOW_S - TOLERANCE })).status).toBe(200);
    expect((await send('orders', body, { at: NOW_S + TOLERANCE })).status).toBe(200);
  });

  it('answers a replayed id 200 without signalling, across automations and bodies', async () => {
    const body = JSON.stringify({ key: 'k', data: 'once' });
    const id = nextId();
    expect((await send('orders', body, { id })).status).toBe(200);
    const replay = await nothingDelivered(() => send('orders', body, { id }));
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual({ received: true, duplicate: true });
    // The path is not signed: the same message to another automation is the same replay.
    expect((await nothingDelivered(() => send('billing', body, { id }))).json.duplicate).toBe(true);
    // Re-signed later with a new body: still the same id, still delivered once.
    const later = JSON.stringify({ key: 'k', data: 'twice' });
    expect((await nothingDelivered(() => send('orders', later, { id, at: NOW_S + 10 }))).json.duplicate).toBe(
      true,
    );
    expect(delivered.filter((d) => d.event.id === id)).toHaveLength(1);
  });

  it('refuses concurrent deliveries of one id with 409 while the first is in flight', async () => {
    const id = nextId();
    const body = JSON.stringify({ key: 'k' });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inSink = new Promise<void>((resolve) => {
      entered = resolve;
    });
    failNext = undefined;
    const slow = startGateway409(gate, () => entered());
    const target = await slow.gateway;
    try {
      const first = send('orders', body, { id, target });
      await inSink;
      const second = await send('orders', body, { id, target });
      expect(second.status).toBe(409);
      expect(second.headers['retry-after']).toBe('1');
      release();
      expect((await first).status).toBe(200);
      expect((await send('orders', body, { id, target })).json.duplicate).toBe(true);
      expect(slow.count()).toBe(1);
    } finally {
      await target.close();
    }
  });

  function startGateway409(gate: Promise<void>, onEnter: () => void) {
    let count = 0;
    const gatewayPromise = startWebhookGateway({
      client: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
      secrets: [WEBHOOK_SECRET],
      logger: createLogger({ level: 'silent' }),
      events: {
        automations: ['orders'],
        sources: [nativeEventSource([NEW], ['orders'])],
        now: () => NOW_S * 1000,
        sink: async () => {
          onEnter();
          await gate;
          count += 1;
        },
      },
    });
    return { gateway: gatewayPromise, count: () => count };
  }

  it('refuses a body that is not JSON with 400 and a fixed message, and one with no key with 422 naming the path', async () => {
    const id = nextId();
    for (const body of ['not json', '{"key":']) {
      const answer = await nothingDelivered(() => send('orders', body, { id }));
      expect(answer.status, body).toBe(400);
      expect(answer.json).toEqual({ error: 'body must be valid JSON', field: 'body' });
    }
    const cases: Array<[string, string]> = [
      ['[1,2]', 'body.key'],
      [JSON.stringify({ type: 'x' }), 'body.key'],
      [JSON.stringify({ key: '' }), 'body.key'],
      [JSON.stringify({ key: 'has space' }), 'body.key'],
      [JSON.stringify({ key: 'k', type: 'x'.repeat(129) }), 'event.type'],
    ];
    for (const [body, field] of cases) {
      const answer = await nothingDelivered(() => send('orders', body, { id }));
      expect(answer.status, body).toBe(422);
      expect(answer.json.field, body).toBe(field);
      expect(String(answer.json.error)).toMatch(new RegExp(`^${field.replace('.', '\\.')}: `));
    }
    // A refused body did not take the id.
    expect((await send('orders', JSON.stringify({ key: 'k' }), { id })).status).toBe(200);
  });

  it('refuses JSON nested deeper than the limit with 400 and a fixed message (no internal error)', async () => {
    const deep = `{"key":"k","data":${'['.repeat(1000)}${']'.repeat(1000)}}`;
    const answer = await nothingDelivered(() => send('orders', deep));
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({
      error: 'body nests objects and arrays too deeply (at most 32 levels)',
      field: 'body',
    });
    const fits = `{"key":"k","data":${'['.repeat(31)}${']'.repeat(31)}}`;
    expect((await send('orders', fits)).status).toBe(200);
  });

  it('answers 404 for an automation that is not registered (or cannot be), before reading the body', async () => {
    for (const name of ['unregistered', '-leading', 'has%20space', 'a'.repeat(129), 'sl%2Fash']) {
      const answer = await nothingDelivered(() => send(name, JSON.stringify({ key: 'k' })));
      expect(answer.status, name).toBe(404);
      expect(answer.json).toEqual({ error: 'no automation of this name is registered' });
    }
    const unknownSource = await nothingDelivered(() =>
      post('/events/orders?source=nope', JSON.stringify({ key: 'k' })),
    );
    expect(unknownSource.status).toBe(404);
  });

  it('refuses an oversized body with 413, with or without a content length', async () => {
    const big = JSON.stringify({ key: 'k', data: 'x'.repeat(MAX_BODY) });
    const headers = eventHeaders(NEW, nextId(), big, NOW_S);
    const answer = await nothingDelivered(() => post('/events/orders', big, { ...headers }));
    expect(answer.status).toBe(413);
    expect(answer.json.error).toBe(`body larger than ${MAX_BODY} bytes`);
    const chunked = await nothingDelivered(() =>
      post('/events/orders', Readable.from([big.slice(0, 1000), big.slice(1000)]), { ...headers }),
    );
    expect(chunked.status).toBe(413);
    // Just under the limit passes.
    const fits = JSON.stringify({ key: 'k', data: 'x'.repeat(MAX_BODY - 30) });
    expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(MAX_BODY);
    expect((await send('orders', fits)).status).toBe(200);
  });

  /**
   * A sender that writes its whole body before it reads the answer, as a plain HTTP client does:
   * a raw socket, not read from until the last byte is written. Each piece is written after a full
   * round trip on another connection, so the gateway has read the pieces before it meanwhile.
   */
  async function sendSlowly(path: string, headers: Record<string, string>, pieces: Buffer[]) {
    const socket = connect({ port: gateway.port, host: '127.0.0.1' });
    await once(socket, 'connect');
    socket.pause();
    const failed = new Promise<never>((_resolve, reject) => socket.once('error', reject));
    failed.catch(() => undefined);
    const write = (data: string | Buffer) =>
      Promise.race([new Promise<void>((resolve) => socket.write(data, () => resolve())), failed]);
    const chunked = headers['content-length'] === undefined;
    const headerLines = Object.entries({ host: `127.0.0.1:${gateway.port}`, ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    await write(
      `POST ${path} HTTP/1.1\r\n${headerLines}${chunked ? 'transfer-encoding: chunked\r\n' : ''}\r\n`,
    );
    for (const piece of pieces) {
      await (await request(`${gateway.url}/healthz`)).body.dump();
      await write(
        chunked
          ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece,
      );
    }
    if (chunked) await write('0\r\n\r\n');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.resume();
    await Promise.race([once(socket, 'end'), failed]);
    socket.destroy();
    const text = Buffer.concat(received).toString('utf8');
    const [statusAndHeaders = '', body = ''] = text.split('\r\n\r\n');
    return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusAndHeaders)?.[1]), json: JSON.parse(body) };
  }

  it('answers an oversized body written slowly with a 413 the sender reads, every time (20 runs)', async () => {
    const pieces = Array.from({ length: 12 }, () => Buffer.alloc(512, 0x78)); // 6 KiB: three times the limit
    const tooLarge = async () =>
      (await registry.getSingleMetric('durable_serverless_events_total')?.get())?.values.find(
        (sample) => sample.labels.result === 'refused' && sample.labels.reason === 'too-large',
      )?.value ?? 0;
    const countedBefore = await tooLarge();
    for (let run = 0; run < 20; run++) {
      // Half announce their length (the gateway knows at once), half are chunked (it learns midway).
      const length: Record<string, string> = run % 2 === 0 ? { 'content-length': String(6 * 1024) } : {};
      const deliveredBefore = delivered.length;
      const answer = await sendSlowly(
        '/events/orders',
        { 'content-type': 'application/json', ...eventHeaders(NEW, nextId(), '{}', NOW_S), ...length },
        pieces,
      );
      expect(delivered.length).toBe(deliveredBefore);
      expect(answer, `run ${run}`).toEqual({
        status: 413,
        json: { error: `body larger than ${MAX_BODY} bytes` },
      });
    }
    expect(await tooLarge()).toBe(countedBefore + 20);
  });

  it('answers at once and closes the connection when a body is announced beyond the discard bound', async () => {
    const { port } = gateway;
    const socket = connect({ port, host: '127.0.0.1' });
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const ended = once(socket, 'end');
    socket.write(
      [
        'POST /events/orders HTTP/1.1',
        `host: 127.0.0.1:${port}`,
        'content-type: application/json',
        `content-length: ${MAX_BODY + DEFAULT_OVERSIZED_BODY_DISCARD_BYTES + 1}`,
        '',
        '',
      ].join('\r\n'),
    );
    // Nothing of the body is sent: the answer comes anyway, and the gateway ends the connection.
    await ended;
    socket.destroy();
    const text = Buffer.concat(received).toString('utf8');
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text.toLowerCase()).toContain('connection: close');
  });

  it('refuses with 413 an event over the automation cap in a body under the default limit', async () => {
    const target = await startWebhookGateway({
      client: new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }),
      secrets: [WEBHOOK_SECRET],
      logger: createLogger({ level: 'silent' }),
      events: {
        automations: ['orders'],
        sources: [nativeEventSource([NEW], ['orders'])],
        now: () => NOW_S * 1000,
        sink,
      },
    });
    try {
      const body = JSON.stringify({ key: 'k', data: 'x'.repeat(MAX_EVENT_BYTES) });
      expect(Buffer.byteLength(body)).toBeLessThan(DEFAULT_EVENT_MAX_BODY_BYTES);
      const answer = await nothingDelivered(() => send('orders', body, { target }));
      expect(answer.status).toBe(413);
      expect(answer.json.field).toBe('event.data');
      expect(
        (await send('orders', JSON.stringify({ key: 'k', data: 'x'.repeat(60_000) }), { target })).status,
      ).toBe(200);
    } finally {
      await target.close();
    }
  });

  it('accepts the old and the new secret while both are configured, and refuses a removed one', async () => {
    const body = JSON.stringify({ key: 'k' });
    expect((await send('orders', body, { secrets: [OLD] })).status).toBe(200);
    expect((await send('orders', body, { secrets: [NEW] })).status).toBe(200);
    // A sender mid-rotation sends both entries; either matching is enough.
    expect((await send('orders', body, { secrets: [REMOVED, NEW] })).status).toBe(200);
    // The gateway that dropped OLD: refused, nothing delivered; NEW still passes.
    const refused = await nothingDelivered(() => send('orders', body, { secrets: [OLD], target: rotated }));
    expect(refused.status).toBe(401);
    expect((await send('orders', body, { secrets: [NEW], target: rotated })).status).toBe(200);
  });

  it('answers 503 when Temporal is unreachable, forgets the id, and delivers the retry', async () => {
    const id = nextId();
    const body = JSON.stringify({ key: 'k' });
    failNext = new Error('14 UNAVAILABLE: connect ECONNREFUSED');
    const down = await nothingDelivered(() => send('orders', body, { id }));
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('10');
    expect((await send('orders', body, { id })).status).toBe(200);
    expect(delivered.filter((d) => d.event.id === id)).toHaveLength(1);
    // A rule broken further down (the sink's own validation) is a 400 naming its field.
    failNext = new ValidationError('event.data', 'too large');
    const invalid = await nothingDelivered(() => send('orders', body));
    expect(invalid.status).toBe(422);
    expect(invalid.json.field).toBe('event.data');
  });

  it('leaves the webhook route as it was, and answers 404 for other paths', async () => {
    expect((await post('/events', '{}')).status).toBe(404);
    expect((await post('/webhooks/x', '{}')).status).toBe(401);
  });

  it('counts events by result and bounded reason, and logs no secret or signature', async () => {
    const text = await registry.metrics();
    expect(text).toMatch(/durable_serverless_events_total\{result="accepted",reason="signalled"\} \d+/);
    expect(text).toMatch(/durable_serverless_events_total\{result="accepted",reason="duplicate"\} \d+/);
    for (const reason of [
      'bad-signature',
      'no-signature',
      'timestamp-out-of-tolerance',
      'malformed',
      'too-large',
      'unknown-automation',
      'unmapped',
      'temporal-unavailable',
    ]) {
      expect(text).toContain(`durable_serverless_events_total{result="refused",reason="${reason}"}`);
    }
    const received = Number(/durable_serverless_events_received_total (\d+)/.exec(text)?.[1]);
    expect(received).toBeGreaterThan(delivered.length);
    const logged = logs.text();
    expect(logged).toContain('event refused');
    for (const s of [OLD, NEW, REMOVED, OLD.slice(6), NEW.slice(6)]) expect(logged).not.toContain(s);
    const signature = signEvent(NEW, 'evt_first', NOW_S, '{}').slice(3);
    expect(logged).not.toContain(signature);
    expect(logged).not.toContain('v1,');
  });

  it('signEvent matches the Standard Webhooks reference computation', async () => {
    const { Webhook } = await import('standardwebhooks');
    const key = `whsec_${randomBytes(32).toString('base64')}`;
    const body = '{"key":"k"}';
    const headers = eventHeaders(key, 'msg_1', body, new Date());
    expect(new Webhook(key).verify(body, { ...headers })).toEqual({ key: 'k' });
    expect(() => signEvent('not-a-secret', 'id', NOW_S, body)).toThrow(/secret: must be whsec_/);
  });
});
