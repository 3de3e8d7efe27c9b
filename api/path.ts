import { validationErrorFrom } from './errors';
import { pathSegmentSchema } from './schemas/path-segment';

/** Checks an id against the path-segment rules and encodes it; `field` names it in the error. */
export function pathSegment(field: string, value: string): string {
  const result = pathSegmentSchema.safeParse(value);
  if (!result.success) throw validationErrorFrom(result.error, field);
  return encodeURIComponent(result.data);
}
