/**
 * A comma-separated environment variable as its items: each trimmed, empty ones dropped (a trailing
 * comma or `a,,b` from a template is no item).
 */
import { z } from 'zod';

export function commaItems(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** The same as a zod schema of a string, for a variable's schema to pipe into its items' rules. */
export const commaList = () => z.string().transform(commaItems);
