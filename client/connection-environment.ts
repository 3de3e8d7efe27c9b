/**
 * The connection's settings from the environment, read by Temporal's own package
 * (@temporalio/envconfig) as the Temporal CLI and the other SDKs read them: a profile of the TOML
 * file, then the TEMPORAL_* variables over it. What is left here is what the package does not do:
 * say where each value came from (to name it in an error, and for `doctor`), check each value,
 * and take an empty variable as unset.
 */
import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfigProfile,
} from '@temporalio/envconfig';
import { ConfigError } from '../api/errors';
import {
  boolRule,
  type Given,
  layer,
  type Setting,
  type Source,
  settingSchemas,
  TEMPORAL_CONNECTION_ENV,
} from './connection-settings';

/** The profile's TOML key of a setting, to name it in an error: its variable's name, as a key. */
const profileKey = (setting: Setting): string =>
  setting === 'tls'
    ? 'tls.disabled'
    : TEMPORAL_CONNECTION_ENV[setting]
        .replace(/^TEMPORAL_/, '')
        .toLowerCase()
        .replace(/^tls_/, 'tls.');

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

/**
 * The file Temporal's package reads (TEMPORAL_CONFIG_FILE, else the user's config directory), so
 * `doctor` can say which one it was: the package reads it but does not tell.
 */
function configFilePath(vars: Record<string, string>): string | undefined {
  if (vars.TEMPORAL_CONFIG_FILE) return vars.TEMPORAL_CONFIG_FILE;
  if (os.platform() === 'win32')
    return vars.APPDATA ? path.join(vars.APPDATA, 'temporalio', 'temporal.toml') : undefined;
  const base =
    os.platform() === 'darwin'
      ? vars.HOME && path.join(vars.HOME, 'Library', 'Application Support')
      : vars.XDG_CONFIG_HOME
        ? path.isAbsolute(vars.XDG_CONFIG_HOME)
          ? vars.XDG_CONFIG_HOME
          : undefined
        : vars.HOME && path.join(vars.HOME, '.config');
  return base ? path.join(base, 'temporalio', 'temporal.toml') : undefined;
}

/**
 * The variables as Temporal's package is given them. An empty variable means unset (compose files
 * and shells produce them for "not configured"), where the package would take it as a value; and
 * TEMPORAL_TLS is held to true/false/1/0, where the package reads anything else as false.
 */
function variablesOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && value !== '') vars[name] = value;
  if (vars.TEMPORAL_TLS !== undefined) {
    const lower = vars.TEMPORAL_TLS.trim().toLowerCase();
    if (!['true', 'false', '1', '0'].includes(lower)) throw new ConfigError('TEMPORAL_TLS', boolRule);
    vars.TEMPORAL_TLS = lower;
  }
  return vars;
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

/** A profile's settings, each checked alone and named by `nameOf` in an error. */
function settingsOf(profile: ClientConfigProfile, nameOf: (setting: Setting) => string) {
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
  const given: Record<string, unknown> = {};
  const source: Source = {};
  for (const [setting, value] of Object.entries(raw) as Array<[Setting, unknown]>) {
    const parsed = settingSchemas[setting].safeParse(value);
    if (!parsed.success)
      throw new ConfigError(nameOf(setting), parsed.error.issues[0]?.message ?? 'is invalid');
    given[setting] = parsed.data;
    source[setting] = nameOf(setting);
  }
  return { given: given as Given, source };
}

/** The package's messages name keys and profiles; a TOML syntax error quotes a line: not kept. */
function packageError(
  error: unknown,
  where: 'file' | 'env',
  configFile: string,
  profile: string,
): ConfigError {
  const message = error instanceof Error ? error.message : String(error);
  if (/not found/.test(message))
    return new ConfigError(
      'TEMPORAL_PROFILE',
      `names profile "${profile}", which ${configFile} does not have`,
    );
  const both = /Cannot specify both (\w+)_path and \w+_data/.exec(message);
  if (both) {
    const field = both[1] as string;
    if (where === 'env') {
      const variable = `TEMPORAL_TLS_${field.toUpperCase()}`;
      return new ConfigError(`${variable}_DATA`, `cannot be set together with ${variable}_PATH`);
    }
    return new ConfigError(configFile, `sets both ${field}_path and ${field}_data`);
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code) return new ConfigError('TEMPORAL_CONFIG_FILE', `cannot read the file (${code})`);
  return new ConfigError(configFile, 'is not valid TOML');
}

/**
 * The profile of Temporal's TOML file and the TEMPORAL_* variables, both read by Temporal's
 * package, each value named by where it came from (the variables win, setting by setting).
 */
export function readEnvironment(env: NodeJS.ProcessEnv): {
  given: Given;
  source: Source;
  origin: TemporalConnectionOrigin;
} {
  const vars = variablesOf(env);
  const configFile = configFilePath(vars);
  const profileName = vars.TEMPORAL_PROFILE ?? 'default';
  let configFileFound = false;
  if (configFile) {
    try {
      statSync(configFile);
      configFileFound = true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // No file is Temporal's rule for "no profile", unless the file was named.
      if (code !== 'ENOENT' || vars.TEMPORAL_CONFIG_FILE)
        throw new ConfigError('TEMPORAL_CONFIG_FILE', `cannot read the file (${code ?? 'error'})`);
    }
  }
  const load = (where: 'file' | 'env') => {
    try {
      return loadClientConfigProfile({
        overrideEnvVars: vars,
        ...(where === 'file' ? { disableEnv: true } : { disableFile: true }),
      });
    } catch (error) {
      throw packageError(error, where, configFile ?? 'TEMPORAL_CONFIG_FILE', profileName);
    }
  };
  const fileProfile = load('file');
  const fromFile = settingsOf(
    fileProfile,
    (setting) => `${configFile} profile.${profileName}.${profileKey(setting)}`,
  );
  // A [profile.x.tls] table with nothing in it still asks for TLS, as Temporal reads it.
  if (fileProfile.tls && fromFile.given.tls === undefined) {
    fromFile.given.tls = true;
    fromFile.source.tls = `${configFile} profile.${profileName}.tls`;
  }
  const fromEnv = settingsOf(load('env'), (setting) => TEMPORAL_CONNECTION_ENV[setting]);
  return {
    ...layer(fromFile, fromEnv),
    origin: { ...(configFile ? { configFile } : {}), configFileFound, profile: profileName, sources: {} },
  };
}
