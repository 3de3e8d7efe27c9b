/**
 * The gateway stops although the service's sender keeps its connections alive: a webhook being
 * delivered when close() is called still gets its answer, and close() then ends (the sender's
 * keep-alive is far longer than the test may take).
 */
import type { Client } from '@temporalio/client';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startWebhookGateway } from '../../worker/gateway';
import { webhookUrlFor } from '../../worker/webhook-token';

const SECRET = 'webhook-secret-0123456789abcdefghijkl';

describe('gateway: close', () => {
  it('ends the connections a keep-alive sender left open once the answers in flight are given', async () => {
    let release!: () => void;
    const signalled = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const handle = {
      async signal() {
        arrived();
        await signalled;
      },
    };
    const client = {
      workflow: { getHandle: () => handle },
      withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    } as unknown as Client;
    const gateway = await startWebhookGateway({ client, secrets: [SECRET], port: 0, signalTimeoutMs: 500 });
    // A sender that keeps connections open far longer than the test's own timeout.
    const sender = new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 });
    try {
      const answer = request(webhookUrlFor(gateway.url, SECRET, 'job-workflow-1'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'job-1', status: 'COMPLETED' }),
        dispatcher: sender,
      });
      await inFlight;
      const closed = gateway.close();
      release();
      const response = await answer;
      await response.body.text();
      expect(response.statusCode).toBe(200);
      await closed;
    } finally {
      await sender.destroy();
    }
  }, 20_000);
});
