/**
 * Rules every workflow input shares: durations as Temporal writes them, and how a failed parse is
 * reported (the field's path and the rule). Bundled into workflow code: zod and pure functions only.
 */
import { msToNumber } from '@temporalio/common/lib/time';
import { z } from 'zod';

/** A Temporal duration (ms, or a string such as '10 minutes'), parsed to milliseconds; 0 allowed. */
export const durationSchema = z
  .union([z.number({ error: 'must be a duration' }), z.string({ error: 'must be a duration' })])
  .transform((value, ctx) => {
    let ms: number;
    try {
      ms = typeof value === 'number' ? value : msToNumber(value as Parameters<typeof msToNumber>[0]);
    } catch {
      ms = Number.NaN;
    }
    if (!Number.isFinite(ms) || ms < 0) {
      ctx.addIssue({ code: 'custom', message: "must be a duration (ms or e.g. '10 minutes')" });
      return z.NEVER;
    }
    return Math.round(ms);
  });

/** A duration that must be more than zero (a timeout, an interval). */
export const positiveDurationSchema = durationSchema.pipe(
  z.number().positive({ error: "must be a positive duration (ms or e.g. '10 minutes')" }),
);

/** A duration of `min` to `max` ms (a bound the service or Temporal sets). */
export function durationBetween(min: number, max: number) {
  const rule = `must be a duration between ${min} and ${max} ms (a number of ms or e.g. '30 seconds')`;
  return durationSchema.pipe(z.number().min(min, { error: rule }).max(max, { error: rule }));
}

/** The first problem of a failed parse: the field's path (prefixed with `root`) and the rule. */
export function firstIssue(error: z.ZodError, root = ''): { field: string; rule: string } {
  const issue = error.issues[0];
  if (!issue) return { field: root || 'input', rule: 'is invalid' };
  const field = [root, ...issue.path.map(String)].filter(Boolean).join('.') || root || 'input';
  const rule =
    issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
  return { field, rule };
}
