import { describe, expect, it } from 'vitest';
import { createLogger } from '../../worker/logger';
import { captureLines } from './capture';

const SECRET = 'a-"quoted"/secret+value-0123456789abcdef';

describe('worker logger', () => {
  it('blanks secret fields and token parameters, and the values of known secrets anywhere', () => {
    const out = captureLines();
    const logger = createLogger({ secrets: [SECRET, 'api-key-123'], destination: out });
    logger.info({ token: 'tok-field', webhook: { secret: 'nested-secret' }, apiKey: 'k' }, 'fields');
    logger.info({ url: '/webhooks/wf-1?token=tok-in-url&x=1' }, 'a url');
    logger.info({ url: '/webhooks/wf-1?x=1&token%3Dtok-encoded' }, 'an encoded url');
    logger.warn(`message quoting ${SECRET} and ${encodeURIComponent(SECRET)} and api-key-123`);
    logger.error(
      { err: new Error(`failed at https://hooks.test/webhooks/x?token=tok-in-error with ${SECRET}`) },
      'boom',
    );
    const text = out.text();
    for (const leak of [
      'tok-field',
      'nested-secret',
      'tok-in-url',
      'tok-encoded',
      'tok-in-error',
      'api-key-123',
      'secret+value',
    ]) {
      expect(text).not.toContain(leak);
    }
    expect(text).not.toContain(encodeURIComponent(SECRET));
    // Every line is still JSON, and the rest of the line survived.
    const parsed = out.lines.map((line) => JSON.parse(line) as { msg: string; url?: string });
    expect(parsed).toHaveLength(5);
    expect(parsed[1]?.url).toBe('/webhooks/wf-1?token=[REDACTED]&x=1');
    expect(parsed[3]?.msg).toBe('message quoting [REDACTED] and [REDACTED] and [REDACTED]');
  });
});
