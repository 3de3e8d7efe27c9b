import { describe, expect, it } from 'vitest';
import { ConfigError, createServiceClient, loadServiceConfig } from '../../api';

const env = {
  SERVERLESS_API_KEY: 'key-123',
  SERVERLESS_API_URL: 'https://api.example.test/v2/',
  SERVERLESS_GRAPHQL_URL: 'https://gql.example.test/graphql',
  SERVERLESS_REST_URL: 'https://rest.example.test/v1',
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadServiceConfig', () => {
  it('reads the environment, normalises trailing slashes and applies defaults', () => {
    const config = loadServiceConfig(env);
    expect(config).toEqual({
      apiKey: 'key-123',
      apiUrl: 'https://api.example.test/v2',
      graphqlUrl: 'https://gql.example.test/graphql',
      restUrl: 'https://rest.example.test/v1',
      authScheme: 'bearer',
      timeouts: { connect: 10_000, headers: 30_000, body: 30_000 },
    });
  });

  it('lets options win over the environment and reads the auth scheme', () => {
    const config = loadServiceConfig(
      { ...env, SERVERLESS_AUTH_SCHEME: 'bare' },
      { apiUrl: 'http://127.0.0.1:9/v2', timeouts: { headers: 5 } },
    );
    expect(config.apiUrl).toBe('http://127.0.0.1:9/v2');
    expect(config.authScheme).toBe('bare');
    expect(config.timeouts).toEqual({ connect: 10_000, headers: 5, body: 30_000 });
  });

  it('takes timeouts as durations (ms or a string), parses them to ms, and parses its own result alike', () => {
    const config = loadServiceConfig(env, { timeouts: { connect: '2s', headers: '1 minute', body: 1_500 } });
    expect(config.timeouts).toEqual({ connect: 2_000, headers: 60_000, body: 1_500 });
    expect(loadServiceConfig({}, config)).toEqual(config);
  });

  it.each([
    [{ headers: 'soon' }, 'timeouts.headers'],
    [{ connect: 0 }, 'timeouts.connect'],
    [{ headersMs: 5 }, 'timeouts'],
  ])('refuses the timeouts %j, naming %s', (timeouts, field) => {
    const error = configError(() => loadServiceConfig(env, { timeouts } as never));
    expect(error.variable).toBe(field);
  });

  it.each([
    ['SERVERLESS_API_KEY', undefined, 'is required'],
    ['SERVERLESS_API_URL', undefined, '/v2'],
    ['SERVERLESS_API_URL', 'https://api.example.test/v1', '/v2'],
    ['SERVERLESS_API_URL', 'https://api.example.test/v2?x=1', '/v2'],
    ['SERVERLESS_API_URL', 'https://user:pw@api.example.test/v2', 'credentials'],
    ['SERVERLESS_GRAPHQL_URL', 'not a url', 'http(s) URL'],
    ['SERVERLESS_GRAPHQL_URL', 'ftp://gql.example.test/graphql', 'http(s) URL'],
    ['SERVERLESS_REST_URL', 'https://rest.example.test/v2', '/v1'],
    ['SERVERLESS_REST_URL', undefined, '/v1'],
    ['SERVERLESS_AUTH_SCHEME', 'basic', "'bearer' or 'bare'"],
  ])('names %s when it is %s', (variable, value, rule) => {
    const error = configError(() => loadServiceConfig({ ...env, [variable]: value }));
    expect(error.variable).toBe(variable);
    expect(error.rule).toContain(rule);
    expect(error.message).toContain(variable);
  });

  it('never repeats the key, even when the key itself is the problem', () => {
    const badKey = 'super secret value';
    const error = configError(() => loadServiceConfig({ ...env, SERVERLESS_API_KEY: badKey }));
    expect(error.variable).toBe('SERVERLESS_API_KEY');
    for (const text of [error.message, String(error), JSON.stringify(error), error.stack ?? '']) {
      expect(text).not.toContain(badKey);
    }
  });

  it('names the option, not the variable, when the bad value came from an option', () => {
    const error = configError(() => loadServiceConfig(env, { restUrl: 'https://rest.example.test' }));
    expect(error.variable).toBe('restUrl');
  });
});

describe('createServiceClient', () => {
  const config = loadServiceConfig(env);

  it('refuses a bad explicit config', () => {
    const error = configError(() => createServiceClient({ ...config, apiUrl: 'https://api.example.test' }));
    expect(error.variable).toBe('apiUrl');
  });

  it('refuses bad rate-limit and retry options', () => {
    expect(
      configError(() => createServiceClient(config, { rateLimits: { status: { perTenSeconds: 0 } } }))
        .variable,
    ).toBe('rateLimits.status.perTenSeconds');
    expect(
      configError(() =>
        createServiceClient(config, { retry429: { maxRetries: -1, baseDelayMs: 1, maxDelayMs: 1 } }),
      ).variable,
    ).toBe('retry429.maxRetries');
  });
});
