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
 * Every value is checked with zod before anything connects. An error names the variable (or the
 * option) and the rule it breaks, never the value: the API key and the client key are secrets, and
 * one rule for every field is easier to keep than two.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfigProfile,
} from '@temporalio/envconfig';
import { z } from 'zod';
import { ConfigError } from '../api/errors';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_TEMPORAL_NAMESPACE = 'default';

/** What a connection needs, parsed: ready for `Connection.connect` and `NativeConnection.connect`. */
export interface TemporalConnectionConfig {
  /** `host:port` of the frontend. */
  address: string;
  namespace: string;
  /** Absent: plain TCP. An empty object: TLS with the system's roots and the address's host name. */
  tls?: TLSConfig;
  /** Sent as `Authorization: Bearer <key>`. A secret: never logged. */
  apiKey?: string;
}

/** A PEM given inline (string or bytes) or as a file to read. */
export type Pem = string | Uint8Array;

/** The options a program passes instead of (or on top of) the environment. */
export interface TemporalConnectionInput {
  address?: string;
  namespace?: string;
  /**
   * `true`: TLS with the system's roots. An object: TLS with any of these. `false`: plain TCP even
   * with an API key. Absent: TLS when an API key or any TLS setting is given.
   */
  tls?:
    | boolean
    | {
        /** The CA that signed the server's certificate (PEM), when the system does not trust it. */
        serverCaCert?: Pem;
        serverCaCertPath?: string;
        /** The name to check the server's certificate against (SNI), when it differs from the host. */
        serverName?: string;
        /** mTLS: the client's certificate chain (PEM) and its private key (PEM). */
        clientCert?: Pem;
        clientCertPath?: string;
        clientKey?: Pem;
        clientKeyPath?: string;
      };
  apiKey?: string;
}

/** Temporal's environment variable for each setting. */
export const TEMPORAL_CONNECTION_ENV = {
  address: 'TEMPORAL_ADDRESS',
  namespace: 'TEMPORAL_NAMESPACE',
  tls: 'TEMPORAL_TLS',
  serverCaCert: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  serverCaCertPath: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  serverName: 'TEMPORAL_TLS_SERVER_NAME',
  clientCert: 'TEMPORAL_TLS_CLIENT_CERT_DATA',
  clientCertPath: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  clientKey: 'TEMPORAL_TLS_CLIENT_KEY_DATA',
  clientKeyPath: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  apiKey: 'TEMPORAL_API_KEY',
} as const;

type Setting = keyof typeof TEMPORAL_CONNECTION_ENV;
type TlsSetting = Exclude<Setting, 'address' | 'namespace' | 'tls' | 'apiKey'>;
const TLS_SETTINGS: readonly TlsSetting[] = [
  'serverCaCert',
  'serverCaCertPath',
  'serverName',
  'clientCert',
  'clientCertPath',
  'clientKey',
  'clientKeyPath',
];

/** The option's name in TemporalConnectionInput, for errors about a value that came from there. */
const optionName = (setting: Setting): string =>
  (TLS_SETTINGS as readonly string[]).includes(setting) ? `tls.${setting}` : setting;

// Every rule carries its own message, so zod never gets to quote the input.
const addressRule = 'must be host:port';
const namespaceRule = 'must be a non-empty name without whitespace';
const apiKeyRule = 'must be printable ASCII without spaces (it travels in a header)';
const serverNameRule = 'must be a host name';
const pathRule = 'must be a file path';
const boolRule = "must be 'true' or 'false'";

const pemSchema = z.union([z.string(), z.instanceof(Uint8Array)], { error: 'must be PEM text' });
const pathSchema = z.string({ error: pathRule }).min(1, { error: pathRule });

/** One value per setting; each is checked alone here, and together in resolve(). */
const settingSchemas = {
  address: z.string({ error: addressRule }).regex(/^[^\s/]+:\d{1,5}$/, { error: addressRule }),
  namespace: z.string({ error: namespaceRule }).regex(/^\S+$/, { error: namespaceRule }),
  tls: z.boolean({ error: 'must be a boolean or an object' }),
  serverCaCert: pemSchema,
  serverCaCertPath: pathSchema,
  serverName: z.string({ error: serverNameRule }).regex(/^[A-Za-z0-9.-]+$/, { error: serverNameRule }),
  clientCert: pemSchema,
  clientCertPath: pathSchema,
  clientKey: pemSchema,
  clientKeyPath: pathSchema,
  apiKey: z.string({ error: apiKeyRule }).regex(/^[\x21-\x7e]+$/, { error: apiKeyRule }),
} satisfies Record<Setting, z.ZodType>;

type Given = { [K in Setting]?: z.infer<(typeof settingSchemas)[K]> };

