import { parseRetryAfter } from './backoff';
import { excerpt, redact, ServiceError, type ServiceErrorKind } from './errors';

/** What an error needs to know about the call that failed. */
export interface CallInfo {
  operation: string;
  method: string;
  url: string;
  /** A call the service cannot de-duplicate: repeating it after it was processed creates a second job/endpoint. */
  submit: boolean;
  secrets: readonly string[];
}

// The path only: the GraphQL address carries the key in its query string.
function where(info: CallInfo): string {
  let path: string;
  try {
    path = new URL(info.url).pathname;
  } catch {
    path = '?';
  }
  return redact(`${info.operation} (${info.method} ${path})`, info.secrets);
}

function kindOfStatus(status: number): ServiceErrorKind {
  if (status === 400) return 'BadRequest';
  if (status === 401 || status === 403) return 'Unauthorized';
  if (status === 404) return 'NotFound';
  if (status === 408) return 'Timeout';
  if (status === 429) return 'RateLimited';
  if (status >= 500) return 'ServerError';
  if (status >= 400) return 'BadRequest';
  return 'InvalidResponse';
}

/** The service's own words, when the body has them in one of the usual places. */
export function messageOfBody(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (body && typeof body === 'object') {
      const record = body as Record<string, unknown>;
      if (typeof record.error === 'string') return record.error;
      if (typeof record.message === 'string') return record.message;
      if (Array.isArray(record.errors)) {
        const messages = record.errors
          .map((item: unknown) =>
            item && typeof item === 'object' ? (item as Record<string, unknown>).message : undefined,
          )
          .filter((message): message is string => typeof message === 'string');
        if (messages.length > 0) return messages.join('; ');
      }
    }
  } catch {
    // Not JSON: the excerpt says what there is.
  }
  return undefined;
}

function shorten(text: string, max = 200): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

export function errorFromResponse(
  info: CallInfo,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
): ServiceError {
  const kind = kindOfStatus(status);
  const said = messageOfBody(text) ?? text;
  const detail = said ? `: ${shorten(redact(said, info.secrets))}` : '';
  const retryAfterMs = parseRetryAfter(headers['retry-after']);
  return new ServiceError({
    kind,
    operation: info.operation,
    message: `${where(info)}: HTTP ${status}${detail}`,
    status,
    retryable: kind === 'RateLimited' || kind === 'ServerError' || kind === 'Timeout',
    retryAfterMs,
    bodyExcerpt: excerpt(text, info.secrets),
    // A 5xx may come after the job was queued (a crash on the way out, a proxy in front).
    mayHaveReachedService: info.submit && status >= 500,
  });
}

/** A 2xx whose body is not what the spec says: the request was processed all the same. */
export function invalidResponse(info: CallInfo, status: number, text: string, problem: string): ServiceError {
  return new ServiceError({
    kind: 'InvalidResponse',
    operation: info.operation,
    message: `${where(info)}: HTTP ${status} with an unexpected body: ${redact(problem, info.secrets)}`,
    status,
    retryable: false,
    bodyExcerpt: excerpt(text, info.secrets),
    mayHaveReachedService: info.submit,
  });
}

// Failures that happen before any byte of the request can have been written.
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_DESTROYED',
  'UND_ERR_CLOSED',
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
]);
// The client was closed or misused: trying again cannot help.
const PERMANENT = new Set([
  'UND_ERR_DESTROYED',
  'UND_ERR_CLOSED',
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
]);

const TIMEOUT_TEXT: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'no connection within the connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'no response within the headers timeout',
  UND_ERR_BODY_TIMEOUT: 'the response body stalled past the body timeout',
  ETIMEDOUT: 'the connection timed out',
};

function codeOf(error: unknown): string | undefined {
  if (!error || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return codeOf((error as { cause?: unknown }).cause);
}

/** A copy of a low-level error that is safe to keep as `cause`: name, code and a scrubbed message only. */
function scrubbedCause(error: unknown, secrets: readonly string[]): Error {
  const original = error instanceof Error ? error : new Error(String(error));
  const copy = new Error(redact(original.message, secrets));
  copy.name = original.name;
  const code = codeOf(original);
  if (code) Object.assign(copy, { code });
  return copy;
}

/**
 * A request that got no HTTP answer. `sent` tells whether the request was handed to
 * the connection; for a submit that is the line between "certainly not processed"
 * and "may have been processed".
 */
export function errorFromFault(
  info: CallInfo,
  error: unknown,
  sent: boolean,
  signal: AbortSignal | undefined,
): ServiceError {
  const cause = scrubbedCause(error, info.secrets);
  if (signal?.aborted) {
    // A deadline the caller set is a timeout (worth retrying); a cancellation is not.
    const timedOut = (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError';
    return new ServiceError({
      kind: timedOut ? 'Timeout' : 'Aborted',
      operation: info.operation,
      message: `${where(info)}: ${timedOut ? 'timed out (caller deadline)' : 'aborted by the caller'}${sent ? '' : ' before sending'}`,
      retryable: timedOut,
      mayHaveReachedService: info.submit && sent,
      cause,
    });
  }
  const code = codeOf(error);
  const timeout = code ? TIMEOUT_TEXT[code] : undefined;
  const reached = sent && !(code && NOT_SENT.has(code));
  const permanent = code !== undefined && PERMANENT.has(code);
  return new ServiceError({
    kind: timeout ? 'Timeout' : 'NetworkError',
    operation: info.operation,
    message: `${where(info)}: ${timeout ?? `network error${code ? ` ${code}` : ''}: ${shorten(cause.message)}`}`,
    retryable: !permanent,
    mayHaveReachedService: info.submit && reached,
    cause,
  });
}
