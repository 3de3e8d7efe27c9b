/**
 * The webhook gateway: HTTP in, Temporal signals out. The service calls a job's webhook once it
 * completes and tries twice more, 10 s apart, unless it gets a 200. The call is only a hint (the
 * workflow confirms with /status, and polls anyway), so the gateway's one job is to pass it on
 * quickly and safely:
 *
 * - the token in the URL must be the HMAC of the workflow id, the batch item (and a pipeline's
 *   stage) and the expiry, and not expired (worker/webhook-token.ts; else 401, nothing signalled);
 * - the body must look like a job's /status body, `id` and `status` at least (else 400);
 * - only `{ jobId, status }` goes into the signal: the output could be megabytes of history;
 * - a workflow that is closed or unknown is still a 200: a late or duplicated call is harmless,
 *   and a retry could not change anything;
 * - Temporal unreachable is a 503: the one case where the service's retries can help, so the
 *   gateway asks for them rather than swallowing the hint (polling still covers it if all fail).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { z } from 'zod';
import type { BatchJobReports } from '../activities/batch-job-reports';
import type { TaskLooks } from '../activities/task-looks';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import { terminalStatuses } from '../api/schemas/job';
import {
  type BatchHintAsk,
  batchWantsHintQuery,
  batchWebhooksSignal,
} from '../workflows/batch/batch-definitions';
import { jobWebhookSignal } from '../workflows/job/job-definitions';
import { type BatchHint, createBatchHintSender } from './batch-hint-signals';
import { DEFAULT_BODY_LIMIT_BYTES } from './config';
import { type EventIngressOptions, registerEventIngress } from './event-ingress';
import { boundedBodyReader } from './gateway-body';
import { createLogger, type Logger } from './logger';
import { verifyWebhookToken } from './webhook-token';

/** How long one signal may take before the caller gets a 503 (the service then retries in 10 s). */
export const DEFAULT_SIGNAL_TIMEOUT_MS = 5_000;

/**
 * When a batch answers 'wait' (the job's page has not answered yet), it is asked again after these
 * pauses, within the signal timeout; still 'wait' then, it is signalled (a hint too many is
 * harmless, one too few costs an orphan's adoption).
 */
export const BATCH_HINT_PAUSES_MS = [250, 750, 1_500, 2_000] as const;

// Temporal allows workflow ids of up to 1000 bytes; percent-encoded that is at most three times as long.
const MAX_ENCODED_WORKFLOW_ID = 3 * 1000;

/**
 * A job's /status body, read leniently: the spec does not fix the webhook payload, so only what
 * the signal needs is required and every other field is dropped. The caps only stop a body that
 * passed the token check from pushing an absurd value into history.
 */
export const webhookBodySchema = z.object({
  id: z.string().min(1).max(1024),
  status: z.string().min(1).max(128),
});

export type WebhookBody = z.infer<typeof webhookBodySchema>;

const paramsSchema = z.object({ workflowId: z.string().min(1) });
// A repeated `token` arrives as an array and fails here, as it should.
const querySchema = z.object({
  token: z.string().min(1),
  /** A batch item's index (batches add it to each job's URL so that an orphan names its item). */
  item: z
    .string()
    .regex(/^\d{1,9}$/)
    .optional(),
  /** A pipeline's job: the stage it belongs to (a piece has a job at each), covered by the token. */
  stage: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
    .optional(),
  /** When the token expires (unix seconds): covered by the token (worker/webhook-token.ts). */
  exp: z.string().regex(/^\d{1,12}$/),
});

export interface WebhookGatewayOptions {
  /** Signals go through it; its namespace is the workflows' namespace. */
  client: Client;
  host?: string;
  /** 0 (default) takes any free port; `url` tells which. */
  port?: number;
  /** Accepted secrets: the signing one and any still honoured during a rotation. */
  secrets: readonly string[];
  bodyLimitBytes?: number;
  signalTimeoutMs?: number;
  logger?: Logger;
  /** Webhooks received, accepted and refused by reason (worker/metrics.ts); default: not counted. */
  metrics?: LibraryMetrics;
  /** Signed events in at `POST /events/{automation}` (worker/event-ingress.ts); absent: no such route. */
  events?: EventIngressOptions;
  /** Shared with the batch watchers of the worker in this process (activities/batch-job-reports.ts). */
  batchJobReports?: BatchJobReports;
  /** Shared with the job pollers of the worker in this process (activities/task-looks.ts). */
  taskLooks?: TaskLooks;
}

