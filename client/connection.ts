/**
 * How everything connects to Temporal: the worker, the webhook gateway, the CLI and a program that
 * uses the facade. Address, namespace, TLS (the server's CA, the server name), mTLS (a client
 * certificate and key, from files or inline PEM) and an API key (Temporal Cloud's, or any
 * cluster's that checks `Authorization: Bearer`).
 *
 * The settings are Temporal's own client environment configuration, read with Temporal's package
 * (@temporalio/envconfig), so a deployment configured for the Temporal CLI or another SDK works here
 * as it is: a profile of the TOML file (`TEMPORAL_CONFIG_FILE`, else
 * `~/.config/temporalio/temporal.toml`; `TEMPORAL_PROFILE`, else `default`), then the `TEMPORAL_*`
 * variables over it, then a program's options over both:
 * https://docs.temporal.io/references/client-environment-configuration
 *
 * connection-environment.ts reads the file and the variables (with that package) and names where
 * each value came from; connection-settings.ts holds each setting's rule and how layers stack; here
 * they are taken together (the rules that concern more than one value, the PEM files read) and
 * connected. Every value is checked with zod before anything connects. An error names the
 * variable, the file's key or the option, and the rule it breaks, never the value: the API key
 * and the client key are secrets, and one rule for every field is easier to keep than two.
 */
import { readFileSync } from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { ConfigError } from '../api/errors';
import { readEnvironment, type TemporalConnectionOrigin } from './connection-environment';
import {
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  fail,
  type Given,
  layer,
  optionName,
  readInput,
  type Setting,
  type Source,
  TEMPORAL_CONNECTION_ENV,
  type TemporalConnectionConfig,
  type TemporalConnectionInput,
  TLS_SETTINGS,
} from './connection-settings';

export type { TemporalConnectionOrigin } from './connection-environment';
export {
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  type Pem,
  TEMPORAL_CONNECTION_ENV,
  type TemporalConnectionConfig,
  type TemporalConnectionInput,
  temporalConnectionInputSchema,
} from './connection-settings';

