/**
 * A caller's input checked against its schema: the parsed value, or a ValidationError naming the
 * first bad field (under `root`) and its rule, before anything is sent.
 */
import type { z } from 'zod';
import { ValidationError } from '../api/errors';
import { firstIssue } from '../contracts/input-rules';

export function checked<S extends z.ZodType>(schema: S, value: unknown, root?: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { field, rule } = firstIssue(parsed.error, root);
  throw new ValidationError(field, rule);
}
