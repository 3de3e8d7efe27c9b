import ms, { type StringValue } from 'ms';
import { z } from 'zod';
import { ConfigError } from './errors';

/** A base address: http(s), no credentials, query or fragment; trailing slashes dropped. */
/** An http(s) base URL (without credentials, query or fragment), trailing slashes dropped. */
export function baseUrl(versionSegment?: '/v1' | '/v2') {
  const rule = versionSegment
    ? `must be an http(s) URL whose path ends with ${versionSegment}, without credentials, query or fragment`
    : 'must be an http(s) URL without credentials, query or fragment';
  return z.string({ error: rule }).transform((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: rule });
      return z.NEVER;
    }
    const path = url.pathname.replace(/\/+$/, '');
    const ok =
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      !url.username &&
      !url.password &&
      !url.search &&
      !url.hash &&
      (!versionSegment || path.endsWith(versionSegment));
    if (!ok) {
      ctx.addIssue({ code: 'custom', message: rule });
      return z.NEVER;
    }
    return `${url.origin}${path}`;
  });
}

const TIMEOUT_RULE = "must be a positive duration (ms, or a string such as '30s' or '2 minutes')";

/** A timeout: ms, or a string the `ms` package reads ('30s', '2 minutes'); parsed to whole ms. */
function timeoutSchema(fallback: number) {
  return z
    .union([z.number(), z.string()], { error: TIMEOUT_RULE })
    .default(fallback)
    .transform((value, ctx) => {
      let parsed: number;
      try {
        parsed = typeof value === 'number' ? value : ms(value as StringValue);
      } catch {
        parsed = Number.NaN;
      }
      if (!Number.isFinite(parsed) || parsed <= 0) {
        ctx.addIssue({ code: 'custom', message: TIMEOUT_RULE });
        return z.NEVER;
      }
      return Math.round(parsed);
    });
}

/** The HTTP timeouts of every call; parsed to ms under the same names (parsing again changes nothing). */
export const timeoutsSchema = z.strictObject({
  /** Opening the connection (default 10 s). */
  connect: timeoutSchema(10_000),
  /** From the request sent to the response's headers (default 30 s). */
  headers: timeoutSchema(30_000),
  /** Between two chunks of the response's body (default 30 s). */
  body: timeoutSchema(30_000),
});

export const serviceConfigSchema = z.object({
  // Printable ASCII without spaces: anything else cannot travel in a header, and
  // undici's complaint about it must not be the place where the key shows up.
  apiKey: z
    .string({ error: 'is required' })
    .min(1, { error: 'is required' })
    .regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII without spaces' }),
  apiUrl: baseUrl('/v2'),
  graphqlUrl: baseUrl(),
  restUrl: baseUrl('/v1'),
  authScheme: z.enum(['bearer', 'bare'], { error: "must be 'bearer' or 'bare'" }).default('bearer'),
  timeouts: timeoutsSchema.prefault({}),
});

export type ServiceConfig = z.infer<typeof serviceConfigSchema>;
export type ServiceConfigInput = z.input<typeof serviceConfigSchema>;

const ENV: Record<string, string> = {
  apiKey: 'SERVERLESS_API_KEY',
  apiUrl: 'SERVERLESS_API_URL',
  graphqlUrl: 'SERVERLESS_GRAPHQL_URL',
  restUrl: 'SERVERLESS_REST_URL',
  authScheme: 'SERVERLESS_AUTH_SCHEME',
};

/**
 * Options win over the environment. The error names the environment variable when
 * the bad value came from there, the option otherwise, and never repeats the value.
 */
export function loadServiceConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides?: Partial<ServiceConfigInput>,
): ServiceConfig {
  const fromEnv: Record<string, unknown> = {};
  for (const [field, variable] of Object.entries(ENV)) {
    const value = env[variable];
    if (value !== undefined && value !== '') fromEnv[field] = value;
  }
  const given = Object.fromEntries(
    Object.entries(overrides ?? {}).filter(([, value]) => value !== undefined),
  );
  const result = serviceConfigSchema.safeParse({ ...fromEnv, ...given });
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = String(issue?.path[0] ?? 'config');
  const variable =
    field in given || !ENV[field] ? [field, ...(issue?.path.slice(1) ?? [])].join('.') : ENV[field];
  throw new ConfigError(variable ?? field, issue?.message ?? 'is invalid');
}

/** Parses an explicit config (for createServiceClient); errors name the option. */
export function parseServiceConfig(config: ServiceConfigInput): ServiceConfig {
  const result = serviceConfigSchema.safeParse(config);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new ConfigError(issue?.path.map(String).join('.') || 'config', issue?.message ?? 'is invalid');
}
