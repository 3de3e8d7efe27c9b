/**
 * How the CLI reads its arguments: JSON given inline or as `@path`, numbers and durations checked
 * before anything is sent. Every failure is a ValidationError that names the flag and the rule.
 */
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { ValidationError } from '../api/errors';
import { tagSchema, tagsSchema } from '../contracts/tags';

/** `--input '{"prompt":"hi"}'` or `--input @request.json`. */
export function parseJsonArgument(flag: string, raw: string): unknown {
  let text = raw;
  if (raw.startsWith('@')) {
    try {
      text = readFileSync(raw.slice(1), 'utf8');
    } catch (error) {
      throw new ValidationError(
        flag,
        `cannot read ${raw.slice(1)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ValidationError(flag, 'must be JSON (inline, or @file)');
  }
}

/** A JSON object argument, for flags whose value is merged into an input. */
export function parseJsonObject(flag: string, raw: string): Record<string, unknown> {
  const value = parseJsonArgument(flag, raw);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(flag, 'must be a JSON object');
  }
  return value as Record<string, unknown>;
}

export function parseInteger(flag: string, raw: string): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new ValidationError(flag, 'must be an integer');
  return Number(raw);
}

/** A duration flag (`2d`, `90s`, or ms), checked by the schema the library's input uses; in ms. */
export function parseDuration(flag: string, raw: string, schema: z.ZodType<number, string | number>): number {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(flag, parsed.error.issues[0]?.message ?? 'is invalid');
  return parsed.data;
}

export function parseChoice<T extends string>(flag: string, raw: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(raw)) {
    throw new ValidationError(flag, `must be one of ${choices.join(', ')}`);
  }
  return raw as T;
}

/** `--tags nightly,team:vision`: the start's tags, checked by the library's rule. */
export function parseTags(flag: string, raw: string): string[] {
  const parsed = tagsSchema.safeParse(raw.split(',').map((tag) => tag.trim()));
  if (!parsed.success) throw new ValidationError(flag, parsed.error.issues[0]?.message ?? 'is invalid');
  return parsed.data;
}

/** `--tag nightly`: one tag, to select runs by. */
export function parseTag(flag: string, raw: string): string {
  const parsed = tagSchema.safeParse(raw);
  if (!parsed.success) throw new ValidationError(flag, parsed.error.issues[0]?.message ?? 'is invalid');
  return parsed.data;
}