const PEM_CERT = /-----BEGIN CERTIFICATE-----/;
const PEM_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/** The PEM of a setting given inline or as a file; checked for its armour, never quoted. */
function pem(
  given: Given,
  source: Source,
  inline: 'serverCaCert' | 'clientCert' | 'clientKey',
  file: 'serverCaCertPath' | 'clientCertPath' | 'clientKeyPath',
): Uint8Array | undefined {
  const value = given[inline];
  const filePath = given[file];
  if (value !== undefined && filePath !== undefined) {
    fail(source, inline, `cannot be set together with ${source[file] ?? optionName(file)}`);
  }
  let bytes: Uint8Array;
  let setting: Setting = inline;
  if (value !== undefined) {
    bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  } else if (filePath !== undefined) {
    setting = file;
    try {
      bytes = readFileSync(filePath);
    } catch (error) {
      fail(source, file, `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  } else {
    return undefined;
  }
  const text = Buffer.from(bytes).toString('utf8');
  const isKey = inline === 'clientKey';
  if (!(isKey ? PEM_KEY : PEM_CERT).test(text)) {
    fail(
      source,
      setting,
      isKey
        ? 'must be a PEM private key (-----BEGIN ... PRIVATE KEY-----)'
        : 'must be a PEM certificate (-----BEGIN CERTIFICATE-----)',
    );
  }
  return bytes;
}

/** The settings taken together: the rules that concern more than one value, and the files read. */
function resolve(given: Given, source: Source): TemporalConnectionConfig {
  const tlsSettings = TLS_SETTINGS.filter((key) => given[key] !== undefined);
  if (given.tls === false && tlsSettings.length > 0) {
    const first = tlsSettings[0]!;
    fail(source, 'tls', `is false, but ${source[first] ?? optionName(first)} asks for TLS`);
  }
  const serverRootCACertificate = pem(given, source, 'serverCaCert', 'serverCaCertPath');
  const crt = pem(given, source, 'clientCert', 'clientCertPath');
  const key = pem(given, source, 'clientKey', 'clientKeyPath');
  // Named as the other half was given: an environment variable, or an option.
  const nameLike = (setting: Setting, like: Setting[]) =>
    like.some((other) => source[other] !== undefined)
      ? TEMPORAL_CONNECTION_ENV[setting]
      : optionName(setting);
  if (crt && !key) {
    const name = nameLike('clientKeyPath', ['clientCert', 'clientCertPath']);
    throw new ConfigError(name, 'is required with a client certificate (mTLS), or its inline form');
  }
  if (key && !crt) {
    const name = nameLike('clientCertPath', ['clientKey', 'clientKeyPath']);
    throw new ConfigError(name, 'is required with a client key (mTLS), or its inline form');
  }

  // Temporal's rule: an API key turns TLS on unless TLS is explicitly off.
  const useTls = given.tls ?? (tlsSettings.length > 0 || given.apiKey !== undefined);
  const tls: TLSConfig | undefined = useTls
    ? {
        ...(given.serverName ? { serverNameOverride: given.serverName } : {}),
        ...(serverRootCACertificate ? { serverRootCACertificate } : {}),
        ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      }
    : undefined;
  return {
    address: given.address ?? DEFAULT_TEMPORAL_ADDRESS,
    namespace: given.namespace ?? DEFAULT_TEMPORAL_NAMESPACE,
    ...(tls ? { tls } : {}),
    ...(given.apiKey ? { apiKey: given.apiKey } : {}),
  };
}

/**
 * The connection from Temporal's TOML profile and environment variables (TEMPORAL_ADDRESS,
 * TEMPORAL_TLS_*, TEMPORAL_API_KEY, ...), with `overrides` winning over them setting by setting.
 * An error names the variable, the file's key or the option that held the bad value.
 */
export function loadTemporalConnection(
  env: NodeJS.ProcessEnv = process.env,
  overrides: TemporalConnectionInput = {},
): TemporalConnectionConfig {
  return loadTemporalConnectionWithOrigin(env, overrides).config;
}

/** loadTemporalConnection, and where each setting came from (never a value). */
export function loadTemporalConnectionWithOrigin(
  env: NodeJS.ProcessEnv = process.env,
  overrides: TemporalConnectionInput = {},
): { config: TemporalConnectionConfig; origin: TemporalConnectionOrigin } {
  const environment = readEnvironment(env);
  const fromOptions = { given: readInput(overrides), source: {} };
  const { given, source } = layer(environment, fromOptions);
  const config = resolve(given, source);
  const sources: Partial<Record<Setting, string>> = {};
  for (const key of Object.keys(given) as Setting[]) sources[key] = source[key] ?? optionName(key);
  return { config, origin: { ...environment.origin, sources } };
}

/** An explicit connection, ignoring the environment; errors name the option (`tls.clientKeyPath`). */
export function parseTemporalConnection(input: TemporalConnectionInput): TemporalConnectionConfig {
  return resolve(readInput(input), {});
}

/** The options of `Connection.connect`, `Connection.lazy` and `NativeConnection.connect`. */
export function connectionOptions(config: TemporalConnectionConfig): {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
} {
  return {
    address: config.address,
    ...(config.tls ? { tls: config.tls } : {}),
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
  };
}

/** How the connection is secured, for a log line: never a certificate, a key or an API key. */
export function describeConnection(config: TemporalConnectionConfig): {
  address: string;
  namespace: string;
  tls: 'off' | 'tls' | 'mtls';
  auth: 'api-key' | 'none';
} {
  return {
    address: config.address,
    namespace: config.namespace,
    tls: !config.tls ? 'off' : config.tls.clientCertPair ? 'mtls' : 'tls',
    auth: config.apiKey ? 'api-key' : 'none',
  };
}

/** The values that logs must never show: the API key and the client's private key. */
export function connectionSecrets(config: Partial<TemporalConnectionConfig>): string[] {
  const key = config.tls?.clientCertPair?.key;
  return [
    ...(config.apiKey ? [config.apiKey] : []),
    ...(key ? [Buffer.from(key).toString('utf8').trim()] : []),
  ];
}

/**
 * A Temporal client for the facade (startJob, awaitJob, ...), connected with the environment's
 * settings and `overrides` on top:
 *
 *   const client = await connectTemporalClient();                       // TEMPORAL_* variables
 *   const client = await connectTemporalClient({ address: 'ns.acct.tmprl.cloud:7233',
 *     namespace: 'ns.acct', apiKey: process.env.MY_KEY });
 *
 * Pass `env: {}` to ignore the environment. Close it with `client.connection.close()`.
 */
export async function connectTemporalClient(
  overrides: TemporalConnectionInput = {},
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<Client> {
  const config = loadTemporalConnection(options.env ?? process.env, overrides);
  const connection = await Connection.connect(connectionOptions(config));
  return new Client({ connection, namespace: config.namespace });
}
