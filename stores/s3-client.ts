/**
 * What the S3 stores share: where a store is (bucket, prefix, and the endpoint, region and
 * addressing of an S3-compatible server), the SDK client made from it, and the wording of its
 * errors.
 *
 * Credentials never appear here: the SDK finds them along its standard provider chain
 * (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, SSO, the instance or task role). The
 * store's name (`s3://bucket/prefix`) is what result references carry and what errors name; it
 * holds no secret and no endpoint.
 */
import { ListObjectsV2Command, S3Client, type S3ClientConfig, S3ServiceException } from '@aws-sdk/client-s3';
import { type S3Location, s3StoreName } from './s3-location';

export { type S3Location, s3LocationSchema, s3StoreName } from './s3-location';

/**
 * Attempts per request, the first included. Throttling answers (503 SlowDown) and 5xx are retried
 * by the SDK's standard strategy, with exponential backoff and jitter (a longer base for
 * throttling); what is left after these attempts reaches the activity, whose own retry policy
 * takes over.
 */
export const S3_MAX_ATTEMPTS = 6;

/** How the stores reach the bucket; an embedding program or a test may give its own client. */
export interface S3StoreOptions {
  /** A client made elsewhere (its credentials, its retry strategy); default: one made from the location. */
  client?: S3Client;
  /** Merged into the client the store makes (ignored with `client`). */
  clientConfig?: S3ClientConfig;
}

export function createS3Client(location: S3Location, options: S3StoreOptions = {}): S3Client {
  if (options.client) return options.client;
  return new S3Client({
    ...(location.endpoint ? { endpoint: location.endpoint } : {}),
    ...(location.region ? { region: location.region } : location.endpoint ? { region: 'us-east-1' } : {}),
    ...(location.forcePathStyle === undefined ? {} : { forcePathStyle: location.forcePathStyle }),
    maxAttempts: S3_MAX_ATTEMPTS,
    retryMode: 'standard',
    // A server that stopped answering fails the request (and the SDK retries it) instead of holding
    // an activity slot with no heartbeat.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    ...options.clientConfig,
  });
}

/** Answers that retrying will not change: the store's configuration is wrong. */
const CONFIGURATION_ERRORS: Record<string, string> = {
  NoSuchBucket: 'the bucket does not exist',
  InvalidBucketName: 'the bucket name is not valid',
  InvalidAccessKeyId:
    'the access key is not known to the server (check the credentials, e.g. AWS_ACCESS_KEY_ID)',
  SignatureDoesNotMatch:
    'the request signature does not match (check the secret key, e.g. AWS_SECRET_ACCESS_KEY)',
  AccessDenied: 'access denied (check the credentials and the bucket policy)',
  CredentialsProviderError:
    'no credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)',
};

/** True when the error comes from the store's configuration (bucket, credentials), not a passing fault. */
export function isS3ConfigurationError(error: unknown): boolean {
  return error instanceof Error && error.name in CONFIGURATION_ERRORS;
}

/**
 * The cause of an S3 error in words, without what the request carried: the SDK's errors hold the
 * request's headers and, for a bad signature, the string that was signed; only the name, the
 * status and the server's message are kept.
 */
export function describeS3Error(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const known = CONFIGURATION_ERRORS[error.name];
  if (known) return `${known} (${error.name})`;
  const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
  return `${error.name}${status ? ` (HTTP ${status})` : ''}: ${error.message}`;
}

export function isNotFound(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === 'NoSuchKey' ||
      error.name === 'NotFound' ||
      (error instanceof S3ServiceException &&
        error.$metadata.httpStatusCode === 404 &&
        error.name !== 'NoSuchBucket'))
  );
}

/**
 * Refuses a store that cannot be used, before anything is submitted: the bucket must exist and
 * the credentials must let this process list under the prefix. The error names the store and the
 * cause. One request.
 */
export async function checkS3Store(client: S3Client, location: S3Location): Promise<void> {
  try {
    await client.send(
      new ListObjectsV2Command({
        Bucket: location.bucket,
        ...(location.prefix ? { Prefix: `${location.prefix}/` } : {}),
        MaxKeys: 1,
      }),
    );
  } catch (error) {
    throw new S3StoreError(s3StoreName(location), describeS3Error(error), isS3ConfigurationError(error));
  }
}

/** A store that could not be used: the message names the store and the cause. */
export class S3StoreError extends Error {
  override readonly name = 'S3StoreError';
  /** The store's configuration is wrong (bucket, credentials): retrying will not help. */
  readonly configuration: boolean;
  constructor(store: string, cause: string, configuration = false) {
    super(`store ${store}: ${cause}`);
    this.configuration = configuration;
  }
}
