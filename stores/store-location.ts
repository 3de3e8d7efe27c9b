/**
 * Where a deployment keeps manifests, results and large outputs, said as one URL: a directory
 * (or `file:///dir`), the embedded default, or `s3://bucket/prefix` for workers on several
 * machines, with the endpoint, region and addressing of an S3-compatible server beside it. The
 * worker (RESULT_STORE_*), the CLI (`--store`) and the client all parse it here, and open the
 * stores it names here.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../api/errors';
import { type BatchStore, defaultBatchStore } from './batch-store';
import { createLocalResultStore, LOCAL_STORE_NAME, type ResultStore } from './result-store';
import type { S3StoreOptions } from './s3-client';
import { type S3Location, s3LocationSchema, s3StoreName } from './s3-location';
import type { StreamStore } from './stream-store';

export type StoreLocation = { kind: 'local'; dir: string } | S3Location;

/** The settings as given, before parsing. */
export interface StoreSettings {
  /** A directory, `file:///dir` or `s3://bucket/prefix`. */
  url: string;
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
}

/** What each setting is called where it was given (variables, CLI flags, option names), for errors. */
export interface StoreSettingNames {
  url: string;
  endpoint: string;
  region: string;
  forcePathStyle: string;
}

export const STORE_URL_RULE = 'must be a directory, file:///dir or s3://bucket/prefix';

/** Parses the settings; an error names the setting and the rule, never the value. */
export function parseStoreLocation(
  settings: StoreSettings,
  names: StoreSettingNames,
  cwd: string = process.cwd(),
): StoreLocation {
  const { url } = settings;
  const s3Only = (['endpoint', 'region', 'forcePathStyle'] as const).filter(
    (field) => settings[field] !== undefined,
  );
  if (url.startsWith('s3://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(names.url, STORE_URL_RULE);
    }
    if (parsed.username || parsed.password || parsed.search || parsed.hash)
      throw new ConfigError(
        names.url,
        'must be s3://bucket/prefix only: no credentials (they come from the AWS credential chain), query or fragment',
      );
    const candidate = {
      kind: 's3',
      bucket: parsed.hostname,
      prefix: decodeURIComponent(parsed.pathname).replace(/^\/+|\/+$/g, ''),
      ...(settings.endpoint === undefined ? {} : { endpoint: settings.endpoint }),
      ...(settings.region === undefined ? {} : { region: settings.region }),
      ...(settings.forcePathStyle === undefined ? {} : { forcePathStyle: settings.forcePathStyle }),
    };
    const result = s3LocationSchema.safeParse(candidate);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    const field = String(issue?.path[0] ?? 'url');
    const name =
      field === 'endpoint' || field === 'region' || field === 'forcePathStyle'
        ? names[field]
        : `${names.url} (${field})`;
    throw new ConfigError(name, issue?.message ?? STORE_URL_RULE);
  }
  const [stray] = s3Only;
  if (stray) throw new ConfigError(names[stray], 'applies to an s3:// store only');
  if (url.startsWith('file://')) {
    try {
      return { kind: 'local', dir: fileURLToPath(url) };
    } catch {
      throw new ConfigError(names.url, STORE_URL_RULE);
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new ConfigError(names.url, STORE_URL_RULE);
  return { kind: 'local', dir: path.resolve(cwd, url) };
}

/** The store's name, as its references and errors give it. */
export function storeName(location: StoreLocation): string {
  return location.kind === 'local' ? LOCAL_STORE_NAME : s3StoreName(location);
}

export interface OpenedStores {
  /** The store's name, as its references give it: `local` or `s3://bucket/prefix`. */
  name: string;
  /** Manifests and batch results. */
  batchStore: BatchStore;
  /** Large job outputs. */
  resultStore: ResultStore;
  /** Where `file` stream sinks put their chunks; absent: the worker's directory. */
  streamStore?: StreamStore;
  /**
   * Refuses a store that cannot be used (no such bucket, credentials refused), with an error that
   * names the store and the cause: the worker calls it before it takes any task.
   */
  check(): Promise<void>;
}

/** The S3 settings beside a store URL given as a string, from the worker's own variables. */
export const STORE_ENV_NAMES: StoreSettingNames = {
  url: 'RESULT_STORE_URL',
  endpoint: 'RESULT_STORE_ENDPOINT',
  region: 'RESULT_STORE_REGION',
  forcePathStyle: 'RESULT_STORE_PATH_STYLE',
};

/**
 * The stores at a URL given by the client or the CLI (a directory, file:///dir or
 * s3://bucket/prefix), with the endpoint, region and addressing read from the variables the worker
 * reads (RESULT_STORE_ENDPOINT, _REGION, _PATH_STYLE), so a reader configured like the worker
 * reads what it wrote. `field` names the URL in errors (`store`, `--store`).
 */
export function storeLocationFromUrl(
  url: string,
  field: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): StoreLocation {
  const value = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const endpoint = value(STORE_ENV_NAMES.endpoint);
  const region = value(STORE_ENV_NAMES.region);
  const pathStyle = value(STORE_ENV_NAMES.forcePathStyle);
  if (pathStyle !== undefined && pathStyle !== 'true' && pathStyle !== 'false')
    throw new ConfigError(STORE_ENV_NAMES.forcePathStyle, 'must be true or false');
  // Variables meant for an S3 store do not make a directory wrong: only the URL's kind decides.
  if (!url.startsWith('s3://')) return parseStoreLocation({ url }, { ...STORE_ENV_NAMES, url: field }, cwd);
  return parseStoreLocation(
    {
      url,
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(region === undefined ? {} : { region }),
      ...(pathStyle === undefined ? {} : { forcePathStyle: pathStyle === 'true' }),
    },
    { ...STORE_ENV_NAMES, url: field },
    cwd,
  );
}

/**
 * The batch and result stores at a location; the S3 ones share one client. The AWS SDK is loaded
 * here, for an S3 location only.
 */
export async function openStores(
  location: StoreLocation,
  options: S3StoreOptions = {},
): Promise<OpenedStores> {
  if (location.kind === 'local') {
    return {
      name: LOCAL_STORE_NAME,
      batchStore: defaultBatchStore(location.dir),
      resultStore: createLocalResultStore(location.dir),
      check: async () => {},
    };
  }
  const [
    { checkS3Store, createS3Client },
    { createS3BatchStore },
    { createS3ResultStore },
    { createS3StreamStore },
  ] = await Promise.all([
    import('./s3-client.js'),
    import('./s3-batch-store.js'),
    import('./s3-result-store.js'),
    import('./s3-stream-store.js'),
  ]);
  const client = createS3Client(location, options);
  return {
    name: s3StoreName(location),
    batchStore: createS3BatchStore(location, { client }),
    resultStore: createS3ResultStore(location, { client }),
    streamStore: createS3StreamStore(location, { client }),
    check: () => checkS3Store(client, location),
  };
}
