/**
 * Where an S3 store is: bucket, prefix, and the endpoint, region and addressing of an
 * S3-compatible server. Plain data, without the SDK: configuration parses it without loading the
 * client, which only a process that uses the store loads.
 */
import { z } from 'zod';

export const s3LocationSchema = z.strictObject({
  kind: z.literal('s3'),
  /** S3's own bucket naming rule: 3 to 63 lowercase letters, digits, dots and hyphens. */
  bucket: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: 'must be a bucket name (3 to 63 of a-z 0-9 . -)' }),
  /** Every key of the store goes under it; no leading or trailing slash, may be empty. */
  prefix: z.string().regex(/^([A-Za-z0-9_][A-Za-z0-9._-]*(\/[A-Za-z0-9_][A-Za-z0-9._-]*)*)?$/, {
    error: 'must be a path of letters, digits, . _ - segments (no leading dot)',
  }),
  /** An S3-compatible server's URL (http://host:port); absent: AWS S3 itself. */
  endpoint: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  /** Absent: the SDK's chain (AWS_REGION, the profile); us-east-1 with an endpoint. */
  region: z
    .string()
    .regex(/^[a-z0-9-]+$/, { error: 'must be a region name such as us-east-1' })
    .optional(),
  /** bucket in the path (http://host/bucket/key), as most S3-compatible servers want. */
  forcePathStyle: z.boolean().optional(),
});

export type S3Location = z.infer<typeof s3LocationSchema>;

/** The store's name as references and errors give it: `s3://bucket/prefix`. */
export function s3StoreName(location: Pick<S3Location, 'bucket' | 'prefix'>): string {
  return `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
}
