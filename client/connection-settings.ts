/**
 * The connection's settings, one by one: their names (the variables, the options), the rule each
 * value keeps (zod, with messages that never quote the value), and how layers of them stack.
 * connection-environment.ts reads them from Temporal's file and variables; connection.ts takes
 * them together and connects.
 */
import type { TLSConfig } from '@temporalio/client';
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

export type Setting = keyof typeof TEMPORAL_CONNECTION_ENV;
export type TlsSetting = Exclude<Setting, 'address' | 'namespace' | 'tls' | 'apiKey'>;
export const TLS_SETTINGS: readonly TlsSetting[] = [
  'serverCaCert',
  'serverCaCertPath',
  'serverName',
  'clientCert',
  'clientCertPath',
  'clientKey',
  'clientKeyPath',
];

/** The option's name in TemporalConnectionInput, for errors about a value that came from there. */
export const optionName = (setting: Setting): string =>
  (TLS_SETTINGS as readonly string[]).includes(setting) ? `tls.${setting}` : setting;

// Every rule carries its own message, so zod never gets to quote the input.
const addressRule = 'must be host:port';
const namespaceRule = 'must be a non-empty name without whitespace';
const apiKeyRule = 'must be printable ASCII without spaces (it travels in a header)';
const serverNameRule = 'must be a host name';
const pathRule = 'must be a file path';
export const boolRule = "must be 'true' or 'false'";

const pemSchema = z.union([z.string(), z.instanceof(Uint8Array)], { error: 'must be PEM text' });
const pathSchema = z.string({ error: pathRule }).min(1, { error: pathRule });

/** One value per setting; each is checked alone here, and together in resolve(). */
export const settingSchemas = {
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

export type Given = { [K in Setting]?: z.infer<(typeof settingSchemas)[K]> };

/** Where each value came from: its environment variable or its option. */
export type Source = Partial<Record<Setting, string>>;

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

export function fail(source: Source, setting: Setting, rule: string): never {
  throw new ConfigError(source[setting] ?? optionName(setting), rule);
}

/** Two layers of settings, the upper winning setting by setting; an inline PEM and its file go together. */
export function layer(lower: { given: Given; source: Source }, upper: { given: Given; source: Source }) {
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

export function readInput(input: TemporalConnectionInput): Given {
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
