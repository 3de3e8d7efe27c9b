/**
 * `POST /events/{automation}`: signed events over HTTP, passed on to an automation (issue 13). The
 * format and signature are Standard Webhooks' (client/event-signature.ts); the body is
 * `{ key, type?, data? }`. What the gateway answers, in the order it checks, and why:
 *
 * - automation name not of the allowed form: 400 (before the body is read);
 * - a `webhook-id`, `webhook-timestamp` or `webhook-signature` header missing or malformed: 401;
 * - a body over the limit: 413 (Fastify stops reading at the limit);
 * - no `v1,` entry matching any configured secret (rotation: any one may match): 401;
 * - a correctly signed timestamp more than the tolerance away from our clock: 401, not 400: the
 *   timestamp is what bounds a replay, so an old signature is a stale credential, like an expired
 *   token, and the sender's fix is to re-sign (a sender retrying re-signs with a fresh timestamp);
 * - an id already delivered within the replay window: 200 `{ duplicate: true }`, nothing signalled.
 *   Standard Webhooks senders retry on any non-2xx, so a refusal would make a sender whose 200 was
 *   lost retry until it gives up; the 200 ends that, and a replay by a third party gains nothing;
 * - the same id still being delivered by a concurrent request: 409 with retry-after (the retry
 *   then learns whether the first one got through);
 * - a body that is not JSON of the expected shape: 400 naming the field;
 * - Temporal unreachable (or any failure of the sink): 503 with retry-after, and the id is
 *   forgotten, so the sender's retry is delivered.
 *
 * Nothing is signalled for any refused request. The event passed on is
 * `{ id: webhook-id, type, data, time: the timestamp as ISO }`: never a header, secret or signature.
 *
 * Replays are remembered in memory per gateway process, for twice the tolerance (a timestamp may be
 * up to the tolerance ahead, and is accepted until the tolerance after it). Several gateway
 * replicas do not share it: the automation's own de-duplication by event id is the second line.
 * The path is not covered by the signature (Standard Webhooks signs id, timestamp and body only),
 * so ids are remembered across automations: a captured event cannot be replayed to another name.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { ValidationError, validationErrorFrom } from '../api/errors';
import { matchesAnySecret } from '../client/event-signature';
import {
  type AutomationEvent,
  automationKeySchema,
  automationNameSchema,
  MAX_EVENT_BYTES,
  parseAutomationEvent,
} from '../workflows/automation-input';

export const DEFAULT_EVENT_TOLERANCE_SECONDS = 300;
/** The event's own cap, and room for the key: the event (id, type, data, time) is what must fit. */
export const DEFAULT_EVENT_MAX_BODY_BYTES = MAX_EVENT_BYTES + 1024;
/** Ids remembered at most; past it the least recent are dropped (see the module comment). */
export const DEFAULT_REPLAY_CACHE_SIZE = 100_000;

/** The body of `POST /events/{automation}`; unknown fields are refused rather than silently dropped. */
export const eventBodySchema = z.strictObject({
  key: automationKeySchema,
  type: z
    .string({ error: 'must be a string' })
    .max(128, { error: 'must be at most 128 characters' })
    .optional(),
  data: z.json({ error: 'must be a JSON value' }).optional(),
});

export type EventBody = z.infer<typeof eventBodySchema>;

/** What reaches the automation: `{ id, type?, data, time }`, checked by the automation's schema. */
export type IngressEvent = AutomationEvent;

/** Passes an accepted event on (by signalWithStart in production); a throw means not delivered. */
export type EventSink = (automation: string, key: string, event: IngressEvent) => Promise<void>;

export type EventVerdict =
  | { accepted: true; reason: 'signalled' | 'duplicate' }
  | {
      accepted: false;
      reason:
        | 'bad-automation'
        | 'no-signature'
        | 'bad-signature'
        | 'timestamp-out-of-tolerance'
        | 'in-progress'
        | 'malformed'
        | 'too-large'
        | 'temporal-unavailable';
    };

/** Events received, accepted and refused by reason (worker/event-metrics.ts); labels from fixed sets. */
export interface EventMetrics {
  event(verdict: EventVerdict): void;
}

export const noopEventMetrics: EventMetrics = { event: () => {} };

export interface EventIngressOptions {
  /** `whsec_` secrets; any one may match (rotation). */
  secrets: readonly string[];
  sink: EventSink;
  toleranceSeconds?: number;
  maxBodyBytes?: number;
  replayCacheSize?: number;
  metrics?: EventMetrics;
  /** Milliseconds since the epoch; tests pass a fixed clock. */
  now?: () => number;
}

const headerSchema = z.object({
  'webhook-id': z.string().min(1).max(256),
  'webhook-timestamp': z.string().regex(/^\d{1,12}$/),
  'webhook-signature': z.string().min(1).max(4096),
});

const paramsSchema = z.object({ automation: z.string() });

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Registers the route in its own scope (its own 413 answer); call before the app listens. */
export function registerEventIngress(app: FastifyInstance, options: EventIngressOptions): void {
  app.register(eventIngress, options);
}

