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
import { timingSafeEqual } from 'node:crypto';
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
