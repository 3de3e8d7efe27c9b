/**
 * The result store in an S3 bucket: one object per key under `<prefix>/results/`, replaced whole
 * when a retried activity writes it again; large outputs go up in parts (lib-storage's multipart
 * upload). References carry the store's name (`s3://bucket/prefix`), so a reader configured for
 * another store is told so instead of reading another object of the same key.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkedValue, fileNameFor, type ResultStore, ResultStoreError, refIn, refTo } from './result-store';
import {
  createS3Client,
  describeS3Error,
  type S3Location,
  type S3StoreOptions,
  s3StoreName,
} from './s3-client';

/** lib-storage's part size for multipart uploads (S3's minimum is 5 MiB). */
const PART_BYTES = 8 << 20;

export function createS3ResultStore(location: S3Location, options: S3StoreOptions = {}): ResultStore {
  const client = createS3Client(location, options);
  const name = s3StoreName(location);
  const objectKey = (key: string) =>
    `${location.prefix ? `${location.prefix}/` : ''}results/${fileNameFor(key)}`;
  return {
    async put(key, value) {
      const text = JSON.stringify(value ?? null);
      try {
        await new Upload({
          client,
          params: {
            Bucket: location.bucket,
            Key: objectKey(key),
            Body: text,
            ContentType: 'application/json',
          },
          partSize: PART_BYTES,
        }).done();
      } catch (error) {
        throw new ResultStoreError(
          `result ${key} could not be written to ${name}: ${describeS3Error(error)}`,
        );
      }
      return refTo(name, key, text);
    },
    async get(ref) {
      const parsed = refIn(name, ref);
      let text: string;
      try {
        const response = await client.send(
          new GetObjectCommand({ Bucket: location.bucket, Key: objectKey(parsed.key) }),
        );
        text = (await response.Body?.transformToString('utf8')) ?? '';
      } catch (error) {
        throw new ResultStoreError(
          `result ${parsed.key} is not readable in ${name}: ${describeS3Error(error)}`,
        );
      }
      return checkedValue(parsed, text);
    },
  };
}