const eventIngress: FastifyPluginAsync<EventIngressOptions> = async (scope, options) => {
  if (options.secrets.length === 0) throw new Error('the event ingress needs at least one secret');
  const verify = matchesAnySecret(options.secrets);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_EVENT_TOLERANCE_SECONDS;
  const bodyLimit = options.maxBodyBytes ?? DEFAULT_EVENT_MAX_BODY_BYTES;
  const metrics = options.metrics ?? noopEventMetrics;
  const now = options.now ?? Date.now;
  const seen = new LRUCache<string, 'pending' | 'delivered'>({
    max: options.replayCacheSize ?? DEFAULT_REPLAY_CACHE_SIZE,
    ttl: 2 * toleranceSeconds * 1000,
    perf: { now },
  });

  const refuse = (
    reply: FastifyReply,
    status: number,
    reason: Extract<EventVerdict, { accepted: false }>['reason'],
    body: Record<string, unknown>,
  ) => {
    metrics.event({ accepted: false, reason });
    reply.log.warn({ reason, status }, 'event refused');
    return reply.code(status).send(body);
  };

  scope.setErrorHandler((error: { statusCode?: number; code?: string }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413)
      return refuse(reply, 413, 'too-large', { error: `body larger than ${bodyLimit} bytes` });
    if (status >= 400 && status < 500) return refuse(reply, status, 'malformed', { error: 'bad request' });
    request.log.error({ code: error.code }, 'event ingress error');
    return reply.code(500).send({ error: 'internal error' });
  });

  scope.post(
    '/events/:automation',
    {
      bodyLimit,
      // Before the body is read: a caller without the headers costs us no buffering.
      onRequest: async (request, reply) => {
        const name = automationNameSchema.safeParse(paramsSchema.parse(request.params).automation);
        if (!name.success) {
          return refuse(reply, 400, 'bad-automation', {
            error: `automation: ${name.error.issues[0]?.message ?? 'is invalid'}`,
            field: 'automation',
          });
        }
        if (!headerSchema.safeParse(request.headers).success) {
          return refuse(reply, 401, 'no-signature', {
            error: 'webhook-id, webhook-timestamp (unix seconds) and webhook-signature headers are required',
          });
        }
      },
    },
    async (request, reply) => {
      const { automation } = paramsSchema.parse(request.params);
      const headers = headerSchema.parse(request.headers);
      const id = headers['webhook-id'];
      const timestamp = Number(headers['webhook-timestamp']);
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      let text: string;
      try {
        // Signed bytes are compared as text by the package: text that is not UTF-8 has no one reading.
        text = utf8.decode(raw);
      } catch {
        return refuse(reply, 401, 'bad-signature', { error: 'signature does not match' });
      }
      if (!verify(id, timestamp, text, headers['webhook-signature'])) {
        return refuse(reply, 401, 'bad-signature', { error: 'signature does not match' });
      }
      const skew = Math.abs(Math.floor(now() / 1000) - timestamp);
      if (skew > toleranceSeconds) {
        return refuse(reply, 401, 'timestamp-out-of-tolerance', {
          error: `webhook-timestamp is more than ${toleranceSeconds} s from the gateway's clock: re-sign with the current time`,
        });
      }
      const state = seen.get(id);
      if (state === 'delivered') {
        metrics.event({ accepted: true, reason: 'duplicate' });
        reply.log.info({ automation, reason: 'duplicate' }, 'event already delivered: not signalled again');
        return reply.code(200).send({ received: true, duplicate: true });
      }
      if (state === 'pending') {
        reply.header('retry-after', '1');
        return refuse(reply, 409, 'in-progress', { error: 'an event with this id is being delivered' });
      }

      let body: EventBody;
      try {
        body = parseBody(text);
      } catch (error) {
        const v = error as ValidationError;
        return refuse(reply, 400, 'malformed', { error: v.message, field: v.field });
      }
      const checked = parseAutomationEvent({
        id,
        ...(body.type === undefined ? {} : { type: body.type }),
        data: body.data ?? null,
        time: new Date(timestamp * 1000).toISOString(),
      });
      if (!checked.ok) {
        // The body fitted, the event does not: the same answer as a body over the limit.
        const status =
          checked.field === 'event.data' && checked.rule.includes(`${MAX_EVENT_BYTES}`) ? 413 : 400;
        return refuse(reply, status, status === 413 ? 'too-large' : 'malformed', {
          error: `${checked.field}: ${checked.rule}`,
          field: checked.field,
        });
      }
      const event = checked.event;

      seen.set(id, 'pending');
      try {
        await options.sink(automation, body.key, event);
      } catch (error) {
        seen.delete(id);
        if (error instanceof ValidationError) {
          return refuse(reply, 400, 'malformed', { error: error.message, field: error.field });
        }
        request.log.error(
          { automation, err: { name: (error as Error)?.name, message: (error as Error)?.message } },
          'event not delivered: Temporal unavailable, asking for a retry',
        );
        reply.header('retry-after', '10');
        return refuse(reply, 503, 'temporal-unavailable', { error: 'temporal unavailable, retry later' });
      }
      seen.set(id, 'delivered');
      metrics.event({ accepted: true, reason: 'signalled' });
      reply.log.info({ automation, reason: 'signalled' }, 'event delivered');
      return reply.code(200).send({ received: true });
    },
  );
};

/** The body as `{ key, type?, data? }`; a ValidationError names the field (`body` for the whole). */
function parseBody(text: string): EventBody {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ValidationError('body', 'must be JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ValidationError('body', 'must be a JSON object { key, type?, data? }');
  }
  const parsed = eventBodySchema.safeParse(json);
  if (!parsed.success) throw validationErrorFrom(parsed.error, 'body');
  return parsed.data;
}
