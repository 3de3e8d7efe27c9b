import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhookToken, verifyWebhookToken, webhookUrlFor } from '../../worker/webhook-token';

const SECRET = 'current-secret-0123456789abcdefghij';
const OLD_SECRET = 'previous-secret-0123456789abcdefghij';

describe('webhook tokens', () => {
  it('are the base64url HMAC-SHA256 of v1:<workflow id>', () => {
    const token = signWebhookToken(SECRET, 'job-42');
    const expected = createHmac('sha256', SECRET).update('v1:job-42').digest('base64url');
    expect(token).toBe(expected);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signWebhookToken(SECRET, 'job-42')).toBe(token);
  });

  it('verify for the workflow they were signed for, and only that one', () => {
    const token = signWebhookToken(SECRET, 'job-42');
    expect(verifyWebhookToken([SECRET], 'job-42', token)).toBe(true);
    expect(verifyWebhookToken([SECRET], 'job-43', token)).toBe(false);
    expect(verifyWebhookToken([SECRET], 'job-42 ', token)).toBe(false);
    expect(verifyWebhookToken([SECRET], 'JOB-42', token)).toBe(false);
  });

  it('do not verify under another secret, or under none', () => {
    const token = signWebhookToken(SECRET, 'job-42');
    expect(verifyWebhookToken([OLD_SECRET], 'job-42', token)).toBe(false);
    expect(verifyWebhookToken([], 'job-42', token)).toBe(false);
    expect(verifyWebhookToken([''], 'job-42', token)).toBe(false);
  });

  it('accept old and new secrets while both are configured, then only the new one', () => {
    const oldToken = signWebhookToken(OLD_SECRET, 'job-42');
    const newToken = signWebhookToken(SECRET, 'job-42');
    expect(verifyWebhookToken([SECRET, OLD_SECRET], 'job-42', oldToken)).toBe(true);
    expect(verifyWebhookToken([SECRET, OLD_SECRET], 'job-42', newToken)).toBe(true);
    expect(verifyWebhookToken([SECRET], 'job-42', oldToken)).toBe(false);
  });

  it('reject tampered tokens of any length without throwing', () => {
    const token = signWebhookToken(SECRET, 'job-42');
    const flipped = `${token.slice(0, 10)}${token[10] === 'A' ? 'B' : 'A'}${token.slice(11)}`;
    const tampered = [
      flipped,
      token.slice(0, -1),
      `${token}A`,
      `${token}=`, // padding: another spelling of the same bytes is still refused
      Buffer.from(createHmac('sha256', SECRET).update('v1:job-42').digest()).toString('base64'),
      token.toUpperCase(),
      '',
      'é'.repeat(43),
      'x'.repeat(10_000),
    ];
    for (const candidate of tampered) {
      expect(verifyWebhookToken([SECRET, OLD_SECRET], 'job-42', candidate), candidate).toBe(false);
    }
  });

  it('build the URL the service calls: encoded workflow id, token in the query', () => {
    const workflowId = 'batch/7 job?&#ü';
    const url = webhookUrlFor('https://hooks.example.test/base/', SECRET, workflowId);
    const parsed = new URL(url);
    expect(parsed.origin).toBe('https://hooks.example.test');
    expect(parsed.pathname).toBe(`/base/webhooks/${encodeURIComponent(workflowId)}`);
    expect(decodeURIComponent(parsed.pathname.split('/').at(-1) ?? '')).toBe(workflowId);
    expect(parsed.searchParams.get('token')).toBe(signWebhookToken(SECRET, workflowId));
    expect(url).toBe(
      `https://hooks.example.test/base/webhooks/${encodeURIComponent(workflowId)}?token=${signWebhookToken(SECRET, workflowId)}`,
    );
  });
});
