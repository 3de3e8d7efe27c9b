import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import { loadEventIngressConfig, secretValues } from '../../worker/config';
import { DEFAULT_EVENT_MAX_BODY_BYTES, DEFAULT_EVENT_TOLERANCE_SECONDS } from '../../worker/event-ingress';

const A = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const B = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;

function failure(env: Record<string, string>): ConfigError {
  try {
    loadEventIngressConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('event ingress configuration (EVENT_*)', () => {
  it('has no events route without secrets, and an empty variable counts as unset', () => {
    expect(loadEventIngressConfig({})).toEqual({});
    expect(loadEventIngressConfig({ EVENT_SIGNING_SECRETS: '' })).toEqual({});
  });

  it('reads several secrets for a rotation, with the defaults', () => {
    expect(loadEventIngressConfig({ EVENT_SIGNING_SECRETS: ` ${A} , ${B} ` })).toEqual({
      events: {
        secrets: [A, B],
        toleranceSeconds: DEFAULT_EVENT_TOLERANCE_SECONDS,
        maxBodyBytes: DEFAULT_EVENT_MAX_BODY_BYTES,
      },
    });
    expect(
      loadEventIngressConfig({
        EVENT_SIGNING_SECRETS: A,
        EVENT_TIMESTAMP_TOLERANCE_SECONDS: '60',
        EVENT_MAX_BODY_BYTES: '4096',
      }).events,
    ).toMatchObject({ toleranceSeconds: 60, maxBodyBytes: 4096 });
  });

  it('names the variable and the rule, never the value', () => {
    const tooShort = `whsec_${Buffer.alloc(8, 1).toString('base64')}`;
    for (const bad of ['not-a-whsec-secret-at-all-0123456789', tooShort, `${A},whsec_!!!!`]) {
      const error = failure({ EVENT_SIGNING_SECRETS: bad });
      expect(error.variable).toBe('EVENT_SIGNING_SECRETS');
      expect(error.message).toContain('each secret must be whsec_');
      expect(error.message).not.toContain(bad);
      expect(error.message).not.toContain(A.slice(6));
    }
    expect(failure({ EVENT_SIGNING_SECRETS: A, EVENT_TIMESTAMP_TOLERANCE_SECONDS: '0' }).variable).toBe(
      'EVENT_TIMESTAMP_TOLERANCE_SECONDS',
    );
    expect(failure({ EVENT_SIGNING_SECRETS: A, EVENT_MAX_BODY_BYTES: '1e6' }).message).toContain(
      'must be an integer number of bytes',
    );
  });

  it('counts the event secrets among the values logs must never show', () => {
    expect(secretValues({ events: { secrets: [A, B], toleranceSeconds: 1, maxBodyBytes: 1 } })).toEqual(
      expect.arrayContaining([A, B]),
    );
  });
});
