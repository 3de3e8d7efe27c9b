import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Engine } from './engine';
import { LIMITS } from './limits';
import { contextOf, errorBody, HttpError, type Interface, routeConfig } from './routes/common';
import { registerGraphqlRoutes } from './routes/graphql';
import { registerJobRoutes } from './routes/jobs';
import { registerRestRoutes } from './routes/rest';
import { endpointParamsSchema, graphqlQuerySchema } from './schemas';
import type { Account } from './store';

/**
 * How much of an oversized body is read and thrown away before the 400 goes out. A client that
 * writes its whole body before reading (most do) would otherwise see the socket closed under it
 * (a reset) instead of the answer; past this bound the socket is closed anyway.
 */
const OVERSIZED_DRAIN_MAX_BYTES = 64 * 1024 * 1024;

// One fastify instance serves the three interfaces: /v2 (job operations), /graphql and /v1 (REST).
// A request goes: faults -> auth -> endpoint lookup -> rate limit (onRequest, before any body is
// read), then the body parser with the route's size limit, then the handler.

export function buildServer(engine: Engine): FastifyInstance {
  const app = fastify({
    logger: engine.options.logger ? { level: 'info' } : false,
    bodyLimit: LIMITS.runSyncMaxBytes,
    forceCloseConnections: true,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
  });

  // JSON only (the spec's content type), and an empty body is no body: clients send
  // `content-type: application/json` on POSTs that carry nothing (cancel, purge-queue).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    const buffer = body as Buffer;
    if (buffer.length === 0) return done(null, undefined);
    try {
      done(null, JSON.parse(buffer.toString('utf8')));
    } catch (error) {
      done(new HttpError(400, `request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    const config = routeConfig(request);
    if (!config) return;
    engine.clock.runDue();
    const params = request.params as Record<string, string | undefined>;
    const context = contextOf(request);

    const applied = engine.faults.match(config.operation, params.endpointId);
    const fault = applied?.rule;
    if (fault?.kind === 'status') {
      const status = fault.httpStatus ?? 500;
      if (status === 429) reply.header('retry-after', String(fault.retryAfterSeconds ?? 1));
      return reply.code(status).send(errorBody(config.iface, `injected fault: HTTP ${status}`));
    }
    if (fault?.kind === 'drop-before') {
      reply.hijack();
      request.raw.socket.destroy();
      return reply;
    }

    const account = authenticate(engine, config.iface, request);
    if (!account) {
      return reply.code(401).send(errorBody(config.iface, unauthorizedMessage(config.iface)));
    }
    context.account = account;
    if (config.iface !== 'jobs') {
      context.fault = applied;
      return;
    }

    const parsed = endpointParamsSchema.safeParse(params);
    const endpointId = parsed.success ? parsed.data.endpointId : (params.endpointId ?? '');
    const endpoint = parsed.success ? account.endpoints.get(endpointId) : undefined;
    if (!endpoint) return reply.code(404).send(errorBody('jobs', `endpoint ${endpointId} not found`));
    if (endpoint.fields.type !== 'QB') {
      return reply
        .code(400)
        .send(errorBody('jobs', `endpoint ${endpointId} is a load-balancing endpoint; it has no job queue`));
    }
    context.endpoint = endpoint;

    if (engine.options.rateLimits && config.rate) {
      const running = engine.scheduler.counts(endpoint).running;
      const decision = engine.rateLimiter.acquire(
        `${account.id}/${endpointId}/${config.rate}`,
        config.rate,
        running,
      );
      if (!decision.ok) {
        const key = `${endpointId} ${config.rate} ${decision.rule}`;
        engine.store.throttled.set(key, (engine.store.throttled.get(key) ?? 0) + 1);
        reply.header('retry-after', String(decision.retryAfterSeconds));
        return reply.code(429).send(errorBody('jobs', decision.reason));
      }
      reply.raw.once('close', decision.release);
    }
    // Only a request that gets through to its handler is slowed down or dropped after processing.
    context.fault = applied;
  });

  app.addHook('onSend', async (request, _reply, payload) => {
    const applied = contextOf(request).fault;
    const fault = applied?.rule;
    if (applied && fault?.kind === 'slow') {
      // Real milliseconds: a slow answer is about the client's own timeouts, which run in real time.
      // Removing the rule lets held answers go at once, so tests need not guess how long to hold.
      const signal = AbortSignal.any([engine.shutdown.signal, applied.released]);
      await sleep(fault.delayMs ?? 1000, undefined, { signal }).catch(() => undefined);
    } else if (fault?.kind === 'drop-after') {
      // The request was processed; the client never hears back.
      request.raw.socket.destroy();
    }
    return payload;
  });

  app.setErrorHandler(async (error: FastifyError | HttpError, request, reply) => {
    if ((error as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // Fastify refuses before reading the body (or stops half-way) and asks for the connection
      // to close: read the rest first, so the client gets its 400, then keep the connection.
      if (await drain(request.raw, OVERSIZED_DRAIN_MAX_BYTES)) reply.removeHeader('connection');
    }
    return sendError(error, request, reply);
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: `not found: ${request.method} ${request.url.split('?')[0]}` });
  });

  registerJobRoutes(app, engine);
  registerGraphqlRoutes(app, engine);
  registerRestRoutes(app, engine);
  return app;
}

function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  const config = routeConfig(request);
  const iface = config?.iface ?? 'jobs';
  if (error instanceof HttpError) {
    reply.headers(error.headers);
    return reply.code(error.status).send(errorBody(iface, error.message));
  }
  const code = (error as FastifyError).code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = config?.bodyLimit ?? LIMITS.runSyncMaxBytes;
    return reply
      .code(400)
      .send(
        errorBody(
          iface,
          `request body exceeds the ${limit}-byte limit of ${config?.label ?? 'this operation'}`,
        ),
      );
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return reply
      .code(400)
      .send(errorBody(iface, 'request body must be JSON (content-type: application/json)'));
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return reply.code(400).send(errorBody(iface, error.message));
  }
  request.log.error({ err: error }, 'emulator error');
  return reply.code(500).send(errorBody(iface, 'internal error'));
}

/** Reads and discards what is left of a request body, up to `maxBytes`; true when it all came. */
function drain(raw: IncomingMessage, maxBytes: number): Promise<boolean> {
  if (raw.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (whole: boolean) => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onError);
      raw.off('close', onError);
      resolve(whole);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = () => finish(raw.complete);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('error', onError);
    raw.once('close', onError);
    raw.resume();
  });
}

function authenticate(engine: Engine, iface: Interface, request: FastifyRequest): Account | undefined {
  const { accountByKey } = engine.store;
  if (iface === 'graphql') {
    const query = graphqlQuerySchema.safeParse(request.query);
    return query.success ? accountByKey.get(query.data.api_key) : undefined;
  }
  const header = request.headers.authorization?.trim();
  if (!header) return undefined;
  const bearer = /^Bearer\s+(\S+)$/i.exec(header);
  if (bearer) return accountByKey.get(bearer[1]!);
  // Job operations also take the bare key; REST only the bearer scheme.
  return iface === 'jobs' ? accountByKey.get(header) : undefined;
}

function unauthorizedMessage(iface: Interface): string {
  switch (iface) {
    case 'graphql':
      return 'unauthorized: pass a valid API key as the api_key query parameter';
    case 'rest':
      return 'unauthorized: send "Authorization: Bearer <API_KEY>" with a valid key';
    default:
      return 'unauthorized: send a valid API key in the authorization header';
  }
}
