/**
 * A sender's body read as JSON within a nesting limit. The depth is measured on the text before
 * JSON.parse runs, so a body nested deeper than the limit never reaches a recursive reader (the
 * parser, zod's JSON check, the workflow's payload converter) where it could exhaust the stack.
 * Every answer is one of a fixed set: nothing of the body or of an internal error is echoed.
 */

/** Objects and arrays nested deeper than this are refused; ordinary webhook bodies stay under 20. */
export const DEFAULT_EVENT_MAX_DEPTH = 32;

export type JsonBodyResult =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'not-utf8' | 'not-json' | 'too-deep' };

/** The fixed messages the gateway answers for each refusal. */
export const JSON_BODY_MESSAGES = {
  'not-utf8': 'body must be UTF-8 text',
  'not-json': 'body must be valid JSON',
  'too-deep': 'body nests objects and arrays too deeply',
} as const;

/** The deepest nesting of objects and arrays in `text`, read outside strings; stops past `limit`. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (inString) {
      if (code === 0x5c)
        at++; // backslash: the next character is escaped
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) {
      depth++;
      if (depth > limit) return true;
    } else if (code === 0x7d || code === 0x5d) depth--;
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The raw bytes as text (signatures are over these bytes, read as UTF-8 by every sender's library). */
export function bodyText(raw: Buffer): string | undefined {
  try {
    return utf8.decode(raw);
  } catch {
    return undefined;
  }
}

/** `text` as JSON, refused when deeper than `maxDepth` or not JSON; never throws. */
export function parseJsonBody(text: string, maxDepth: number = DEFAULT_EVENT_MAX_DEPTH): JsonBodyResult {
  if (jsonDepthExceeds(text, maxDepth)) return { ok: false, reason: 'too-deep' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'not-json' };
  }
}
