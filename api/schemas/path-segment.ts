import { z } from 'zod';

/**
 * An id that becomes one path segment. Encoding alone is not enough: `.` and `..`
 * survive encodeURIComponent and are resolved by URL parsers and proxies, and some
 * servers read a backslash as a slash.
 */
export const pathSegmentSchema = z
  .string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(1024, { error: 'must be at most 1024 characters' })
  .refine((value) => value !== '.' && value !== '..', { error: "must not be '.' or '..'" })
  .refine((value) => !/[/\\]/.test(value), { error: 'must not contain a slash or backslash' })
  .refine((value) => !/[\uD800-\uDFFF]/u.test(value), { error: 'must be well-formed Unicode' });
