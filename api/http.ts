import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Agent, type Dispatcher, request } from 'undici';
import type { z } from 'zod';
import { delayBefore429Retry, type Retry429Policy, sleep } from './backoff';
import { type CallInfo, errorFromFault, errorFromResponse, invalidResponse } from './classify';
import type { ServiceConfig } from './config';
import { ServiceError } from './errors';
import { callOutcome, type LibraryMetrics, noopMetrics } from './metrics';
import {
  type JobOperation,
  type RateLimiter,
  type Release,
  type RequestPriority,
  SendTimePassed,
} from './rate-limit';

export interface HttpCall {
  operation: string;
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Repeating it after the service processed it would create a second job or endpoint. */
  submit?: boolean;
  /** The client-side rate-limit lane, for job operations. */
  limit?: { endpointId: string; operation: JobOperation; priority?: RequestPriority };
  signal?: AbortSignal | undefined;
  /** Not sent after this time (ms since the epoch): a call the limiter holds past it fails unsent. */
  sendBy?: number | undefined;
  /**
   * Awaited right before each try goes out (after the limiter; a 429's retry too). When it rejects,
   * the call ends unsent (an Aborted error that never reached the service) with its reason.
   */
  beforeSend?: (() => Promise<void>) | undefined;
  /** For /runsync, which holds the response for up to `wait` ms. */
  headersTimeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  text: string;
  info: CallInfo;
}

export interface Transport {
  send(call: HttpCall): Promise<HttpResponse>;
  close(): Promise<void>;
}

/** One pooled, keep-alive dispatcher for the whole client, with every timeout bounded. */
export function createDispatcher(timeouts: ServiceConfig['timeouts']): Dispatcher {
  return new Agent({
    connect: { timeout: timeouts.connect },
    headersTimeout: timeouts.headers,
    bodyTimeout: timeouts.body,
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
  });
}

/** A call with a time to be sent (`sendBy`) that has passed. */
function late(call: HttpCall): boolean {
  return call.sendBy !== undefined && Date.now() > call.sendBy;
}

function notSentInTime(call: HttpCall): ServiceError {
  return new ServiceError({
    kind: 'Aborted',
    operation: call.operation,
    message: `${call.operation} not sent: its time to be sent had passed`,
    retryable: true,
    mayHaveReachedService: false,
  });
}

/** A call whose `beforeSend` refused it. */
function notSentBecause(call: HttpCall, reason: unknown): ServiceError {
  return new ServiceError({
    kind: 'Aborted',
    operation: call.operation,
    message: `${call.operation} not sent: ${reason instanceof Error ? reason.message : String(reason)}`,
    retryable: true,
    mayHaveReachedService: false,
  });
}

export function createTransport(options: {
  dispatcher: Dispatcher;
  ownsDispatcher: boolean;
  secrets: readonly string[];
  limiter: RateLimiter;
  retry429: Retry429Policy;
  metrics?: LibraryMetrics;
}): Transport {
  const { dispatcher, secrets, limiter, retry429 } = options;
  const metrics = options.metrics ?? noopMetrics;

  async function attempt(
    call: HttpCall,
    info: CallInfo,
  ): Promise<HttpResponse & { headers: Dispatcher.ResponseData['headers'] }> {
    // Past its time to be sent, a call takes no room in the limiter's window either.
    if (late(call)) throw notSentInTime(call);
    let release: Release | undefined;
    try {
      release = call.limit
        ? await limiter.acquire(
            call.limit.endpointId,
            call.limit.operation,
            call.signal,
            call.limit.priority,
            call.sendBy === undefined ? undefined : () => late(call),
          )
        : undefined;
    } catch (error) {
      if (error instanceof SendTimePassed) throw notSentInTime(call);
      throw errorFromFault(info, error, false, call.signal);
    }
    // Checked again once the limiter lets it go; not sent, it leaves the limiter's window too.
    if (late(call)) {
      release?.({ sent: false });
      throw notSentInTime(call);
    }
    if (call.beforeSend) {
      try {
        await call.beforeSend();
      } catch (error) {
        release?.({ sent: false });
        throw notSentBecause(call, error);
      }
      // Its time to be sent may have passed while the hook ran.
      if (late(call)) {
        release?.({ sent: false });
        throw notSentInTime(call);
      }
    }
    const started = performance.now();
    let status: number | undefined;
    // A child of the active span (the activity's, when tracing is on: worker/tracing.ts); a no-op
    // otherwise. No URL attribute: it names the job, and the operation says enough.
    const span = trace.getTracer('durable-serverless').startSpan(`${call.method} ${call.operation}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': call.method, 'serverless.operation': call.operation },
    });
    try {
      const response = await request(call.url, {
        method: call.method,
        headers: call.headers,
        body: call.body,
        dispatcher,
        signal: call.signal,
        ...(call.headersTimeoutMs !== undefined ? { headersTimeout: call.headersTimeoutMs } : {}),
      });
      const text = await response.body.text();
      status = response.statusCode;
      return { status: response.statusCode, headers: response.headers, text, info };
    } catch (error) {
      // Handed to undici: from here on the request may have been written.
      throw errorFromFault(info, error, true, call.signal);
    } finally {
      release?.();
      metrics.httpCall(call.operation, callOutcome(status), (performance.now() - started) / 1000);
      if (status !== undefined) span.setAttribute('http.response.status_code', status);
      if (status === undefined || status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  }

  return {
    async send(call) {
      const info: CallInfo = {
        operation: call.operation,
        method: call.method,
        url: call.url,
        submit: call.submit ?? false,
        secrets,
      };
      for (let retries = 0; ; retries++) {
        const response = await attempt(call, info);
        if (response.status >= 200 && response.status < 300) return response;
        const error = errorFromResponse(info, response.status, response.headers, response.text);
        // Only a 429 is retried here: the service refused it, so a retry cannot duplicate anything.
        const delay =
          response.status === 429 ? delayBefore429Retry(retries, error.retryAfterMs, retry429) : undefined;
        if (delay === undefined) throw error;
        metrics.rateLimitDelay(call.operation, delay);
        try {
          await sleep(delay, call.signal);
        } catch (reason) {
          throw errorFromFault(info, reason, false, call.signal);
        }
      }
    },
    async close() {
      if (options.ownsDispatcher) await dispatcher.close();
    },
  };
}

/** Parses a 2xx body with its schema; a body that does not match is an InvalidResponse. */
export function decodeJson<S extends z.ZodType>(response: HttpResponse, schema: S): z.infer<S> {
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    throw invalidResponse(response.info, response.status, response.text, 'not JSON');
  }
  return decodeValue(response, body, schema);
}

/** Parses a value taken from a response's body (such as GraphQL `data.<field>`) with its schema. */
export function decodeValue<S extends z.ZodType>(
  response: HttpResponse,
  value: unknown,
  schema: S,
): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const problem = issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : 'does not match';
    throw invalidResponse(response.info, response.status, response.text, problem);
  }
  return result.data;
}
