/**
 * Temporal's TOML profiles (the file the Temporal CLI and the other SDKs read), under the
 * TEMPORAL_* variables and the options: which profile, which file, who wins, and errors that name
 * the file's key and never its value. (connection-tls.test.ts connects with a profile for real.)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import { cliConnection } from '../../client/cli';
import { loadTemporalConnection, loadTemporalConnectionWithOrigin } from '../../client/connection';
import { suiteTempDir } from '../support/temp-dir';

const API_KEY = 'profile-api-key-do-not-print';
const CERT = '-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n';
const dir = suiteTempDir('connection-profile-test');
const toml = (name: string, text: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};

const file = toml(
  'temporal.toml',
  `[profile.default]
address = "default-host:7233"
namespace = "default-ns"

[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
api_key = "${API_KEY}"

[profile.private]
address = "temporal.internal:7233"
[profile.private.tls]
server_name = "temporal.internal"
server_ca_cert_data = """
${CERT}"""

[profile.plain]
address = "plain:7233"
api_key = "${API_KEY}"
[profile.plain.tls]
disabled = true
`,
);

function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    return error as ConfigError;
  }
  throw new Error('expected an error');
}

describe('a TOML profile', () => {
  it('TEMPORAL_CONFIG_FILE and the default profile; TEMPORAL_PROFILE picks another', () => {
    expect(loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file })).toEqual({
      address: 'default-host:7233',
      namespace: 'default-ns',
    });
    expect(loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' })).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      namespace: 'ns.acct',
      tls: {},
      apiKey: API_KEY,
    });
    const internal = loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'private' });
    expect(internal.tls?.serverNameOverride).toBe('temporal.internal');
    expect(Buffer.from(internal.tls!.serverRootCACertificate!).toString()).toContain('BEGIN CERTIFICATE');
    expect(
      loadTemporalConnection({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'plain' }).tls,
    ).toBeUndefined();
  });

  it('the default file is ~/.config/temporalio/temporal.toml (XDG_CONFIG_HOME first)', () => {
    const home = path.join(dir, 'home');
    const xdg = path.join(dir, 'xdg');
    for (const base of [path.join(home, '.config'), xdg]) {
      const at = path.join(base, 'temporalio');
      mkdirSync(at, { recursive: true });
      writeFileSync(
        path.join(at, 'temporal.toml'),
        `[profile.default]\naddress = "${path.basename(base)}:7233"\n`,
      );
    }
    expect(loadTemporalConnection({ HOME: home }).address).toBe('.config:7233');
    expect(loadTemporalConnection({ HOME: home, XDG_CONFIG_HOME: xdg }).address).toBe('xdg:7233');
    // No file at all is no profile, as for Temporal's CLI.
    expect(loadTemporalConnection({ HOME: path.join(dir, 'nobody') }).address).toBe('127.0.0.1:7233');
  });

  it('variables win over the profile, options over both; the origin says which came from where', () => {
    const { config, origin } = loadTemporalConnectionWithOrigin(
      {
        TEMPORAL_CONFIG_FILE: file,
        TEMPORAL_PROFILE: 'cloud',
        TEMPORAL_NAMESPACE: 'env-ns',
        TEMPORAL_ADDRESS: '',
      },
      { address: 'option:7233' },
    );
    expect(config).toMatchObject({ address: 'option:7233', namespace: 'env-ns', apiKey: API_KEY });
    expect(origin).toEqual({
      configFile: file,
      configFileFound: true,
      profile: 'cloud',
      sources: {
        address: 'address',
        namespace: 'TEMPORAL_NAMESPACE',
        apiKey: `${file} profile.cloud.api_key`,
      },
    });
    expect(JSON.stringify(origin)).not.toContain(API_KEY);
    // The CLI's flags sit on top the same way.
    expect(cliConnection({ namespace: 'flag-ns' }, { TEMPORAL_CONFIG_FILE: file })).toEqual({
      address: 'default-host:7233',
      namespace: 'flag-ns',
    });
  });

  it("a variable replaces the profile's PEM whole (inline over a file), and is named as the source", () => {
    const missing = path.join(dir, 'not-there.pem');
    const withPath = toml(
      'ca-path.toml',
      `[profile.default]\naddress = "ca:7233"\n[profile.default.tls]\nserver_ca_cert_path = "${missing}"\n`,
    );
    const { config, origin } = loadTemporalConnectionWithOrigin({
      TEMPORAL_CONFIG_FILE: withPath,
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: CERT,
      TEMPORAL_TLS: 'TRUE',
    });
    expect(Buffer.from(config.tls!.serverRootCACertificate!).toString()).toContain('BEGIN CERTIFICATE');
    expect(origin.sources).toEqual({
      address: `${withPath} profile.default.address`,
      tls: 'TEMPORAL_TLS',
      serverCaCert: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    });
  });

  it.each([
    [
      'bad.toml',
      '[profile.default]\naddress = "http://x:7233"\n',
      {},
      /profile\.default\.address$/,
      /host:port/,
    ],
    [
      'key.toml',
      `[profile.default]\napi_key = "${API_KEY} x"\n`,
      {},
      /profile\.default\.api_key$/,
      /printable/,
    ],
    ['syntax.toml', `[profile.default\napi_key = "${API_KEY}"\n`, {}, /syntax\.toml$/, /not valid TOML/],
    ['missing.toml', null, {}, /^TEMPORAL_CONFIG_FILE$/, /ENOENT/],
    ['one.toml', '[profile.default]\n', { TEMPORAL_PROFILE: 'prod' }, /^TEMPORAL_PROFILE$/, /"prod"/],
  ])('%s: names the setting and the rule, never the value', (name, text, env, variable, rule) => {
    const at = text === null ? path.join(dir, name) : toml(name, text);
    const error = thrown(() => loadTemporalConnection({ TEMPORAL_CONFIG_FILE: at, ...env }));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toMatch(variable);
    expect(error.message).toMatch(rule);
    expect(error.message).not.toContain(API_KEY);
    expect(error.message).not.toContain('http://x');
  });
});
