import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { buildWebhookGateway } from '../../worker/gateway';
import { createLogger } from '../../worker/logger';
import { createPrometheusMetrics } from '../../worker/metrics';
import { webhookUrlFactory } from '../../worker/webhook-token';
import { sampleSum } from '../observability/counting-proxy';

const SECRET = 'a-webhook-secret-of-at-least-32-characters';

describe('the gateway counts the webhooks it refuses, by reason', () => {
  it('no token, a bad token and a malformed body, and no secret or workflow id in the scrape', async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    // Refusals never reach Temporal: no client is needed.
    const app = buildWebhookGateway({
      client: {} as Client,
      secrets: [SECRET],
      metrics,
      logger: createLogger({ level: 'silent', secrets: [SECRET] }),
    });
    const signed = new URL(webhookUrlFactory('http://gateway.test', SECRET)('wf-secret-id-1'));
    const post = (url: string, payload: string) => app.inject({ method: 'POST', url, payload });
    expect((await post('/webhooks/wf-secret-id-1', '{}')).statusCode).toBe(401);
    // A wrong token on an otherwise well-formed URL (a URL with no expiry counts as having no token).
    const wrongToken = `/webhooks/wf-secret-id-1?token=wrong&exp=${signed.searchParams.get('exp')}`;
    expect((await post(wrongToken, '{}')).statusCode).toBe(401);
    expect((await post(`${signed.pathname}${signed.search}`, 'not json')).statusCode).toBe(400);
    await app.close();

    const text = await registry.metrics();
    const refused = (reason: string) =>
      sampleSum(text, 'durable_serverless_webhooks_total', { result: 'refused', reason });
    expect(refused('no-token')).toBe(1);
    expect(refused('bad-token')).toBe(1);
    expect(refused('malformed')).toBe(1);
    expect(sampleSum(text, 'durable_serverless_webhooks_received_total')).toBe(3);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('wf-secret-id-1');
  });
});