/** Where each value came from: its environment variable or its option. */
type Source = Partial<Record<Setting, string>>;

const tlsObjectSchema = z.strictObject(
  Object.fromEntries(TLS_SETTINGS.map((key) => [key, settingSchemas[key].optional()])) as {
    [K in TlsSetting]: z.ZodOptional<(typeof settingSchemas)[K]>;
  },
  { error: 'must be true, false or an object of the TLS options' },
);

export const temporalConnectionInputSchema = z.strictObject({
  address: settingSchemas.address.optional(),
  namespace: settingSchemas.namespace.optional(),
  tls: z.union([z.boolean(), tlsObjectSchema], { error: 'must be true, false or an object' }).optional(),
  apiKey: settingSchemas.apiKey.optional(),
});

function fail(source: Source, setting: Setting, rule: string): never {
  throw new ConfigError(source[setting] ?? optionName(setting), rule);
}

function readEnv(env: NodeJS.ProcessEnv): { given: Given; source: Source } {
  const given: Record<string, unknown> = {};
  const source: Source = {};
  for (const [setting, variable] of Object.entries(TEMPORAL_CONNECTION_ENV) as Array<[Setting, string]>) {
    const raw = env[variable];
    // An empty variable means unset: compose files and shells produce them for "not configured".
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (setting === 'tls') {
      const lower = raw.trim().toLowerCase();
      if (lower === 'true' || lower === '1') value = true;
      else if (lower === 'false' || lower === '0') value = false;
      else throw new ConfigError(variable, boolRule);
    }
    const parsed = settingSchemas[setting].safeParse(value);
    if (!parsed.success) throw new ConfigError(variable, parsed.error.issues[0]?.message ?? 'is invalid');
    given[setting] = parsed.data;
    source[setting] = variable;
  }
  return { given: given as Given, source };
}

/** The profile's TOML key for each setting, to name it in an error. */
const PROFILE_KEYS: Record<Setting, string> = {
  address: 'address',
  namespace: 'namespace',
  tls: 'tls.disabled',
  serverCaCert: 'tls.server_ca_cert_data',
  serverCaCertPath: 'tls.server_ca_cert_path',
  serverName: 'tls.server_name',
  clientCert: 'tls.client_cert_data',
  clientCertPath: 'tls.client_cert_path',
  clientKey: 'tls.client_key_data',
  clientKeyPath: 'tls.client_key_path',
  apiKey: 'api_key',
};

/** Where the connection's settings came from, for `doctor` and a start-up log line. */
export interface TemporalConnectionOrigin {
  /** The TOML file looked at (it may not exist), or absent when there is no home directory. */
  configFile?: string;
  /** Whether that file exists. */
  configFileFound: boolean;
  /** The profile used, or asked for. */
  profile: string;
  /** Each setting given, and where from: a variable, `<file> profile.<name>.<key>`, or an option. */
  sources: Partial<Record<Setting, string>>;
}

/** Temporal's rule for the file: TEMPORAL_CONFIG_FILE, else the user's config directory. */
function configFilePath(env: NodeJS.ProcessEnv): string | undefined {
  if (env.TEMPORAL_CONFIG_FILE) return env.TEMPORAL_CONFIG_FILE;
  if (os.platform() === 'win32')
    return env.APPDATA ? path.join(env.APPDATA, 'temporalio', 'temporal.toml') : undefined;
  const base =
    os.platform() === 'darwin'
      ? env.HOME && path.join(env.HOME, 'Library', 'Application Support')
      : env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME)
        ? env.XDG_CONFIG_HOME
        : env.HOME && path.join(env.HOME, '.config');
  return base ? path.join(base, 'temporalio', 'temporal.toml') : undefined;
}

const dataOrPath = (
  source: ConfigDataSource | undefined,
  inline: Setting,
  file: Setting,
): Partial<Record<Setting, unknown>> =>
  !source
    ? {}
    : 'path' in source
      ? { [file]: source.path }
      : {
          [inline]: typeof source.data === 'string' ? source.data : Buffer.from(source.data).toString('utf8'),
        };

/**
 * The profile of Temporal's TOML file, read by Temporal's package (the variables are read by
 * readEnv, which names each one in its errors). An error names the file and the key, never a value.
 */
