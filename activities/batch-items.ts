/** A batch's items as the activities read them: one manifest line, parsed into a job request. */
import { ApplicationFailure } from '@temporalio/common';
import type { JobRequestInput } from '../api/schemas/job';
import { firstIssue } from '../contracts/input-rules';
import { submitRequestSchema } from '../contracts/job-types';

export function badRequest(field: string, rule: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'BadRequest',
    message: `invalid batch items: ${field}: ${rule}`,
    nonRetryable: true,
    details: [{ field, rule }],
  });
}

/** Parses one manifest line into a request; a problem names the line and the field. */
export function requestOf(line: string, index: number): JobRequestInput {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw badRequest(`items line ${index + 1}`, 'must be one JSON object per line');
  }
  const parsed = submitRequestSchema.safeParse(value);
  if (!parsed.success) {
    const { field, rule } = firstIssue(parsed.error);
    throw badRequest(`items line ${index + 1}: ${field}`, rule);
  }
  return value as JobRequestInput;
}