export interface WebhookGateway {
  /** Where it listens, e.g. http://127.0.0.1:41234 (not the public URL, which a proxy may front). */
  url: string;
  port: number;
  app: FastifyInstance;
  close(): Promise<void>;
}

type Outcome = 'signalled' | 'not-needed' | 'deferred' | 'workflow-closed' | 'temporal-unavailable';

async function deliver(
  client: Client,
  workflowId: string,
  body: WebhookBody,
  timeoutMs: number,
  sendBatchHint: (workflowId: string, hint: BatchHint) => Promise<void>,
  /** A batch's job: the item its URL names (a pipeline's: the piece, and the stage of the job). */
  named?: Omit<BatchHintAsk, 'jobId'>,
  reports?: BatchJobReports,
  taskLooks?: TaskLooks,
): Promise<{ outcome: Outcome; error?: unknown }> {
  // The webhook's status is any string the service sent, not only a known one.
  const reportsEnd = (terminalStatuses as readonly string[]).includes(body.status);
  if (named !== undefined && reports) {
    // A watcher here looks at it now; and a job a watcher here follows is no orphan: no query.
    if (reportsEnd) reports.ended(body.id);
    if (reports.isWatched(body.id)) return { outcome: 'not-needed' };
    // Its page has not answered yet, but a submit here has its id: no orphan unless this process
    // dies first, which the service's next try (10 s on) covers, and its last try is answered as
    // usual. A signal now would be one event and a workflow task for a job the batch is about to know.
    if (reports.mayDefer(body.id)) return { outcome: 'deferred' };
  }
  if (named !== undefined) {
    // A batch's job: a query (no history event) first, and a signal only for a possible orphan.
    const deadline = Date.now() + timeoutMs;
    const ask = () =>
      client.withDeadline(deadline, () =>
        client.workflow.getHandle(workflowId).query(batchWantsHintQuery, { ...named, jobId: body.id }),
      );
    try {
      let wanted = await ask();
      for (const pause of BATCH_HINT_PAUSES_MS) {
        if (wanted !== 'wait' || Date.now() + pause >= deadline - 500) break;
        await sleep(pause);
        wanted = await ask();
      }
      if (!wanted) return { outcome: 'not-needed' };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { outcome: 'workflow-closed' };
      // Anything else: the signal below decides (a hint too many is harmless).
    }
  }
  try {
    if (named !== undefined) {
      // Gathered with the batch's other hints of the moment into one signal.
      await sendBatchHint(workflowId, { jobId: body.id, status: body.status, ...named });
      return { outcome: 'signalled' };
    }
    // The workflow looks at a reported end itself: a poller here leaves the job to that look a moment.
    if (reportsEnd) taskLooks?.began(body.id);
    // Without a deadline the SDK retries an unreachable server for a long while and the service's
    // call would time out on its side; a bounded wait gives it a clean 503 to retry on.
    await client.withDeadline(Date.now() + timeoutMs, () =>
      client.workflow.getHandle(workflowId).signal(jobWebhookSignal, { jobId: body.id, status: body.status }),
    );
    return { outcome: 'signalled' };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { outcome: 'workflow-closed' };
    return { outcome: 'temporal-unavailable', error };
  }
}

