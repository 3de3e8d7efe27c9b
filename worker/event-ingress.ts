/**
 * `POST /events/{automation}?source={name}`: events from outside senders, verified by the source's
 * scheme, mapped from the sender's own body to an automation event, and signalled to the
 * automation (signalWithStart). Without `source`, the source named `default` is meant (the
 * library's own `{ key, type?, data? }` body signed like Standard Webhooks: EVENT_SIGNING_SECRETS).
 *
 * What the gateway answers, in the order it checks, and why (every message is fixed: nothing of
 * the request, a secret or an internal error is ever echoed):
 *
 * - an automation no worker of this deployment registers (the gateway loads the same automations
 *   module as the workers): 404, before the body is read; nothing is started;
 * - an unknown source: 404; a source not bound to this automation: 403 (before the body is read);
 * - a body over the limit: 413, once the sender has written it (worker/gateway-body.ts);
 * - an empty body: 400 (no sender signs one);
 * - credentials missing or malformed: 401; not matching any of the source's secrets: 401;
 * - a correctly signed timestamp more than the source's tolerance from our clock: 401 (a stale
 *   credential; a sender retrying re-signs with a fresh timestamp);
 * - a correctly signed body that is not UTF-8 JSON, or nested deeper than the limit: 400, in
 *   every scheme (verification never parses: see worker/event-verify.ts);
 * - a body from which the source's mapping yields no key or no id: 422 naming the path; an event
 *   over the event size limit: 413;
 * - an id of this source already delivered lately: 200 `{ duplicate: true }`, nothing signalled
 *   (senders retry on any non-2xx; the 200 ends that); the same id being delivered by a concurrent
 *   request: 409 with retry-after;
 * - Temporal did not accept the signal in time: 503 with retry-after, and the id is released, so
 *   the sender's retry is delivered. 200 only once Temporal accepted the signal.
 *
 * Replays: the signature (and for timestamped schemes the tolerance) keeps out forged and old
 * requests; the replay guard (worker/event-replay.ts) answers recent repeats without a signal; the
 * automation's de-duplication by event id is the durable guard across replicas and restarts.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { type AutomationEvent, MAX_EVENT_BYTES } from '../contracts/automation-input';
import { bodyText, DEFAULT_EVENT_MAX_DEPTH, JSON_BODY_MESSAGES, parseJsonBody } from './event-json';
import { mapEvent, transformHeaders } from './event-mapping';
import {
  DEFAULT_REPLAY_CACHE_SIZE,
  DEFAULT_REPLAY_WINDOW_SECONDS,
  memoryReplayGuard,
  type ReplayGuard,
} from './event-replay';
import {
  DEFAULT_SOURCE_NAME,
  DEFAULT_SOURCE_TOLERANCE_SECONDS,
  type EventSource,
  sourcesByName,
} from './event-sources';
import { credentialsRule, verifyEventRequest } from './event-verify';

export const DEFAULT_EVENT_TOLERANCE_SECONDS = DEFAULT_SOURCE_TOLERANCE_SECONDS;
/**
 * Room for a sender's body: the event itself must fit MAX_EVENT_BYTES, but a sender's body carries
 * more than the event keeps (a mapping may take a part of it), so the body may be larger.
 */
export const DEFAULT_EVENT_MAX_BODY_BYTES = 1024 * 1024;
export { DEFAULT_EVENT_MAX_DEPTH, DEFAULT_REPLAY_CACHE_SIZE, DEFAULT_REPLAY_WINDOW_SECONDS };

/** What reaches the automation: `{ id, type?, data, time }`, checked by the automation's schema. */
export type IngressEvent = AutomationEvent;

/** Passes an accepted event on (by signalWithStart in production); a throw means not delivered. */
export type EventSink = (automation: string, key: string, event: IngressEvent) => Promise<void>;

export type EventRefusal =
  | 'unknown-automation'
  | 'unknown-source'
  | 'source-not-bound'
  | 'no-signature'
  | 'bad-signature'
  | 'timestamp-out-of-tolerance'
  | 'in-progress'
  | 'malformed'
  | 'unmapped'
  | 'too-large'
  | 'temporal-unavailable';

export type EventVerdict =
  | { accepted: true; reason: 'signalled' | 'duplicate' }
  | { accepted: false; reason: EventRefusal };

