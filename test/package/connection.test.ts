/**
 * The Temporal connection's settings, parsed: Temporal's environment variables, the facade's
 * options, the CLI's flags and the worker's configuration. Errors name the variable, option or
 * flag and the rule, and never repeat a value. (connection-tls.test.ts connects for real.)
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, ValidationError } from '../../api/errors';
import { cliConnection, runCli } from '../../client/cli';
import {
  connectionOptions,
  connectionSecrets,
  describeConnection,
  loadTemporalConnection,
  parseTemporalConnection,
} from '../../client/connection';
import { loadGatewayConfig, loadWorkerConfig, secretValues } from '../../worker/config';
import { suiteTempDir } from '../support/temp-dir';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIGHsecretkeymaterial\n-----END PRIVATE KEY-----\n';
const API_KEY = 'temporal-api-key-do-not-print';

const dir = suiteTempDir('connection-test');
const file = (name: string, text: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};
const caPath = file('ca.pem', CERT);
const certPath = file('client.pem', CERT);
const keyPath = file('client.key', KEY);
const notPem = file('not.pem', 'hello');

function thrown(fn: () => unknown): Error & { variable?: string; field?: string; rule: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { rule: string };
  }
  throw new Error('expected an error');
}

describe('loadTemporalConnection (environment)', () => {
  it('defaults to a local plain connection', () => {
    expect(loadTemporalConnection({})).toEqual({ address: '127.0.0.1:7233', namespace: 'default' });
  });

  it('an API key turns TLS on (as Temporal Cloud needs) unless TEMPORAL_TLS=false', () => {
    const cloud = loadTemporalConnection({
      TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
      TEMPORAL_API_KEY: API_KEY,
    });
    expect(cloud).toEqual({
      address: 'my-ns.a1b2c.tmprl.cloud:7233',
      namespace: 'my-ns.a1b2c',
      tls: {},
      apiKey: API_KEY,
    });
    expect(loadTemporalConnection({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS: 'false' }).tls).toBeUndefined();
    expect(loadTemporalConnection({ TEMPORAL_TLS: 'true' }).tls).toEqual({});
    expect(loadTemporalConnection({ TEMPORAL_TLS: '' }).tls).toBeUndefined();
  });

  it('reads mTLS from files, or inline PEM, and the server name', () => {
    const fromFiles = loadTemporalConnection({
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: caPath,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_TLS_CLIENT_CERT_PATH: certPath,
      TEMPORAL_TLS_CLIENT_KEY_PATH: keyPath,
    });
    const inline = loadTemporalConnection({
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: CERT,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_TLS_CLIENT_CERT_DATA: CERT,
      TEMPORAL_TLS_CLIENT_KEY_DATA: KEY,
    });
    for (const config of [fromFiles, inline]) {
      expect(config.tls?.serverNameOverride).toBe('temporal.internal');
      expect(Buffer.from(config.tls!.serverRootCACertificate!).toString()).toBe(CERT);
      expect(Buffer.from(config.tls!.clientCertPair!.crt).toString()).toBe(CERT);
      expect(Buffer.from(config.tls!.clientCertPair!.key).toString()).toBe(KEY);
      expect(describeConnection(config)).toMatchObject({ tls: 'mtls', auth: 'none' });
    }
  });

  it.each([
    [{ TEMPORAL_ADDRESS: 'http://temporal:7233' }, 'TEMPORAL_ADDRESS', /host:port/],
    [{ TEMPORAL_NAMESPACE: 'two words' }, 'TEMPORAL_NAMESPACE', /without whitespace/],
    [{ TEMPORAL_TLS: 'yes' }, 'TEMPORAL_TLS', /'true' or 'false'/],
    [{ TEMPORAL_API_KEY: `${API_KEY} x` }, 'TEMPORAL_API_KEY', /printable ASCII/],
    [{ TEMPORAL_TLS_SERVER_NAME: 'a/b' }, 'TEMPORAL_TLS_SERVER_NAME', /host name/],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: certPath },
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      /required with a client cert/,
    ],
    [{ TEMPORAL_TLS_CLIENT_KEY_DATA: KEY }, 'TEMPORAL_TLS_CLIENT_CERT_PATH', /required with a client key/],
    [
      { TEMPORAL_TLS_CLIENT_CERT_PATH: certPath, TEMPORAL_TLS_CLIENT_CERT_DATA: CERT },
      'TEMPORAL_TLS_CLIENT_CERT_DATA',
      /together with TEMPORAL_TLS_CLIENT_CERT_PATH/,
    ],
    [
      { TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(dir, 'missing.pem') },
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      /ENOENT/,
    ],
    [{ TEMPORAL_TLS_SERVER_CA_CERT_PATH: notPem }, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', /PEM certificate/],
    [
      { TEMPORAL_TLS_CLIENT_CERT_DATA: CERT, TEMPORAL_TLS_CLIENT_KEY_DATA: `${API_KEY}-not-a-key` },
      'TEMPORAL_TLS_CLIENT_KEY_DATA',
      /PEM private key/,
    ],
    [
      { TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_NAME: 'temporal.internal' },
      'TEMPORAL_TLS',
      /is false, but TEMPORAL_TLS_SERVER_NAME asks for TLS/,
    ],
  ])('refuses %j: names %s and the rule, never the value', (env, variable, rule) => {
    const error = thrown(() => loadTemporalConnection(env as Record<string, string>));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(rule);
    expect(error.message).not.toContain(API_KEY);
    expect(error.message).not.toContain('secretkeymaterial');
    expect(error.message).not.toContain('http://temporal');
  });

  it('options win over the environment, setting by setting; a file option replaces inline PEM', () => {
    const config = loadTemporalConnection(
      {
        TEMPORAL_ADDRESS: 'env:7233',
        TEMPORAL_NAMESPACE: 'env-ns',
        TEMPORAL_TLS_CLIENT_CERT_DATA: CERT,
        TEMPORAL_TLS_CLIENT_KEY_DATA: KEY,
      },
      { address: 'option:7233', tls: { clientCertPath: certPath, clientKeyPath: keyPath } },
    );
    expect(config.address).toBe('option:7233');
    expect(config.namespace).toBe('env-ns');
    expect(config.tls?.clientCertPair).toBeDefined();
  });
});

describe('parseTemporalConnection (options)', () => {
  it('errors name the option', () => {
    expect(thrown(() => parseTemporalConnection({ address: 'nope' })).message).toBe(
      'address: must be host:port',
    );
    expect(thrown(() => parseTemporalConnection({ tls: { clientCertPath: certPath } })).message).toMatch(
      /^tls\.clientKeyPath: is required/,
    );
    expect(thrown(() => parseTemporalConnection({ tls: { serverCaCert: 'x' } })).message).toMatch(
      /^tls\.serverCaCert: must be a PEM certificate/,
    );
    expect(thrown(() => parseTemporalConnection({ tls: { bogus: 1 } } as never)).message).toMatch(/^tls/);
  });

  it('accepts PEM as bytes, and the result is what the SDK connects with', () => {
    const config = parseTemporalConnection({
      address: 'temporal:7233',
      tls: { serverCaCert: Buffer.from(CERT), clientCert: CERT, clientKey: Buffer.from(KEY) },
      apiKey: API_KEY,
    });
    const options = connectionOptions(config);
    expect(Object.keys(options).sort()).toEqual(['address', 'apiKey', 'tls']);
    expect(options.tls?.clientCertPair).toBeDefined();
    expect(connectionSecrets(config)).toEqual([API_KEY, KEY.trim()]);
  });
});

describe('the CLI', () => {
  it('flags win over the variables; the API key comes from the environment only', () => {
    const config = cliConnection(
      {
        address: 'flag:7233',
        tlsServerCaCert: caPath,
        tlsServerName: 'temporal.internal',
        tlsClientCert: certPath,
        tlsClientKey: keyPath,
      },
      { TEMPORAL_ADDRESS: 'env:7233', TEMPORAL_NAMESPACE: 'env-ns', TEMPORAL_API_KEY: API_KEY },
    );
    expect(config).toMatchObject({ address: 'flag:7233', namespace: 'env-ns', apiKey: API_KEY });
    expect(describeConnection(config)).toMatchObject({ tls: 'mtls', auth: 'api-key' });
    expect(cliConnection({ tls: true }, {}).tls).toEqual({});
  });

  it('a bad flag is a ValidationError naming it; a bad variable names the variable; both exit 2', async () => {
    const flagError = thrown(() => cliConnection({ tlsClientCert: certPath }, {}));
    expect(flagError).toBeInstanceOf(ValidationError);
    expect(flagError.message).toMatch(/^--tls-client-key: is required/);

    let err = '';
    const io = { out: () => undefined, err: (text: string) => (err += text) };
    expect(await runCli(['--address', 'nope', 'job', 'status', 'x'], io, undefined, {})).toBe(2);
    expect(err).toContain('--address: must be host:port');
    err = '';
    expect(await runCli(['job', 'status', 'x'], io, undefined, { TEMPORAL_TLS: 'maybe' })).toBe(2);
    expect(err).toContain("TEMPORAL_TLS: must be 'true' or 'false'");
  });
});

describe('the worker and the gateway', () => {
  const service = {
    SERVERLESS_API_KEY: 'service-key',
    SERVERLESS_API_URL: 'https://api.example.test/v2',
    SERVERLESS_GRAPHQL_URL: 'https://api.example.test/graphql',
    SERVERLESS_REST_URL: 'https://rest.example.test/v1',
  };
  const tlsEnv = {
    TEMPORAL_ADDRESS: 'temporal:7233',
    TEMPORAL_TLS_CLIENT_CERT_PATH: certPath,
    TEMPORAL_TLS_CLIENT_KEY_PATH: keyPath,
    TEMPORAL_API_KEY: API_KEY,
  };

  it('read the connection from the same variables, and count its secrets as secrets', () => {
    const worker = loadWorkerConfig({ ...service, ...tlsEnv, TEMPORAL_TASK_QUEUE: 'gpu' });
    expect(worker.temporal).toMatchObject({ address: 'temporal:7233', taskQueue: 'gpu', apiKey: API_KEY });
    expect(worker.temporal.tls?.clientCertPair).toBeDefined();
    expect(secretValues(worker)).toEqual(expect.arrayContaining([API_KEY, KEY.trim(), 'service-key']));

    const gateway = loadGatewayConfig({ ...tlsEnv, WEBHOOK_SECRET: 'x'.repeat(32) });
    expect(gateway.temporal.apiKey).toBe(API_KEY);
  });

  it('report a bad connection variable by name', () => {
    expect(
      thrown(() => loadWorkerConfig({ ...service, TEMPORAL_TLS_CLIENT_KEY_PATH: keyPath })).message,
    ).toMatch(/^TEMPORAL_TLS_CLIENT_CERT_PATH: is required/);
  });

  it('read the health endpoint: off by default, WORKER_HEALTH_PORT and WORKER_HEALTH_HOST', () => {
    expect(loadWorkerConfig(service).health).toBeUndefined();
    expect(loadWorkerConfig({ ...service, WORKER_HEALTH_PORT: '8081' }).health).toEqual({
      port: 8081,
      host: '127.0.0.1',
    });
    expect(
      loadWorkerConfig({ ...service, WORKER_HEALTH_PORT: '8081', WORKER_HEALTH_HOST: '0.0.0.0' }).health,
    ).toEqual({ port: 8081, host: '0.0.0.0' });
    expect(thrown(() => loadWorkerConfig({ ...service, WORKER_HEALTH_PORT: '70000' })).message).toMatch(
      /^WORKER_HEALTH_PORT: must be an integer port/,
    );
  });
});
