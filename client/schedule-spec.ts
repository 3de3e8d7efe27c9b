/**
 * When a schedule fires and what it does when runs collide, as zod schemas: everything Temporal
 * would refuse (or silently misread) is refused here first, naming the field. Crons are checked
 * with cron-parser against the forms Temporal documents for `ScheduleSpec.cronExpressions`.
 */
import type { ScheduleSpec } from '@temporalio/client';
import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { durationSchema, positiveDurationSchema } from '../contracts/input-rules';

/** The descriptors Temporal's cron strings accept besides fields (`@every` is checked apart). */
const CRON_DESCRIPTORS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/** A Go duration as `@every` takes it (`90m`, `1h30m`, `1d`). */
const GO_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+$/;
/** Temporal's optional sixth/seventh field: years, as `*`, values, ranges and steps. */
const YEAR_FIELD = /^(\*|\d{4}(-\d{4})?)(\/\d+)?(,(\*|\d{4}(-\d{4})?)(\/\d+)?)*$/;

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why Temporal would refuse this cron string, or undefined if it takes it. Temporal reads 5 fields
 * (minute hour day-of-month month day-of-week), 6 (plus year) or 7 (second first, year last), an
 * optional `CRON_TZ=<zone>` prefix and `# comment`, the descriptors above and `@every <d>[/<phase>]`.
 */
