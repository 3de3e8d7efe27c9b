import type { FastifyInstance, FastifyRequest } from 'fastify';
import { healthBody } from '../endpoints';
import type { Engine } from '../engine';
import {
  cancelJob,
  drainChunks,
  purgeQueue,
  retryJob,
  setTtl,
  statusBody,
  submitJob,
  waitForJob,
} from '../jobs';
import { isTerminal, LIMITS, type RateOperation } from '../limits';
import { jobParamsSchema, jobRequestSchema, statusQuerySchema, waitQuerySchema } from '../schemas';
import type { Job } from '../store';
import {
  abortOnClose,
  HttpError,
  parseWith,
  type RouteConfig,
  requireEndpoint,
  routeOptions,
} from './common';

// Job operations under /v2/{endpoint_id}. Auth, the endpoint lookup, faults and rate limits happen in
// the shared onRequest hook (server.ts); these handlers see an authorised request for a known endpoint.

const jobRoute = (
  operation: RouteConfig['operation'],
  label: string,
  rate?: RateOperation,
  bodyLimit: number = LIMITS.otherMaxBytes,
) => routeOptions({ operation, iface: 'jobs', rate, label, bodyLimit });

export function registerJobRoutes(app: FastifyInstance, engine: Engine): void {
  const findJob = (request: FastifyRequest): Job => {
    const endpoint = requireEndpoint(request);
    const { jobId } = parseWith(jobParamsSchema, request.params, 'path');
    const job = endpoint.jobs.get(jobId);
    if (!job) throw notFound(jobId);
    return job;
  };

  app.post('/v2/:endpointId/run', jobRoute('run', '/run', 'run', LIMITS.runMaxBytes), async (request) => {
    const endpoint = requireEndpoint(request);
    const body = parseWith(jobRequestSchema, request.body, 'job request');
    const job = submitJob(engine, endpoint, body, { sync: false });
    return { id: job.id, status: job.status };
  });

  app.post(
    '/v2/:endpointId/runsync',
    jobRoute('runsync', '/runsync', 'runsync', LIMITS.runSyncMaxBytes),
    async (request, reply) => {
      const endpoint = requireEndpoint(request);
      const { wait } = parseWith(waitQuerySchema, request.query, 'query');
      const body = parseWith(jobRequestSchema, request.body, 'job request');
      const job = submitJob(engine, endpoint, body, { sync: true, wait });
      const waitMs = wait ?? LIMITS.waitDefaultMs;
      await waitForJob(engine, job, () => isTerminal(job.status), waitMs, abortOnClose(reply));
      if (job.removed) throw notFound(job.id);
      // Not finished within the wait: the current state, as /status would answer.
      return statusBody(engine, job);
    },
  );

  const status = async (request: FastifyRequest) => {
    const { ttl } = parseWith(statusQuerySchema, request.query, 'query');
    const job = findJob(request);
    if (ttl !== undefined && !setTtl(engine, job, ttl)) throw notFound(job.id);
    return statusBody(engine, job);
  };
  app.get('/v2/:endpointId/status/:jobId', jobRoute('status', '/status', 'status'), status);
  // The hosted service's documentation also shows POST for /status.
  app.post('/v2/:endpointId/status/:jobId', jobRoute('status', '/status', 'status'), status);

  // The hosted service's long-polling status, used by the public SDKs' runSync.
  app.get(
    '/v2/:endpointId/status-sync/:jobId',
    jobRoute('status', '/status-sync', 'status'),
    async (request, reply) => {
      const { wait } = parseWith(waitQuerySchema, request.query, 'query');
      const job = findJob(request);
      await waitForJob(
        engine,
        job,
        () => isTerminal(job.status),
        wait ?? LIMITS.waitDefaultMs,
        abortOnClose(reply),
      );
      if (job.removed) throw notFound(job.id);
      return statusBody(engine, job);
    },
  );

  app.get(
    '/v2/:endpointId/stream/:jobId',
    jobRoute('stream', '/stream', 'stream'),
    async (request, reply) => {
      const job = findJob(request);
      // A short long-poll, so a client looping on /stream does not spin while nothing is produced.
      await waitForJob(
        engine,
        job,
        () => job.chunks.length > 0 || isTerminal(job.status),
        engine.options.streamWaitMs,
        abortOnClose(reply),
      );
      if (job.removed) throw notFound(job.id);
      const chunks = drainChunks(job);
      return engine.options.streamShape === 'object' ? { status: job.status, stream: chunks } : chunks;
    },
  );

  app.post('/v2/:endpointId/cancel/:jobId', jobRoute('cancel', '/cancel', 'cancel'), async (request) => {
    const job = findJob(request);
    cancelJob(engine, job);
    return { id: job.id, status: job.status };
  });

  app.post('/v2/:endpointId/retry/:jobId', jobRoute('retry', '/retry'), async (request) => {
    const job = findJob(request);
    if (!retryJob(engine, job)) {
      throw new HttpError(
        400,
        `job ${job.id} is ${job.status}; only FAILED or TIMED_OUT jobs can be retried`,
      );
    }
    return { id: job.id, status: job.status };
  });

  app.post(
    '/v2/:endpointId/purge-queue',
    jobRoute('purge-queue', '/purge-queue', 'purge-queue'),
    async (request) => {
      const removed = purgeQueue(engine, requireEndpoint(request));
      return { removed, status: 'completed' };
    },
  );

  app.get('/v2/:endpointId/health', jobRoute('health', '/health'), async (request) =>
    healthBody(engine, requireEndpoint(request)),
  );

  // In the spec's rate-limit table without a shape: the emulator lists the unfinished jobs.
  app.get('/v2/:endpointId/requests', jobRoute('requests', '/requests', 'requests'), async (request) => {
    const endpoint = requireEndpoint(request);
    const open: Array<{ id: string; status: string }> = [];
    for (const job of endpoint.jobs.values()) {
      if (!isTerminal(job.status)) open.push({ id: job.id, status: job.status });
    }
    return open;
  });

  app.post('/v2/:endpointId/openai/*', jobRoute('openai', '/openai', 'openai'), async () => {
    throw new HttpError(501, 'the OpenAI-compatible routes are not emulated');
  });
}

function notFound(jobId: string): HttpError {
  return new HttpError(
    404,
    `job ${jobId} not found: never submitted here, or its ttl or result retention ran out`,
  );
}
