/**
 * Signing and checking events sent over HTTP to the gateway's `POST /events/{automation}`, in the
 * Standard Webhooks format: the `standardwebhooks` package computes the HMAC-SHA256 over
 * `id.timestamp.body` with a `whsec_` secret. Callers use `signEvent`/`eventHeaders` to send; the
 * gateway uses `matchesAnySecret`, so the rule of what is signed lives here only.
 *
 * The package's own `verify` is not used by the gateway: it reads the real clock with a fixed
 * 5-minute tolerance, and the gateway's tolerance is configurable and its clock injectable (tests).
 * The gateway checks the timestamp itself, after the signature.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { ValidationError } from '../api/errors';

export const SECRET_PREFIX = 'whsec_';
/** Standard Webhooks asks for 24 to 64 random bytes. */
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;

export const eventSecretRule = `must be ${SECRET_PREFIX} followed by the base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes`;

/** A `whsec_` secret; the message never quotes the value. */
export const eventSecretSchema = z.string().refine(
  (value) => {
    if (!value.startsWith(SECRET_PREFIX)) return false;
    const encoded = value.slice(SECRET_PREFIX.length);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return false;
    const bytes = Buffer.from(encoded, 'base64').length;
    return bytes >= MIN_SECRET_BYTES && bytes <= MAX_SECRET_BYTES;
  },
  { error: eventSecretRule },
);

/** Unix seconds, as the `webhook-timestamp` header carries them. */
function unixSeconds(timestamp: number | Date): number {
  return timestamp instanceof Date ? Math.floor(timestamp.getTime() / 1000) : Math.floor(timestamp);
}

function webhook(secret: string): Webhook {
  if (!eventSecretSchema.safeParse(secret).success) throw new ValidationError('secret', eventSecretRule);
  return new Webhook(secret);
}

/**
 * The `webhook-signature` value (`v1,<base64>`) of one event: `body` must be the exact bytes sent.
 * `timestamp` is unix seconds or a Date.
 */
export function signEvent(secret: string, id: string, timestamp: number | Date, body: string): string {
  return webhook(secret).sign(id, new Date(unixSeconds(timestamp) * 1000), body);
}

export interface EventHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The three headers of a signed event. Several secrets (a rotation on the sender's side) give one
 * `v1,` entry each, separated by spaces; the gateway accepts the request if any entry matches.
 */
export function eventHeaders(
  secrets: string | readonly string[],
  id: string,
  body: string,
  timestamp: number | Date = new Date(),
): EventHeaders {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  const seconds = unixSeconds(timestamp);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': list.map((secret) => signEvent(secret, id, seconds, body)).join(' '),
  };
}

/** Verifiers built once per secret (the key is decoded once, not per request). */
export type EventVerifier = (id: string, timestamp: number, body: string, signatureHeader: string) => boolean;

/**
 * True when any `v1,` entry of the header is the signature of (id, timestamp, body) under any of
 * the secrets. Comparisons are constant-time; entries of other versions are skipped, as the
 * standard says.
 */
export function matchesAnySecret(secrets: readonly string[]): EventVerifier {
  const hooks = secrets.map(webhook);
  return (id, timestamp, body, signatureHeader) => {
    const given = signatureHeader
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => Buffer.from(entry.slice(3)));
    if (given.length === 0) return false;
    const at = new Date(timestamp * 1000);
    let matched = false;
    for (const hook of hooks) {
      const expected = Buffer.from(hook.sign(id, at, body).slice(3));
      for (const candidate of given) {
        // No early exit: the time taken does not tell which secret or entry matched.
        if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
      }
    }
    return matched;
  };
}

// ------------------------------------------------------------------------------------------------
// Other senders' schemes. What each signs is the sender's own rule; these functions sign as the
// sender would (by the sender's own library where one exists), for tests and `event send --to`.
// The gateway's checks (worker/event-verify.ts) use the same libraries and the same
// `hmacSignedContent`, so the rule of what is signed is written once.
// ------------------------------------------------------------------------------------------------

/** The verification schemes an event source may use. */
export const eventSchemeSchema = z.enum(['standard-webhooks', 'github', 'stripe', 'hmac', 'bearer'], {
  error: 'must be one of standard-webhooks, github, stripe, hmac, bearer',
});
export type EventScheme = z.infer<typeof eventSchemeSchema>;

const headerNameSchema = z
  .string({ error: 'must be a header name' })
  .regex(/^[A-Za-z0-9-]{1,64}$/, { error: 'must be a header name (letters, digits and -, at most 64)' })
  .transform((name) => name.toLowerCase());

