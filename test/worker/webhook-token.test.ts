import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  signWebhookToken,
  verifyWebhookToken,
  WEBHOOK_TOKEN_MARGIN_MS,
  type WebhookBinding,
  webhookExpiry,
  webhookUrlFactory,
  webhookUrlFor,
} from '../../worker/webhook-token';

const SECRET = 'current-secret-0123456789abcdefghij';
const OLD_SECRET = 'previous-secret-0123456789abcdefghij';
// A fixed clock: expiries are checked against it, never against the wall clock.
const NOW_MS = 1_790_000_000_000;
const EXP = NOW_MS / 1000 + 3600;
const JOB = { expiresAt: EXP };
const verify = (
  secrets: string[],
  workflowId: string,
  token: string,
  binding: WebhookBinding = JOB,
  now = NOW_MS,
) => verifyWebhookToken(secrets, workflowId, token, binding, now);

describe('webhook tokens', () => {
  it('are the base64url HMAC-SHA256 of the workflow id, the item and the expiry', () => {
    const token = signWebhookToken(SECRET, 'job-42', JOB);
    const expected = createHmac('sha256', SECRET).update(`v2:job-42\n\n${EXP}`).digest('base64url');
    expect(token).toBe(expected);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signWebhookToken(SECRET, 'batch-1', { item: 3, expiresAt: EXP })).toBe(
      createHmac('sha256', SECRET).update(`v2:batch-1\n3\n${EXP}`).digest('base64url'),
    );
  });

  it('verify for the workflow, item and expiry they were signed for, and only those', () => {
    const token = signWebhookToken(SECRET, 'job-42', JOB);
    expect(verify([SECRET], 'job-42', token)).toBe(true);
    expect(verify([SECRET], 'job-43', token)).toBe(false);
    expect(verify([SECRET], 'JOB-42', token)).toBe(false);
    // A later expiry is not a spelling of the same token; nor is naming an item.
    expect(verify([SECRET], 'job-42', token, { expiresAt: EXP + 1 })).toBe(false);
    expect(verify([SECRET], 'job-42', token, { item: 0, expiresAt: EXP })).toBe(false);
    // A batch item's token cannot name another item of the same batch.
    const item3 = signWebhookToken(SECRET, 'batch-1', { item: 3, expiresAt: EXP });
    expect(verify([SECRET], 'batch-1', item3, { item: 3, expiresAt: EXP })).toBe(true);
    expect(verify([SECRET], 'batch-1', item3, { item: 4, expiresAt: EXP })).toBe(false);
    expect(verify([SECRET], 'batch-1', item3)).toBe(false);
    // A pipeline's token names its job's stage: it cannot pass for a job of another stage.
    const atSpeak = signWebhookToken(SECRET, 'pipeline-1', { item: 3, stage: 'speak', expiresAt: EXP });
    expect(verify([SECRET], 'pipeline-1', atSpeak, { item: 3, stage: 'speak', expiresAt: EXP })).toBe(true);
    expect(verify([SECRET], 'pipeline-1', atSpeak, { item: 3, stage: 'translate', expiresAt: EXP })).toBe(
      false,
    );
    expect(verify([SECRET], 'pipeline-1', atSpeak, { item: 3, expiresAt: EXP })).toBe(false);
  });

  it('expire: valid up to their expiry, refused after it', () => {
    const token = signWebhookToken(SECRET, 'job-42', JOB);
    expect(verify([SECRET], 'job-42', token, JOB, EXP * 1000)).toBe(true);
    expect(verify([SECRET], 'job-42', token, JOB, EXP * 1000 + 1)).toBe(false);
  });

  it('expire a margin after the job ttl (the service default when none is given)', () => {
    expect(webhookExpiry(60_000, NOW_MS)).toBe((NOW_MS + 60_000 + WEBHOOK_TOKEN_MARGIN_MS) / 1000);
    expect(webhookExpiry(undefined, NOW_MS)).toBe((NOW_MS + 24 * 3600_000 + WEBHOOK_TOKEN_MARGIN_MS) / 1000);
  });

  it('do not verify under another secret, or under none; old and new verify during a rotation', () => {
    const token = signWebhookToken(SECRET, 'job-42', JOB);
    expect(verify([OLD_SECRET], 'job-42', token)).toBe(false);
    expect(verify([], 'job-42', token)).toBe(false);
    expect(verify([''], 'job-42', token)).toBe(false);
    const oldToken = signWebhookToken(OLD_SECRET, 'job-42', JOB);
    expect(verify([SECRET, OLD_SECRET], 'job-42', oldToken)).toBe(true);
    expect(verify([SECRET], 'job-42', oldToken)).toBe(false);
  });

  it('reject tampered tokens of any length, and the unbound form, without throwing', () => {
    const token = signWebhookToken(SECRET, 'job-42', JOB);
    const flipped = `${token.slice(0, 10)}${token[10] === 'A' ? 'B' : 'A'}${token.slice(11)}`;
    const tampered = [
      flipped,
      token.slice(0, -1),
      `${token}A`,
      `${token}=`,
      // The former token over the workflow id alone opens nothing.
      createHmac('sha256', SECRET).update('v1:job-42').digest('base64url'),
      token.toUpperCase(),
      '',
      'é'.repeat(43),
      'x'.repeat(10_000),
    ];
    for (const candidate of tampered) {
      expect(verify([SECRET, OLD_SECRET], 'job-42', candidate), candidate).toBe(false);
    }
  });

  it('build the URL the service calls: encoded workflow id, token, expiry and item in the query', () => {
    const workflowId = 'batch/7 job?&#ü';
    const url = webhookUrlFor('https://hooks.example.test/base/', SECRET, workflowId, {
      item: 5,
      expiresAt: EXP,
    });
    const parsed = new URL(url);
    expect(parsed.origin).toBe('https://hooks.example.test');
    expect(parsed.pathname).toBe(`/base/webhooks/${encodeURIComponent(workflowId)}`);
    expect(decodeURIComponent(parsed.pathname.split('/').at(-1) ?? '')).toBe(workflowId);
    expect(parsed.searchParams.get('token')).toBe(
      signWebhookToken(SECRET, workflowId, { item: 5, expiresAt: EXP }),
    );
    expect(parsed.searchParams.get('exp')).toBe(String(EXP));
    expect(parsed.searchParams.get('item')).toBe('5');
    expect(parsed.searchParams.get('stage')).toBeNull();
    const staged = new URL(
      webhookUrlFor('https://hooks.example.test', SECRET, workflowId, {
        item: 5,
        stage: 'speak',
        expiresAt: EXP,
      }),
    );
    expect(staged.searchParams.get('stage')).toBe('speak');
    expect(staged.searchParams.get('token')).toBe(
      signWebhookToken(SECRET, workflowId, { item: 5, stage: 'speak', expiresAt: EXP }),
    );
    const made = new URL(webhookUrlFactory('https://hooks.example.test', SECRET)('job-1', { ttlMs: 60_000 }));
    const expiresAt = Number(made.searchParams.get('exp'));
    expect(verifyWebhookToken([SECRET], 'job-1', made.searchParams.get('token') ?? '', { expiresAt })).toBe(
      true,
    );
    expect(made.searchParams.get('item')).toBeNull();
  });
});
