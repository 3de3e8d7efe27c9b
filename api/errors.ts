import type { z } from 'zod';

export type ServiceErrorKind =
  | 'BadRequest'
  | 'Unauthorized'
  | 'NotFound'
  | 'RateLimited'
  | 'ServerError'
  | 'NetworkError'
  | 'Timeout'
  | 'InvalidResponse'
  | 'GraphQLError'
  | 'Aborted';

export interface ServiceErrorInit {
  kind: ServiceErrorKind;
  operation: string;
  message: string;
  status?: number;
  retryable: boolean;
  retryAfterMs?: number;
  bodyExcerpt?: string;
  mayHaveReachedService?: boolean;
  cause?: Error;
}

/**
 * The one error of all three interfaces. Everything it carries has already been
 * scrubbed of the API key by whoever built it (see `redact`), because errors end
 * up in logs, Temporal failures and workflow history.
 */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly kind: ServiceErrorKind;
  readonly operation: string;
  // Declared, not initialised: absent stays absent instead of becoming an own `undefined`.
  declare readonly status?: number;
  readonly retryable: boolean;
  declare readonly retryAfterMs?: number;
  declare readonly bodyExcerpt?: string;
  readonly mayHaveReachedService: boolean;

  constructor(init: ServiceErrorInit) {
    super(init.message, init.cause ? { cause: init.cause } : undefined);
    this.kind = init.kind;
    this.operation = init.operation;
    this.retryable = init.retryable;
    this.mayHaveReachedService = init.mayHaveReachedService ?? false;
    if (init.status !== undefined) this.status = init.status;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.bodyExcerpt !== undefined) this.bodyExcerpt = init.bodyExcerpt;
  }

  toJSON() {
    const cause =
      this.cause instanceof Error ? { name: this.cause.name, message: this.cause.message } : undefined;
    return {
      name: this.name,
      message: this.message,
      kind: this.kind,
      operation: this.operation,
      status: this.status,
      retryable: this.retryable,
      retryAfterMs: this.retryAfterMs,
      bodyExcerpt: this.bodyExcerpt,
      mayHaveReachedService: this.mayHaveReachedService,
      cause,
    };
  }
}

/** A request refused before anything was sent: `field` is the path of the bad value, `rule` what it breaks. */
export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  readonly field: string;
  readonly rule: string;

  constructor(field: string, rule: string) {
    super(`${field}: ${rule}`);
    this.field = field;
    this.rule = rule;
  }

  toJSON() {
    return { name: this.name, message: this.message, field: this.field, rule: this.rule };
  }
}

/** Bad configuration; `variable` names the environment variable (or option) and never its value. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly variable: string;
  readonly rule: string;

  constructor(variable: string, rule: string) {
    super(`${variable}: ${rule}`);
    this.variable = variable;
    this.rule = rule;
  }

  toJSON() {
    return { name: this.name, message: this.message, variable: this.variable, rule: this.rule };
  }
}

/** The first zod issue as a ValidationError; `root` prefixes the path so the field reads like the argument. */
export function validationErrorFrom(error: z.ZodError, root: string): ValidationError {
  const issue = error.issues[0];
  if (!issue) return new ValidationError(root, 'is invalid');
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return new ValidationError(
      [root, ...path].filter(Boolean).join('.'),
      `unknown field(s) ${issue.keys.join(', ')}`,
    );
  }
  return new ValidationError([root, ...path].filter(Boolean).join('.'), issue.message);
}

const REDACTED = '[REDACTED]';

/**
 * Removes every spelling of the secrets a message could carry: raw (headers, bodies
 * echoing the key), and URL-encoded (the GraphQL address carries `api_key=`).
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of new Set([
      secret,
      encodeURIComponent(secret),
      new URLSearchParams({ k: secret }).toString().slice(2),
    ])) {
      out = out.split(form).join(REDACTED);
    }
  }
  return out;
}

const EXCERPT_CHARS = 500;

/** A short, scrubbed piece of a response body, for errors. */
export function excerpt(body: string, secrets: readonly string[]): string | undefined {
  if (body.length === 0) return undefined;
  // Redact before cutting, so a key straddling the cut cannot survive half-visible.
  const clean = redact(body, secrets);
  return clean.length > EXCERPT_CHARS ? `${clean.slice(0, EXCERPT_CHARS)}…` : clean;
}
