/** `file` stream sinks in a bucket: one object per batch of chunks (see stream-store.ts). */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import {
  createS3Client,
  describeS3Error,
  type S3Location,
  type S3StoreOptions,
  s3StoreName,
} from './s3-client';
import { type StreamStore, streamObjectKey } from './stream-store';

export class StreamStoreError extends Error {
  override readonly name = 'StreamStoreError';
}

export function createS3StreamStore(location: S3Location, options: S3StoreOptions = {}): StreamStore {
  const client = createS3Client(location, options);
  return {
    async write(name, firstIndex, lines) {
      const key = streamObjectKey(location.prefix, name, firstIndex);
      try {
        await client.send(
          new PutObjectCommand({ Bucket: location.bucket, Key: key, Body: `${lines.join('\n')}\n` }),
        );
      } catch (error) {
        throw new StreamStoreError(
          `stream ${name} could not be written to ${s3StoreName(location)}: ${describeS3Error(error)}`,
        );
      }
    },
  };
}