/** Events received, accepted and refused by reason (worker/event-metrics.ts); labels from fixed sets. */
export interface EventMetrics {
  event(verdict: EventVerdict): void;
}

export const noopEventMetrics: EventMetrics = { event: () => {} };

export interface EventIngressOptions {
  /** The automations the workers register: events for any other name are 404. */
  automations: readonly string[];
  /** Who may send, how each is verified and mapped (worker/event-sources.ts). */
  sources: readonly EventSource[];
  sink: EventSink;
  /** Bytes of a sender's body; default 1 MiB. */
  maxBodyBytes?: number;
  /** Nesting of objects and arrays in a body; default 32. */
  maxDepth?: number;
  /** The fast-path replay guard; default: in memory, per process (see worker/event-replay.ts). */
  replayGuard?: ReplayGuard;
  replayCacheSize?: number;
  replayWindowSeconds?: number;
  metrics?: EventMetrics;
  /** Milliseconds since the epoch; tests pass a fixed clock. */
  now?: () => number;
}

const paramsSchema = z.object({ automation: z.string() });
const querySchema = z.object({ source: z.string().optional() });

/** The fixed answers, one per refusal. */
const MESSAGES = {
  'unknown-automation': 'no automation of this name is registered',
  'unknown-source': 'no event source of this name',
  'source-not-bound': 'this source may not send events to this automation',
  'bad-signature': 'signature does not match',
  'in-progress': 'an event with this id is being delivered',
  'temporal-unavailable': 'temporal unavailable, retry later',
} as const;

/** Registers the route in its own scope (its own 413 answer); call before the app listens. */
export function registerEventIngress(app: FastifyInstance, options: EventIngressOptions): void {
  app.register(eventIngress, options);
}