function parseBody(raw: unknown): WebhookBody | undefined {
  if (!Buffer.isBuffer(raw) || raw.length === 0) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = webhookBodySchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** The Fastify app, not yet listening: for `startWebhookGateway`, and for mounting elsewhere. */
export function buildWebhookGateway(options: WebhookGatewayOptions): FastifyInstance {
  const { client } = options;
  const secrets = [...options.secrets];
  if (secrets.length === 0) throw new Error('the webhook gateway needs at least one secret');
  const bodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const signalTimeoutMs = options.signalTimeoutMs ?? DEFAULT_SIGNAL_TIMEOUT_MS;
  const logger = options.logger ?? createLogger({ secrets, name: 'webhook-gateway' });
  const metrics = options.metrics ?? noopMetrics;
  const sendBatchHint = createBatchHintSender((workflowId, hints) =>
    client.withDeadline(Date.now() + signalTimeoutMs, () =>
      client.workflow.getHandle(workflowId).signal(batchWebhooksSignal, { hints }),
    ),
  );

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Fastify's request lines carry req.url, and with it the token: the gateway writes its own.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    routerOptions: { maxParamLength: MAX_ENCODED_WORKFLOW_ID },
  });

  // Any content type, read as bytes: the spec does not say what the service sends, and the body is
  // parsed here, after the token check, with errors that never echo the request. A body over a
  // route's limit gets a 413 its sender can read (worker/gateway-body.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', boundedBodyReader());

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not found' }));

  app.setErrorHandler((error: { statusCode?: number; code?: string }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413) return reply.code(413).send({ error: `body larger than ${bodyLimit} bytes` });
    if (status >= 400 && status < 500) return reply.code(status).send({ error: 'bad request' });
    request.log.error({ code: error.code }, 'webhook gateway error');
    return reply.code(500).send({ error: 'internal error' });
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  if (options.events) registerEventIngress(app, options.events);

  app.post(
    '/webhooks/:workflowId',
    {
      // Before the body is read: a caller without the right token costs us no buffering.
      onRequest: async (request, reply) => {
        const params = paramsSchema.safeParse(request.params);
        const query = querySchema.safeParse(request.query);
        if (
          !params.success ||
          !query.success ||
          !verifyWebhookToken(secrets, params.data.workflowId, query.data.token, {
            ...(query.data.item === undefined ? {} : { item: Number(query.data.item) }),
            ...(query.data.stage === undefined ? {} : { stage: query.data.stage }),
            expiresAt: Number(query.data.exp),
          })
        ) {
          request.log.warn(
            {
              workflowId: params.success ? params.data.workflowId : undefined,
              reason: query.success ? 'bad token' : 'no token',
            },
            'webhook refused',
          );
          metrics.webhook({ accepted: false, reason: query.success ? 'bad-token' : 'no-token' });
          return reply.code(401).send({ error: 'unauthorized' });
        }
      },
    },
    async (request, reply) => {
      const { workflowId } = paramsSchema.parse(request.params);
      const body = parseBody(request.body);
      if (!body) {
        request.log.warn(
          { workflowId },
          'webhook body malformed: a JSON object with string id and status is expected',
        );
        metrics.webhook({ accepted: false, reason: 'malformed' });
        return reply.code(400).send({ error: 'a JSON object with string fields id and status is expected' });
      }
      const { item, stage } = querySchema.safeParse(request.query).data ?? {};
      const { outcome, error } = await deliver(
        client,
        workflowId,
        body,
        signalTimeoutMs,
        sendBatchHint,
        item === undefined ? undefined : { item: Number(item), ...(stage === undefined ? {} : { stage }) },
        options.batchJobReports,
        options.taskLooks,
      );
      const fields = { workflowId, jobId: body.id, status: body.status, outcome };
      if (outcome === 'temporal-unavailable') {
        request.log.error(
          { ...fields, err: error },
          'webhook not delivered: Temporal unavailable, asking for a retry',
        );
        metrics.webhook({ accepted: false, reason: 'temporal-unavailable' });
        return reply
          .code(503)
          .header('retry-after', '10')
          .send({ error: 'temporal unavailable, retry later' });
      }
      if (outcome === 'deferred') {
        metrics.webhook({ accepted: true, reason: outcome });
        request.log.info(
          fields,
          'webhook of a batch job whose submit has not answered yet: asked again later',
        );
        return reply.code(503).header('retry-after', '10').send({ error: 'not ready, retry later' });
      }
      metrics.webhook({ accepted: true, reason: outcome });
      request.log.info(
        fields,
        outcome === 'signalled'
          ? 'webhook delivered'
          : outcome === 'not-needed'
            ? 'webhook of a batch job the batch watches anyway: not signalled'
            : 'webhook for a closed or unknown workflow ignored',
      );
      return reply.code(200).send({ received: true });
    },
  );

  return app;
}

export async function startWebhookGateway(options: WebhookGatewayOptions): Promise<WebhookGateway> {
  const app = buildWebhookGateway(options);
  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  // Every webhook is answered within the hint pauses and the signal deadline: a connection still
  // open after that is cut, so a SIGTERM stops the gateway in bounded time (seen: connections of
  // the emulator's sender held a gateway open for over 20 s after close() began).
  const lastAnswerMs = (options.signalTimeoutMs ?? DEFAULT_SIGNAL_TIMEOUT_MS) * 2 + 1_000;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    app,
    async close() {
      const cut = setTimeout(() => app.server.closeAllConnections(), lastAnswerMs);
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