function readProfile(env: NodeJS.ProcessEnv): {
  given: Given;
  source: Source;
  origin: TemporalConnectionOrigin;
} {
  const configFile = configFilePath(env);
  const profileName = env.TEMPORAL_PROFILE || 'default';
  const origin: TemporalConnectionOrigin = {
    ...(configFile ? { configFile } : {}),
    configFileFound: false,
    profile: profileName,
    sources: {},
  };
  if (!configFile) return { given: {}, source: {}, origin };
  let text: string;
  try {
    text = readFileSync(configFile, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // No file is Temporal's rule for "no profile", unless one was named.
    if (code === 'ENOENT' && !env.TEMPORAL_CONFIG_FILE) {
      if (env.TEMPORAL_PROFILE)
        throw new ConfigError('TEMPORAL_PROFILE', `names a profile, but ${configFile} does not exist`);
      return { given: {}, source: {}, origin };
    }
    throw new ConfigError('TEMPORAL_CONFIG_FILE', `cannot read the file (${code ?? 'error'})`);
  }
  origin.configFileFound = true;
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({
      configSource: { data: text },
      disableEnv: true,
      ...(env.TEMPORAL_PROFILE ? { profile: env.TEMPORAL_PROFILE } : {}),
    });
  } catch (error) {
    // The package's messages name keys and profiles (TOML syntax errors quote a line: not kept).
    const message = (error as Error).message;
    const rule = /not found/.test(message)
      ? `names profile "${profileName}", which ${configFile} does not have`
      : /Cannot specify both/.test(message)
        ? message.replace(/^Cannot specify both/, 'sets both')
        : 'is not valid TOML';
    throw new ConfigError(/not found/.test(message) ? 'TEMPORAL_PROFILE' : configFile, rule);
  }
  const raw: Partial<Record<Setting, unknown>> = {
    ...(profile.address !== undefined ? { address: profile.address } : {}),
    ...(profile.namespace !== undefined ? { namespace: profile.namespace } : {}),
    ...(profile.apiKey !== undefined ? { apiKey: profile.apiKey } : {}),
    ...(profile.tls?.disabled !== undefined ? { tls: !profile.tls.disabled } : {}),
    ...(profile.tls?.serverName !== undefined ? { serverName: profile.tls.serverName } : {}),
    ...dataOrPath(profile.tls?.serverCACert, 'serverCaCert', 'serverCaCertPath'),
    ...dataOrPath(profile.tls?.clientCert, 'clientCert', 'clientCertPath'),
    ...dataOrPath(profile.tls?.clientKey, 'clientKey', 'clientKeyPath'),
  };
  // A [profile.x.tls] table with nothing in it still asks for TLS, as Temporal reads it.
  if (profile.tls && raw.tls === undefined) raw.tls = true;
  const given: Record<string, unknown> = {};
  const source: Source = {};
  for (const [setting, value] of Object.entries(raw) as Array<[Setting, unknown]>) {
    const name = `${configFile} profile.${profileName}.${PROFILE_KEYS[setting]}`;
    const parsed = settingSchemas[setting].safeParse(value);
    if (!parsed.success) throw new ConfigError(name, parsed.error.issues[0]?.message ?? 'is invalid');
    given[setting] = parsed.data;
    source[setting] = name;
  }
  return { given: given as Given, source, origin };
}

/** Two layers of settings, the upper winning setting by setting; an inline PEM and its file go together. */
function layer(lower: { given: Given; source: Source }, upper: { given: Given; source: Source }) {
  const given: Given = { ...lower.given };
  const source: Source = { ...lower.source };
  const pairs: Array<[Setting, Setting]> = [
    ['serverCaCert', 'serverCaCertPath'],
    ['clientCert', 'clientCertPath'],
    ['clientKey', 'clientKeyPath'],
  ];
  for (const [inline, file] of pairs) {
    if (upper.given[inline] !== undefined || upper.given[file] !== undefined) {
      delete given[inline];
      delete given[file];
      delete source[inline];
      delete source[file];
    }
  }
  for (const key of Object.keys(upper.given) as Setting[]) {
    (given as Record<string, unknown>)[key] = upper.given[key];
    if (upper.source[key]) source[key] = upper.source[key];
    else delete source[key];
  }
  return { given, source };
}

function readInput(input: TemporalConnectionInput): Given {
  const parsed = temporalConnectionInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(issue?.path.map(String).join('.') || 'connection', issue?.message ?? 'is invalid');
  }
  const { tls, ...rest } = parsed.data;
  const given: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined) given[key] = value;
  if (typeof tls === 'boolean') given.tls = tls;
  else if (tls) {
    given.tls = true;
    for (const [key, value] of Object.entries(tls)) if (value !== undefined) given[key] = value;
  }
  return given as Given;
}

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
  const fromEnv = readEnv(env);
  const fromProfile = readProfile(env);
  const fromOptions = { given: readInput(overrides), source: {} };
  const { given, source } = layer(layer(fromProfile, fromEnv), fromOptions);
  const config = resolve(given, source);
  const sources: Partial<Record<Setting, string>> = {};
  for (const key of Object.keys(given) as Setting[]) sources[key] = source[key] ?? optionName(key);
  return { config, origin: { ...fromProfile.origin, sources } };
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
