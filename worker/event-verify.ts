/**
 * Verification of a sender's request by its source's scheme, with the sender's own rules and, where
 * one exists, the sender's own library: `standardwebhooks` (through client/event-signature.ts),
 * `@octokit/webhooks-methods` for GitHub's `x-hub-signature-256`, the `stripe` package's
 * `webhooks.signature.verifyHeader` for `stripe-signature` (timestamped). The generic HMAC header
 * and the bearer token have no library: Node's crypto, compared with timingSafeEqual.
 *
 * Verification is only that: no scheme parses the body here. The gateway reads the body as JSON
 * afterwards with its one reader (worker/event-json.ts), so a correctly signed body that is not JSON
 * is a 400 in every scheme, and a 401 always means the credentials.
 *
 * Every secret of the source is tried, match or not (rotation: any may match), so the time taken
 * does not tell which matched. The signature is checked before the timestamp, so "stale" is only
 * ever said of a request signed with a valid secret. Results carry a reason from a fixed set and
 * never a secret, a signature or a library's message.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { hmacSignature, matchesAnySecret } from '../client/event-signature';
import type { EventSource } from './event-sources';

export type VerifyResult =
  | { ok: true /** The signed timestamp (unix seconds), where the scheme has one. */; timestamp?: number }
  | { ok: false; reason: 'no-signature' | 'bad-signature' | 'timestamp-out-of-tolerance' };

export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A header given exactly once (a repeated credential header is refused, not guessed at). */
function single(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' && value.length > 0 && value.length <= 8192 ? value : undefined;
}

/** Constant-time equality of two texts of any lengths (both hashed first: equal lengths). */
export function textsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

const withinTolerance = (timestamp: number, nowMs: number, toleranceSeconds: number) =>
  Math.abs(Math.floor(nowMs / 1000) - timestamp) <= toleranceSeconds;

const standardVerifiers = new WeakMap<EventSource, ReturnType<typeof matchesAnySecret>>();

function verifyStandardWebhooks(
  source: EventSource,
  headers: RequestHeaders,
  body: string,
  nowMs: number,
): VerifyResult {
  const id = single(headers, 'webhook-id');
  const stamp = single(headers, 'webhook-timestamp');
  const signature = single(headers, 'webhook-signature');
  if (!id || id.length > 256 || !stamp || !/^\d{1,12}$/.test(stamp) || !signature)
    return { ok: false, reason: 'no-signature' };
  let verify = standardVerifiers.get(source);
  if (!verify) {
    verify = matchesAnySecret(source.secrets);
    standardVerifiers.set(source, verify);
  }
  const timestamp = Number(stamp);
  if (!verify(id, timestamp, body, signature)) return { ok: false, reason: 'bad-signature' };
  if (!withinTolerance(timestamp, nowMs, source.toleranceSeconds))
    return { ok: false, reason: 'timestamp-out-of-tolerance' };
  return { ok: true, timestamp };
}

