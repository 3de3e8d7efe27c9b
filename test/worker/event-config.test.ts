import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import { loadEventIngressConfig, secretValues } from '../../worker/config';
import {
  DEFAULT_EVENT_MAX_BODY_BYTES,
  DEFAULT_EVENT_MAX_DEPTH,
  DEFAULT_EVENT_TOLERANCE_SECONDS,
  DEFAULT_REPLAY_WINDOW_SECONDS,
} from '../../worker/event-ingress';

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
        sources: [],
        toleranceSeconds: DEFAULT_EVENT_TOLERANCE_SECONDS,
        maxBodyBytes: DEFAULT_EVENT_MAX_BODY_BYTES,
        maxDepth: DEFAULT_EVENT_MAX_DEPTH,
        replayWindowSeconds: DEFAULT_REPLAY_WINDOW_SECONDS,
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
    expect(
      secretValues({
        events: {
          secrets: [A, B],
          sources: [],
          toleranceSeconds: 1,
          maxBodyBytes: 1,
          maxDepth: 2,
          replayWindowSeconds: 1,
        },
      }),
    ).toEqual(expect.arrayContaining([A, B]));
  });

  it('reads EVENT_SOURCES with secrets from the variables they name; errors name the field, never a value', () => {
    const sources = JSON.stringify([
      {
        name: 'github',
        scheme: 'github',
        secretsEnv: 'GITHUB_SECRETS',
        automations: { deploys: { key: 'body.repository.full_name' } },
      },
    ]);
    const loaded = loadEventIngressConfig({
      EVENT_SOURCES: sources,
      GITHUB_SECRETS: 'first-secret-0123456789, second-secret-0123456789',
    });
    expect(loaded.events?.sources[0]).toMatchObject({
      name: 'github',
      scheme: 'github',
      secrets: ['first-secret-0123456789', 'second-secret-0123456789'],
    });
    expect(loaded.events?.sources[0]?.automations.get('deploys')).toEqual({
      key: 'body.repository.full_name',
    });
    expect(secretValues(loaded)).toEqual(expect.arrayContaining(['first-secret-0123456789']));

    const missing = failure({ EVENT_SOURCES: sources });
    expect(missing.variable).toBe('GITHUB_SECRETS');
    const short = failure({ EVENT_SOURCES: sources, GITHUB_SECRETS: 'short-one' });
    expect(short.variable).toBe('GITHUB_SECRETS');
    expect(short.message).not.toContain('short-one');
    const badPath = JSON.stringify([
      { name: 'gh', scheme: 'github', secretsEnv: 'S', automations: { deploys: { key: 'repository' } } },
    ]);
    expect(failure({ EVENT_SOURCES: badPath, S: 'x'.repeat(20) }).variable).toBe(
      'EVENT_SOURCES[0].automations.deploys.key',
    );
    const noId = JSON.stringify([
      { name: 'ci', scheme: 'bearer', secretsEnv: 'S', automations: { builds: { key: 'body.branch' } } },
    ]);
    const noIdError = failure({ EVENT_SOURCES: noId, S: 'x'.repeat(40) });
    expect(noIdError.variable).toBe('EVENT_SOURCES[0].automations.builds.id');
    expect(noIdError.rule).toContain('is required for scheme bearer');
    const noHmac = JSON.stringify([
      { name: 'h', scheme: 'hmac', secretsEnv: 'S', automations: { a: { key: 'body.k', id: 'body.id' } } },
    ]);
    expect(failure({ EVENT_SOURCES: noHmac, S: 'x'.repeat(20) }).variable).toBe('EVENT_SOURCES[0].hmac');
    expect(failure({ EVENT_SOURCES: 'not json' }).variable).toBe('EVENT_SOURCES');
  });
});
