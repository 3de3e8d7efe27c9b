/**
 * Tags: a few short strings of yours on a run (`tags` on startJob, startBatch, a schedule and
 * sendEvent), kept in the ServerlessTags search attribute so a list, a bulk action or the UI can
 * select runs by them. The rule lives here so every start and every filter checks the same thing.
 */
import type { SearchAttributePair } from '@temporalio/common';
import { z } from 'zod';
import { tagsKey } from './search-attributes';

export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 64;
const tagRule = `must be 1 to ${MAX_TAG_LENGTH} letters, digits or _ . : / = @ - (no spaces or commas)`;

/** One tag: safe inside a visibility query's string literal, and on a command line as `a,b`. */
export const tagSchema = z
  .string({ error: tagRule })
  .regex(new RegExp(`^[A-Za-z0-9_.:/=@-]{1,${MAX_TAG_LENGTH}}$`), { error: tagRule });

export const tagsSchema = z
  .array(tagSchema, { error: 'must be an array of strings' })
  .max(MAX_TAGS, { error: `must hold at most ${MAX_TAGS} tags` })
  .refine((tags) => new Set(tags).size === tags.length, { error: 'must not repeat a tag' });

/** The search attribute of a start's tags; none for no tags (a namespace without it still starts). */
export function tagAttributes(tags: readonly string[] | undefined): SearchAttributePair[] {
  return tags && tags.length > 0 ? [{ key: tagsKey, value: [...tags] }] : [];
}
