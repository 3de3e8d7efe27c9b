import type { z } from 'zod';
import type { ServiceConfig } from './config';
import { ValidationError, validationErrorFrom } from './errors';
import { decodeJson, type HttpCall, type Transport } from './http';
import { pathSegment } from './path';
import type { JobOperation } from './rate-limit';
import {
  healthResponseSchema,
  JOB_LIMITS,
  type JobRequestInput,
  jobRequestSchema,
  jobStatusSchema,
  jobSubmittedSchema,
  purgeResponseSchema,
  streamResponseSchema,
  ttlSchema,
  waitSchema,
} from './schemas/job';

export interface CallOptions {
  signal?: AbortSignal;
  /**
   * Not sent after this time (ms since the epoch): a call the rate limiter (or a 429's wait) holds
   * past it fails with an Aborted ServiceError that never reached the service.
   */
  sendBy?: number;
  /**
   * Awaited right before each try goes out (a 429's retry too); when it rejects, the call ends
   * unsent with an Aborted ServiceError that never reached the service, carrying its reason.
   */
  beforeSend?: () => Promise<void>;
}

// /runsync holds its answer for up to `wait` ms; the headers timeout must outlast it.
const RUNSYNC_HEADERS_MARGIN_MS = 15_000;

/**
 * Validates a job request for /run or /runsync and returns the JSON body to send; throws
 * ValidationError otherwise. The body is the caller's object as given, not the parsed
 * one: filling in the policy defaults would override the endpoint's own executionTimeout.
 */
export function jobRequestBody(request: JobRequestInput, target: 'run' | 'runSync'): string {
  const maxBytes = target === 'run' ? JOB_LIMITS.runMaxBytes : JOB_LIMITS.runSyncMaxBytes;
  const path = target === 'run' ? '/run' : '/runsync';
  const result = jobRequestSchema.safeParse(request);
  if (!result.success) throw validationErrorFrom(result.error, '');
  let body: string;
  try {
    body = JSON.stringify(request);
  } catch {
    throw new ValidationError('input', 'must be serializable as JSON');
  }
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > maxBytes) {
    throw new ValidationError(
      'payload',
      `the serialized request is ${bytes} bytes; ${path} accepts at most ${maxBytes} bytes`,
    );
  }
  return body;
}

function checked(field: string, value: unknown, schema: z.ZodType) {
  if (value === undefined) return;
  const result = schema.safeParse(value);
  if (!result.success) throw validationErrorFrom(result.error, field);
}

export function createJobOperations(config: ServiceConfig, transport: Transport) {
  const authorization = config.authScheme === 'bare' ? config.apiKey : `Bearer ${config.apiKey}`;

  function call(
    operation: JobOperation,
    endpointId: string,
    method: HttpCall['method'],
    path: string,
    options: CallOptions | undefined,
    extra: Partial<HttpCall> = {},
  ) {
    const endpoint = pathSegment('endpointId', endpointId);
    const headers: Record<string, string> = { authorization, accept: 'application/json' };
    // No content-type without a body: servers refuse an empty body announced as JSON.
    if (extra.body !== undefined) headers['content-type'] = 'application/json';
    return transport.send({
      operation,
      method,
      url: `${config.apiUrl}/${endpoint}/${path}`,
      headers,
      limit: { endpointId, operation },
      signal: options?.signal,
      sendBy: options?.sendBy,
      beforeSend: options?.beforeSend,
      ...extra,
    });
  }

  return {
    async run(endpointId: string, request: JobRequestInput, options?: CallOptions) {
      const body = jobRequestBody(request, 'run');
      const response = await call('run', endpointId, 'POST', 'run', options, { body, submit: true });
      return decodeJson(response, jobSubmittedSchema);
    },

    async runSync(endpointId: string, request: JobRequestInput, options?: CallOptions & { wait?: number }) {
      checked('wait', options?.wait, waitSchema);
      const body = jobRequestBody(request, 'runSync');
      const wait = options?.wait;
      const headersTimeoutMs = Math.max(
        config.timeouts.headers,
        (wait ?? JOB_LIMITS.waitDefaultMs) + RUNSYNC_HEADERS_MARGIN_MS,
      );
      const path = wait === undefined ? 'runsync' : `runsync?wait=${wait}`;
      const response = await call('runSync', endpointId, 'POST', path, options, {
        body,
        submit: true,
        headersTimeoutMs,
      });
      return decodeJson(response, jobStatusSchema);
    },

    async status(
      endpointId: string,
      jobId: string,
      options?: CallOptions & { ttl?: number; background?: boolean; urgent?: boolean },
    ) {
      checked('ttl', options?.ttl, ttlSchema);
      const job = pathSegment('jobId', jobId);
      const ttl = options?.ttl;
      const query = ttl === undefined ? '' : `?ttl=${ttl}`;
      // Setting a ttl goes ahead of plain looks in the rate limiter: late, it can let the service
      // delete the job (a submit lease's extension), whereas a late look only costs latency. So
      // does a look its caller marks urgent, one that holds more than itself while it waits.
      const priority =
        ttl !== undefined || options?.urgent ? 'urgent' : options?.background ? 'background' : 'normal';
      const response = await call('status', endpointId, 'GET', `status/${job}${query}`, options, {
        limit: { endpointId, operation: 'status', priority },
      });
      return decodeJson(response, jobStatusSchema);
    },

    async stream(endpointId: string, jobId: string, options?: CallOptions) {
      const job = pathSegment('jobId', jobId);
      const response = await call('stream', endpointId, 'GET', `stream/${job}`, options);
      return decodeJson(response, streamResponseSchema);
    },

    async cancel(endpointId: string, jobId: string, options?: CallOptions) {
      const job = pathSegment('jobId', jobId);
      const response = await call('cancel', endpointId, 'POST', `cancel/${job}`, options);
      return decodeJson(response, jobSubmittedSchema);
    },

    async retry(endpointId: string, jobId: string, options?: CallOptions) {
      const job = pathSegment('jobId', jobId);
      const response = await call('retry', endpointId, 'POST', `retry/${job}`, options);
      return decodeJson(response, jobSubmittedSchema);
    },

    async purgeQueue(endpointId: string, options?: CallOptions) {
      const response = await call('purgeQueue', endpointId, 'POST', 'purge-queue', options);
      return decodeJson(response, purgeResponseSchema);
    },

    async health(endpointId: string, options?: CallOptions) {
      const response = await call('health', endpointId, 'GET', 'health', options);
      return decodeJson(response, healthResponseSchema);
    },
  };
}

export type JobOperations = ReturnType<typeof createJobOperations>;