/**
 * A generic HMAC-SHA256 header: which header carries it, how the digest is written (hex, base64,
 * base64url, after an optional prefix such as `sha256=`), and what is signed: the raw body, or
 * `<timestamp>.<body>` with the timestamp (unix seconds) in its own header.
 */
export const hmacSpecSchema = z
  .strictObject({
    header: headerNameSchema,
    encoding: z
      .enum(['hex', 'base64', 'base64url'], { error: 'must be hex, base64 or base64url' })
      .default('hex'),
    prefix: z
      .string({ error: 'must be a string' })
      .max(32, { error: 'must be at most 32 characters' })
      .default(''),
    signed: z.enum(['body', 'timestamp.body'], { error: 'must be body or timestamp.body' }).default('body'),
    timestampHeader: headerNameSchema.optional(),
  })
  .refine((spec) => spec.signed === 'body' || spec.timestampHeader !== undefined, {
    error: 'is required when signed is timestamp.body',
    path: ['timestampHeader'],
  });
export type HmacSpec = z.output<typeof hmacSpecSchema>;
export type HmacSpecInput = z.input<typeof hmacSpecSchema>;

/** What a generic HMAC header signs: the body, or `<timestamp>.<body>`. */
export function hmacSignedContent(spec: Pick<HmacSpec, 'signed'>, body: string, timestamp?: number): string {
  return spec.signed === 'timestamp.body' ? `${timestamp}.${body}` : body;
}

/** The header value of a generic HMAC-SHA256 signature: prefix + the digest in the spec's encoding. */
export function hmacSignature(secret: string, spec: HmacSpec, body: string, timestamp?: number): string {
  const digest = createHmac('sha256', secret).update(hmacSignedContent(spec, body, timestamp), 'utf8');
  return `${spec.prefix}${digest.digest(spec.encoding)}`;
}

/** How a test or the CLI signs: a scheme, and for `hmac` its spec. */
export type SigningScheme =
  | { scheme: 'standard-webhooks' | 'github' | 'stripe' | 'bearer' }
  | { scheme: 'hmac'; hmac: HmacSpec };

/**
 * The headers a sender of `scheme` would put on `body`: Standard Webhooks' three headers (one
 * `v1,` entry per secret), GitHub's `x-hub-signature-256` (by @octokit/webhooks-methods, first
 * secret), Stripe's `stripe-signature` (by the stripe package's test header generator, one `v1=`
 * per secret), a generic HMAC header (first secret; with its timestamp header when the spec signs
 * one) or `authorization: Bearer <first secret>`. `id` is the delivery id where the scheme carries
 * one in a header (Standard Webhooks, GitHub's `x-github-delivery`).
 */
export async function signAs(
  signing: SigningScheme,
  secrets: string | readonly string[],
  body: string,
  options: { id?: string; timestamp?: number | Date } = {},
): Promise<Record<string, string>> {
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  const first = list[0];
  if (first === undefined || first === '')
    throw new ValidationError('secrets', 'must hold at least one secret');
  const seconds = unixSeconds(options.timestamp ?? new Date());
  switch (signing.scheme) {
    case 'standard-webhooks':
      return { ...eventHeaders(list, options.id ?? `msg_${randomUUID()}`, body, seconds) };
    case 'github': {
      const { sign } = await import('@octokit/webhooks-methods');
      return {
        'x-hub-signature-256': await sign(first, body),
        ...(options.id === undefined ? {} : { 'x-github-delivery': options.id }),
      };
    }
    case 'stripe': {
      const { webhooks } = (await import('stripe')).default;
      const entries = list.map((secret) =>
        webhooks.generateTestHeaderString({ payload: body, secret, timestamp: seconds }),
      );
      // One `t=` and every `v1=` entry: Stripe sends one per secret while a secret is rolled.
      const v1 = entries.map((entry) => entry.split(',').slice(1).join(','));
      return { 'stripe-signature': `t=${seconds},${v1.join(',')}` };
    }
    case 'hmac':
      return {
        [signing.hmac.header]: hmacSignature(first, signing.hmac, body, seconds),
        ...(signing.hmac.signed === 'timestamp.body' && signing.hmac.timestampHeader
          ? { [signing.hmac.timestampHeader]: String(seconds) }
          : {}),
      };
    case 'bearer':
      return { authorization: `Bearer ${first}` };
  }
}
