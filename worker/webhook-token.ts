/**
 * Webhook tokens for job results. The job's webhook URL is the only thing the service gives back
 * to us, so it carries its own proof: an HMAC, under a secret only the worker and the gateway know,
 * of what the URL may be used for:
 *
 * - the workflow it signals (a token cannot be moved to another workflow);
 * - the batch item it reports on, for a batch's job (a token for item 3 cannot name item 4: the
 *   item is in the URL, covered by the token); a job workflow's token names no item;
 * - for a pipeline's job, the stage whose job it is: a piece has a job at each stage, and a late
 *   webhook of an earlier stage's job must not pass for an orphan of the stage the piece is at;
 * - when it expires: a margin after the job's ttl, past which the service has deleted the job and
 *   no genuine call can come (the margin covers the service's retries and clock skew). A leaked
 *   token is not good forever.
 *
 * The URL is `/webhooks/{workflowId}?token=..&exp=<unix seconds>[&item=N[&stage=NAME]]`. A URL of the former
 * form (a token over the workflow id alone, no expiry) is refused: such a webhook is lost, and
 * polling still finds the job's end.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { JOB_LIMITS } from '../api/schemas/job';

// A version prefix: no token of one scheme can ever verify under another.
const SCHEME = 'v2:';

/** How long after the job's ttl its webhook token still opens: the service's retries, and clock skew. */
export const WEBHOOK_TOKEN_MARGIN_MS = 10 * 60_000;

export interface WebhookBinding {
  /** The batch item the job belongs to; absent for a job workflow's own job. */
  item?: number;
  /** A pipeline's job: the name of the stage it belongs to. */
  stage?: string;
  /** Unix seconds after which the token is refused. */
  expiresAt: number;
}

/** When a token for a job with this ttl (default: the service's 24 h) submitted now expires. */
export function webhookExpiry(ttlMs: number | undefined, nowMs: number = Date.now()): number {
  return Math.ceil((nowMs + (ttlMs ?? JOB_LIMITS.ttlDefaultMs) + WEBHOOK_TOKEN_MARGIN_MS) / 1000);
}

export function signWebhookToken(secret: string, workflowId: string, binding: WebhookBinding): string {
  // A stage is signed after the expiry (digits only), so a token without one reads as before.
  const stage = binding.stage === undefined ? '' : `\n${binding.stage}`;
  const signed = `${SCHEME}${workflowId}\n${binding.item ?? ''}\n${binding.expiresAt}${stage}`;
  return createHmac('sha256', secret).update(signed, 'utf8').digest('base64url');
}

/**
 * True when `token` was signed for this workflow, item and expiry by any of `secrets` (the current
 * one and those still accepted during a rotation), and the expiry has not passed. Every secret is
 * checked, match or not, so the time taken does not tell which secret matched; the comparison
 * itself is constant-time. The token is compared as text, so no second spelling is accepted.
 */
export function verifyWebhookToken(
  secrets: readonly string[],
  workflowId: string,
  token: string,
  binding: WebhookBinding,
  nowMs: number = Date.now(),
): boolean {
  const given = Buffer.from(token, 'utf8');
  let matched = false;
  for (const secret of secrets) {
    if (!secret) continue;
    const expected = Buffer.from(signWebhookToken(secret, workflowId, binding), 'utf8');
    // timingSafeEqual throws on a length mismatch; the length of a token is no secret.
    const equal = given.length === expected.length && timingSafeEqual(given, expected);
    matched = equal || matched;
  }
  return matched && binding.expiresAt * 1000 >= nowMs;
}

/** What the activity knows when it builds a job's URL: the batch item, and the job's ttl. */
export interface WebhookUrlOptions {
  item?: number;
  /** A pipeline's job: its stage's name. */
  stage?: string;
  ttlMs?: number;
}

export function webhookUrlFor(
  publicUrl: string,
  secret: string,
  workflowId: string,
  binding: WebhookBinding = { expiresAt: webhookExpiry(undefined) },
): string {
  const base = publicUrl.replace(/\/+$/, '');
  const token = signWebhookToken(secret, workflowId, binding);
  const item = binding.item === undefined ? '' : `&item=${binding.item}`;
  const stage = binding.stage === undefined ? '' : `&stage=${encodeURIComponent(binding.stage)}`;
  return `${base}/webhooks/${encodeURIComponent(workflowId)}?token=${token}&exp=${binding.expiresAt}${item}${stage}`;
}

/** The `webhookUrlFor` the submit activities are given: the secret stays in this closure, in the worker. */
export function webhookUrlFactory(
  publicUrl: string,
  secret: string,
): (workflowId: string, options?: WebhookUrlOptions) => string {
  return (workflowId, options = {}) =>
    webhookUrlFor(publicUrl, secret, workflowId, {
      ...(options.item === undefined ? {} : { item: options.item }),
      ...(options.stage === undefined ? {} : { stage: options.stage }),
      expiresAt: webhookExpiry(options.ttlMs),
    });
}
