/**
 * Per-workflow webhook tokens. The job's webhook URL is the only thing the service gives back to
 * us, so it carries its own proof: an HMAC of the workflow id under a secret only the worker and
 * the gateway know. A token opens exactly one workflow's webhook and cannot be moved to another.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

// A version prefix, so a later scheme (say, one that also binds the job id) can never collide with this one.
const SCHEME = 'v1:';

export function signWebhookToken(secret: string, workflowId: string): string {
  return createHmac('sha256', secret).update(`${SCHEME}${workflowId}`, 'utf8').digest('base64url');
}

/**
 * True when `token` was signed for `workflowId` by any of `secrets` (the current one and those
 * still accepted during a rotation). Every secret is checked, match or not, so the time taken
 * does not tell which secret matched; the comparison itself is constant-time. The token is
 * compared as text, not decoded, so no second spelling of the same bytes is ever accepted.
 */
export function verifyWebhookToken(secrets: readonly string[], workflowId: string, token: string): boolean {
  const given = Buffer.from(token, 'utf8');
  let matched = false;
  for (const secret of secrets) {
    if (!secret) continue;
    const expected = Buffer.from(signWebhookToken(secret, workflowId), 'utf8');
    // timingSafeEqual throws on a length mismatch; the length of a token is no secret.
    const equal = given.length === expected.length && timingSafeEqual(given, expected);
    matched = equal || matched;
  }
  return matched;
}

export function webhookUrlFor(publicUrl: string, secret: string, workflowId: string): string {
  const base = publicUrl.replace(/\/+$/, '');
  return `${base}/webhooks/${encodeURIComponent(workflowId)}?token=${signWebhookToken(secret, workflowId)}`;
}

/** The `webhookUrlFor` the submit activity is given: the secret stays in this closure, in the worker. */
export function webhookUrlFactory(publicUrl: string, secret: string): (workflowId: string) => string {
  return (workflowId) => webhookUrlFor(publicUrl, secret, workflowId);
}