const eventIngress: FastifyPluginAsync<EventIngressOptions> = async (scope, options) => {
  const registered = new Set(options.automations);
  const sources = sourcesByName(options.sources);
  const bodyLimit = options.maxBodyBytes ?? DEFAULT_EVENT_MAX_BODY_BYTES;
  const maxDepth = options.maxDepth ?? DEFAULT_EVENT_MAX_DEPTH;
  const metrics = options.metrics ?? noopEventMetrics;
  const now = options.now ?? Date.now;
  const longestTolerance = Math.max(0, ...options.sources.map((source) => source.toleranceSeconds));
  const replay =
    options.replayGuard ??
    memoryReplayGuard({
      size: options.replayCacheSize ?? DEFAULT_REPLAY_CACHE_SIZE,
      // Never shorter than a timestamped signature stays valid (up to the tolerance either side).
      windowSeconds: Math.max(
        options.replayWindowSeconds ?? DEFAULT_REPLAY_WINDOW_SECONDS,
        2 * longestTolerance,
      ),
      now,
    });

  const refuse = (
    reply: FastifyReply,
    status: number,
    reason: EventRefusal,
    body: Record<string, unknown>,
  ) => {
    metrics.event({ accepted: false, reason });
    reply.log.warn({ reason, status }, 'event refused');
    return reply.code(status).send(body);
  };

  /** A body that is not an event, whoever sent it: 400 with the gateway's fixed message. */
  const refuseBody = (reply: FastifyReply, reason: keyof typeof JSON_BODY_MESSAGES) =>
    refuse(reply, 400, 'malformed', {
      error:
        reason === 'too-deep'
          ? `${JSON_BODY_MESSAGES['too-deep']} (at most ${maxDepth} levels)`
          : JSON_BODY_MESSAGES[reason],
      field: 'body',
    });

  scope.setErrorHandler((error: { statusCode?: number; code?: string }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413)
      return refuse(reply, 413, 'too-large', { error: `body larger than ${bodyLimit} bytes` });
    if (status >= 400 && status < 500) return refuse(reply, status, 'malformed', { error: 'bad request' });
    request.log.error({ code: error.code }, 'event ingress error');
    return reply.code(500).send({ error: 'internal error' });
  });

  /** The source of a request, or the refusal; decided from the URL alone. */
  const sourceOf = (
    automation: string,
    query: unknown,
  ): { source: EventSource } | { status: number; reason: EventRefusal } => {
    if (!registered.has(automation)) return { status: 404, reason: 'unknown-automation' };
    const name = querySchema.safeParse(query);
    const source = name.success ? sources.get(name.data.source ?? DEFAULT_SOURCE_NAME) : undefined;
    if (!source) return { status: 404, reason: 'unknown-source' };
    if (!source.automations.has(automation)) return { status: 403, reason: 'source-not-bound' };
    return { source };
  };

  scope.post(
    '/events/:automation',
    {
      bodyLimit,
      // Before the body is read: a request for nothing we serve costs us no buffering.
      onRequest: async (request, reply) => {
        const found = sourceOf(paramsSchema.parse(request.params).automation, request.query);
        if ('reason' in found)
          return refuse(reply, found.status, found.reason, {
            error: MESSAGES[found.reason as keyof typeof MESSAGES],
          });
      },
    },
    async (request, reply) => {
      const { automation } = paramsSchema.parse(request.params);
      const found = sourceOf(automation, request.query);
      if ('reason' in found) return refuse(reply, found.status, found.reason, { error: 'bad request' });
      const { source } = found;
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      // Nothing to verify and nothing to deliver: no sender's library signs an empty body.
      if (raw.length === 0) return refuseBody(reply, 'not-json');
      const nowMs = now();
      // Checked as the UTF-8 text every sender's library signs (a byte that is not UTF-8 read as
      // U+FFFD, as Stripe's library reads bytes): only a body signed so passes, and is then refused
      // below as not UTF-8, a 400 like any other signed body that is not an event.
      const verified = await verifyEventRequest(source, {
        headers: request.headers,
        body: raw.toString('utf8'),
        nowMs,
      });
      if (!verified.ok) {
        return refuse(reply, 401, verified.reason, {
          error:
            verified.reason === 'timestamp-out-of-tolerance'
              ? `the signed timestamp is more than ${source.toleranceSeconds} s from the gateway's clock: re-sign with the current time`
              : verified.reason === 'no-signature'
                ? credentialsRule(source)
                : MESSAGES[verified.reason],
        });
      }

      const text = bodyText(raw);
      if (text === undefined) return refuseBody(reply, 'not-utf8');
      const json = parseJsonBody(text, maxDepth);
      if (!json.ok) return refuseBody(reply, json.reason);
      const binding = source.automations.get(automation);
      if (binding === undefined)
        return refuse(reply, 403, 'source-not-bound', { error: MESSAGES['source-not-bound'] });
      const mapped = mapEvent(
        binding,
        source.scheme,
        {
          body: json.value,
          headers: transformHeaders(source.scheme, request.headers, source.hmac ? [source.hmac.header] : []),
        },
        new Date(verified.timestamp === undefined ? nowMs : verified.timestamp * 1000),
      );
      if (!mapped.ok) {
        return mapped.status === 413
          ? refuse(reply, 413, 'too-large', {
              error: `the event is larger than ${MAX_EVENT_BYTES} bytes`,
              field: mapped.field,
            })
          : refuse(reply, 422, 'unmapped', { error: `${mapped.field}: ${mapped.rule}`, field: mapped.field });
      }

      const replayId = `${source.name}\u0000${mapped.event.id}`;
      const state = await replay.claim(replayId);
      if (state === 'delivered') {
        metrics.event({ accepted: true, reason: 'duplicate' });
        reply.log.info(
          { automation, source: source.name, reason: 'duplicate' },
          'event already delivered: not signalled again',
        );
        return reply.code(200).send({ received: true, duplicate: true });
      }
      if (state === 'pending') {
        reply.header('retry-after', '1');
        return refuse(reply, 409, 'in-progress', { error: MESSAGES['in-progress'] });
      }
      try {
        await options.sink(automation, mapped.key, mapped.event);
      } catch (error) {
        await replay.release(replayId);
        if (error instanceof ValidationError)
          return refuse(reply, 422, 'unmapped', { error: error.message, field: error.field });
        request.log.error(
          { automation, source: source.name, err: { name: (error as Error)?.name } },
          'event not delivered: Temporal unavailable, asking for a retry',
        );
        reply.header('retry-after', '10');
        return refuse(reply, 503, 'temporal-unavailable', { error: MESSAGES['temporal-unavailable'] });
      }
      await replay.delivered(replayId);
      metrics.event({ accepted: true, reason: 'signalled' });
      reply.log.info({ automation, source: source.name, reason: 'signalled' }, 'event delivered');
      return reply.code(200).send({ received: true });
    },
  );
};