export function cronProblem(raw: string): string | undefined {
  let text = raw.replace(/#.*$/, '').trim();
  const tz = /^CRON_TZ=(\S+)\s+(.*)$/.exec(text);
  if (tz) {
    if (!isTimeZone(tz[1]!)) return `CRON_TZ=${tz[1]} is not a known time zone`;
    text = tz[2]!.trim();
  }
  if (text === '') return 'must not be empty';
  if (text.startsWith('@every')) {
    const [every, phase, extra] = text.slice('@every'.length).trim().split('/');
    if (extra !== undefined || !every || !GO_DURATION.test(every) || (phase && !GO_DURATION.test(phase)))
      return 'must be @every <duration>[/<phase>], e.g. @every 90m or @every 1h/15m';
    return undefined;
  }
  if (text.startsWith('@'))
    return CRON_DESCRIPTORS.includes(text)
      ? undefined
      : `unknown descriptor (use ${CRON_DESCRIPTORS.join(', ')}, @every)`;
  // L, W and # are cron-parser extensions Temporal does not read.
  if (/[LW#?]/.test(text)) return 'L, W, # and ? are not supported by Temporal schedules';
  const fields = text.split(/\s+/);
  if (fields.length < 5 || fields.length > 7)
    return `has ${fields.length} fields; Temporal reads 5 (minute hour day month weekday), 6 (+ year) or 7 (second first, year last)`;
  const year = fields.length >= 6 ? fields.at(-1)! : undefined;
  if (year !== undefined && !YEAR_FIELD.test(year)) return `the year field "${year}" is not valid`;
  // cron-parser reads 5 fields, or 6 with seconds first: the year (Temporal's last field) aside.
  const rest = year !== undefined ? fields.slice(0, -1) : fields;
  try {
    CronExpressionParser.parse(rest.join(' '), { strict: false });
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

export const cronSchema = z.string({ error: 'must be a string' }).superRefine((value, ctx) => {
  const problem = cronProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: `not a valid cron expression (${problem})` });
});

export const timeZoneSchema = z
  .string({ error: 'must be a string' })
  .refine(isTimeZone, { error: 'not a known IANA time zone (e.g. Europe/Paris, UTC)' });

/** A Date, or a string Date.parse reads (ISO 8601). */
export const instantSchema = z
  .union([z.date(), z.string()], { error: 'must be a date (ISO 8601)' })
  .transform((value, ctx) => {
    const date = value instanceof Date ? value : new Date(value);
    if (Number.isNaN(date.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'must be a date (ISO 8601)' });
      return z.NEVER;
    }
    return date;
  });

const MONTHS = [
  'JANUARY',
  'FEBRUARY',
  'MARCH',
  'APRIL',
  'MAY',
  'JUNE',
  'JULY',
  'AUGUST',
  'SEPTEMBER',
  'OCTOBER',
  'NOVEMBER',
  'DECEMBER',
] as const;
const DAYS = ['SUNDAY', 'MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY'] as const;

/** The SDK's LooseRange: `*`, a value, `{ start, end?, step? }`, or an array of values and ranges. */
function rangesOf<U extends z.ZodType>(unit: U, what: string) {
  const range = z
    .strictObject({
      start: unit,
      end: unit.optional(),
      step: z.int({ error: 'must be a positive integer' }).positive().optional(),
    })
    .refine((r) => r.step === undefined || r.end !== undefined, {
      error: 'a step needs an end',
      path: ['end'],
    });
  const one = z.union([unit, range], { error: `must be ${what} or { start, end?, step? }` });
  return z.union([z.literal('*'), one, z.array(one)], {
    error: `must be '*', ${what}, a { start, end?, step? } range, or an array of them`,
  });
}
const between = (min: number, max: number) =>
  z
    .int({ error: `must be an integer from ${min} to ${max}` })
    .min(min)
    .max(max);

export const calendarSchema = z.strictObject({
  second: rangesOf(between(0, 59), 'a second 0-59').optional(),
  minute: rangesOf(between(0, 59), 'a minute 0-59').optional(),
  hour: rangesOf(between(0, 23), 'an hour 0-23').optional(),
  dayOfMonth: rangesOf(between(1, 31), 'a day 1-31').optional(),
  month: rangesOf(z.enum(MONTHS), 'a month name (JANUARY...)').optional(),
  year: rangesOf(between(1970, 9999), 'a year').optional(),
  dayOfWeek: rangesOf(z.enum(DAYS), 'a day name (SUNDAY...)').optional(),
  comment: z.string().optional(),
});

export const intervalSchema = z.strictObject({
  every: positiveDurationSchema,
  offset: durationSchema.optional(),
});

export const scheduleSpecSchema = z
  .strictObject(
    {
      /** Cron strings as Temporal reads them (see cronProblem). */
      cron: z.array(cronSchema, { error: 'must be an array of cron strings' }).optional(),
      calendars: z.array(calendarSchema, { error: 'must be an array' }).optional(),
      intervals: z.array(intervalSchema, { error: 'must be an array' }).optional(),
      /** Times that match one of these are skipped. */
      skip: z.array(calendarSchema, { error: 'must be an array' }).optional(),
      /** The zone crons and calendars are read in (default UTC). */
      timezone: timeZoneSchema.optional(),
      /** Each run starts up to this much later than its time (a random delay, to spread load). */
      jitter: durationSchema.optional(),
      startAt: instantSchema.optional(),
      endAt: instantSchema.optional(),
    },
    { error: 'must be an object' },
  )
  .refine((s) => (s.cron?.length ?? 0) + (s.calendars?.length ?? 0) + (s.intervals?.length ?? 0) > 0, {
    error: 'give at least one of cron, calendars or intervals',
    path: ['cron'],
  })
  .refine((s) => !s.startAt || !s.endAt || s.startAt < s.endAt, {
    error: 'must be after startAt',
    path: ['endAt'],
  });

export type ScheduleSpecInput = z.input<typeof scheduleSpecSchema>;
export type ScheduleSpecParsed = z.output<typeof scheduleSpecSchema>;

export const OVERLAP_POLICIES = [
  'SKIP',
  'BUFFER_ONE',
  'BUFFER_ALL',
  'CANCEL_OTHER',
  'TERMINATE_OTHER',
  'ALLOW_ALL',
] as const;
export const overlapSchema = z.enum(OVERLAP_POLICIES, {
  error: `must be one of ${OVERLAP_POLICIES.join(', ')}`,
});
export type OverlapPolicy = z.output<typeof overlapSchema>;

export const schedulePoliciesSchema = z.strictObject({
  /** What a run does when the previous one still runs (default SKIP: it is not started). */
  overlap: overlapSchema.optional(),
  /** How late a missed run (the server was down) may still start; older ones are dropped. */
  catchupWindow: positiveDurationSchema.optional(),
  /** Pause the schedule when a run fails (or times out). */
  pauseOnFailure: z.boolean({ error: 'must be a boolean' }).optional(),
});
export type SchedulePoliciesInput = z.input<typeof schedulePoliciesSchema>;

/** The spec in the SDK's shape (crons under `cronExpressions`). */
export function toTemporalSpec(spec: ScheduleSpecParsed): ScheduleSpec {
  const { cron, ...rest } = spec;
  // A step comes with an end (checked above): the shape is the SDK's, which its types say more narrowly.
  return { ...rest, ...(cron ? { cronExpressions: cron } : {}) } as ScheduleSpec;
}