async function verifyGithub(
  source: EventSource,
  headers: RequestHeaders,
  body: string,
): Promise<VerifyResult> {
  const signature = single(headers, 'x-hub-signature-256');
  if (!signature || !/^sha256=[0-9a-f]{64}$/.test(signature)) return { ok: false, reason: 'no-signature' };
  // The library neither signs nor verifies an empty payload (the gateway refuses one before this).
  if (body.length === 0) return { ok: false, reason: 'bad-signature' };
  const { verify } = await import('@octokit/webhooks-methods');
  let matched = false;
  for (const secret of source.secrets) {
    // No early exit: the time taken does not tell which secret matched.
    if (await verify(secret, body, signature)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: 'bad-signature' };
}

/** The stripe package's signature check alone: it verifies without parsing (constructEvent parses too). */
async function loadStripeSignature() {
  const { signature } = (await import('stripe')).default.webhooks;
  if (!signature) throw new Error('the stripe package has no webhook signature helper');
  return signature;
}
let stripeSignature: ReturnType<typeof loadStripeSignature> | undefined;

async function verifyStripe(
  source: EventSource,
  headers: RequestHeaders,
  body: string,
  nowMs: number,
): Promise<VerifyResult> {
  const header = single(headers, 'stripe-signature');
  // Read as the library reads it (comma-separated `name=value` items). Exactly one `t`: the library
  // signs with the last one, and the tolerance below must be checked on that same timestamp (else
  // an old signature could be sent behind a fresh `t=`).
  const items = (header ?? '').split(',').map((item) => item.split('='));
  const stamps = items.filter(([name]) => name === 't');
  const stamp = stamps.length === 1 ? stamps[0]?.[1] : undefined;
  if (!header || !stamp || !/^\d{1,12}$/.test(stamp) || !items.some(([name]) => name === 'v1'))
    return { ok: false, reason: 'no-signature' };
  stripeSignature ??= loadStripeSignature();
  const signature = await stripeSignature;
  let signed = false;
  for (const secret of source.secrets) {
    try {
      // Tolerance 0: the library checks the signature only (it would bound a timestamp's age only);
      // the timestamp is checked below, both ways, as in the other schemes.
      signature.verifyHeader(body, header, secret, 0);
      signed = true;
    } catch {
      // Not this secret; the library's message is never passed on.
    }
  }
  if (!signed) return { ok: false, reason: 'bad-signature' };
  const timestamp = Number(stamp);
  // A signature made for the future is refused too, so that it cannot be replayed until then.
  if (!withinTolerance(timestamp, nowMs, source.toleranceSeconds))
    return { ok: false, reason: 'timestamp-out-of-tolerance' };
  return { ok: true, timestamp };
}

function verifyHmac(source: EventSource, headers: RequestHeaders, body: string, nowMs: number): VerifyResult {
  const spec = source.hmac;
  if (!spec) return { ok: false, reason: 'bad-signature' };
  const given = single(headers, spec.header);
  const stamp = spec.timestampHeader ? single(headers, spec.timestampHeader) : undefined;
  const timed = spec.signed === 'timestamp.body';
  if (!given || (timed && (stamp === undefined || !/^\d{1,12}$/.test(stamp))))
    return { ok: false, reason: 'no-signature' };
  const timestamp = timed ? Number(stamp) : undefined;
  let matched = false;
  for (const secret of source.secrets) {
    if (textsEqual(given, hmacSignature(secret, spec, body, timestamp))) matched = true;
  }
  if (!matched) return { ok: false, reason: 'bad-signature' };
  if (timestamp !== undefined && !withinTolerance(timestamp, nowMs, source.toleranceSeconds))
    return { ok: false, reason: 'timestamp-out-of-tolerance' };
  return timestamp === undefined ? { ok: true } : { ok: true, timestamp };
}

function verifyBearer(source: EventSource, headers: RequestHeaders): VerifyResult {
  const authorization = single(headers, 'authorization');
  const token = authorization ? /^Bearer ([\x21-\x7e]+)$/.exec(authorization)?.[1] : undefined;
  if (!token) return { ok: false, reason: 'no-signature' };
  let matched = false;
  for (const secret of source.secrets) {
    if (textsEqual(token, secret)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: 'bad-signature' };
}

/** Whether `body` (the exact bytes received, as UTF-8 text) was sent by `source`'s sender. */
export async function verifyEventRequest(
  source: EventSource,
  request: { headers: RequestHeaders; body: string; nowMs: number },
): Promise<VerifyResult> {
  const { headers, body, nowMs } = request;
  switch (source.scheme) {
    case 'standard-webhooks':
      return verifyStandardWebhooks(source, headers, body, nowMs);
    case 'github':
      return verifyGithub(source, headers, body);
    case 'stripe':
      return verifyStripe(source, headers, body, nowMs);
    case 'hmac':
      return verifyHmac(source, headers, body, nowMs);
    case 'bearer':
      return verifyBearer(source, headers);
  }
}

/** What a request of `source` must carry (the 401's message when it does not): no secret in it. */
export function credentialsRule(source: EventSource): string {
  switch (source.scheme) {
    case 'standard-webhooks':
      return 'webhook-id, webhook-timestamp (unix seconds) and webhook-signature headers are required';
    case 'github':
      return 'an x-hub-signature-256 header (sha256=<hex>) is required';
    case 'stripe':
      return 'a stripe-signature header (t=<unix seconds>,v1=<hex>) is required';
    case 'hmac':
      return source.hmac?.timestampHeader && source.hmac.signed === 'timestamp.body'
        ? `${source.hmac.header} and ${source.hmac.timestampHeader} (unix seconds) headers are required`
        : `an ${source.hmac?.header ?? 'signature'} header is required`;
    case 'bearer':
      return 'an authorization: Bearer <token> header is required';
  }
}
