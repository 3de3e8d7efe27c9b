/**
 * A verified request turned into an automation event: the key, type, id and data taken from the
 * sender's JSON body and headers by the source's declared paths (or its transform), with the
 * scheme's defaults for what is not declared (GitHub's delivery and event headers, Stripe's event
 * id and type, the Standard Webhooks id). Pure: no I/O, no clock (the caller passes the time).
 *
 * A request that yields no key or no id is refused naming the path that was empty: the sender's
 * body does not have the shape the source declared, and nothing is signalled. Where the body is of
 * a known other shape (a Stripe thin event under a snapshot event's path), the answer says so.
 */
import { z } from 'zod';
import type { EventScheme } from '../client/event-signature';
import {
  type AutomationEvent,
  automationKeySchema,
  MAX_EVENT_BYTES,
  parseAutomationEvent,
} from '../contracts/automation-input';
import { firstIssue } from '../contracts/input-rules';
import type { EventPaths, EventTransform, EventTransformInput } from './event-sources';
import { schemeDefaults } from './event-sources';

export type MappingResult =
  | { ok: true; key: string; event: AutomationEvent }
  | { ok: false; status: 413 | 422; field: string; rule: string };

/** The value at `path` (`body`, `body.a.0.b`, `header.x-name`); undefined where there is none. */
export function valueAt(path: string, body: unknown, headers: EventTransformInput['headers']): unknown {
  if (path.startsWith('header.')) return headers[path.slice('header.'.length)];
  let value: unknown = body;
  for (const step of path.split('.').slice(1)) {
    if (typeof value !== 'object' || value === null) return undefined;
    // Own fields only: a path never reaches a prototype (`body.__proto__`, `body.constructor`).
    if (!Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/** A value as a key or id: strings as they are, finite numbers written out (numeric ids). */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

const textAt = (path: string, body: unknown, headers: EventTransformInput['headers']) =>
  asText(valueAt(path, body, headers));

/** The headers a transform sees: single values, lower-case names, no credential header. */
export function transformHeaders(
  scheme: EventScheme,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  extraCredentialHeaders: readonly string[] = [],
): Record<string, string> {
  const hidden = new Set([...schemeDefaults[scheme].credentialHeaders, ...extraCredentialHeaders]);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string' && !hidden.has(name)) out[name] = value;
  }
  return out;
}

const transformOutputSchema = z.object({
  key: z.unknown(),
  type: z.string({ error: 'must be a string' }).optional(),
  id: z.unknown(),
  data: z.unknown(),
});

interface Mapped {
  key?: string;
  type?: string;
  id?: string;
  data: unknown;
  /** Where the key and id were looked for, for the 422's message. */
  keyFrom: string;
  idFrom: string;
}

function byPaths(paths: EventPaths, scheme: EventScheme, input: EventTransformInput): Mapped {
  const defaults = schemeDefaults[scheme];
  const idPath = paths.id ?? defaults.id ?? 'id';
  const typePath = paths.type ?? defaults.type;
  const type = typePath === undefined ? undefined : valueAt(typePath, input.body, input.headers);
  const data = valueAt(paths.data ?? 'body', input.body, input.headers);
  return {
    key: textAt(paths.key, input.body, input.headers),
    id: textAt(idPath, input.body, input.headers),
    ...(typeof type === 'string' && type.length > 0 ? { type } : {}),
    data: data === undefined ? null : data,
    keyFrom: paths.key,
    idFrom: idPath,
  };
}

function byTransform(transform: EventTransform, input: EventTransformInput): Mapped | { failed: string } {
  let output: unknown;
  try {
    output = transform(input);
  } catch {
    return { failed: 'the transform threw' };
  }
  if (output === undefined || output === null) return { failed: 'the transform gave no event' };
  const parsed = transformOutputSchema.safeParse(output);
  if (!parsed.success) return { failed: `the transform's ${firstIssue(parsed.error).field} is invalid` };
  const { key, id, type, data } = parsed.data;
  return {
    key: asText(key),
    id: asText(id),
    ...(type ? { type } : {}),
    data: data === undefined ? null : data,
    keyFrom: 'transform.key',
    idFrom: 'transform.id',
  };
}

/**
 * Why a path found nothing, with a pointer where the sender's body has another shape than the path
 * expects: a Stripe thin event (`"object": "v2.core.event"`) has `related_object`, not `data`.
 */
function notFound(what: 'key' | 'event id', path: string, scheme: EventScheme, body: unknown): string {
  const rule = `no ${what} found at this path in the request`;
  const thin =
    scheme === 'stripe' && (path === 'body.data' || path.startsWith('body.data.')) && isThinEvent(body);
  return thin
    ? `${rule}: a Stripe thin event (object v2.core.event) has no data; its object is named at body.related_object`
    : rule;
}

const isThinEvent = (body: unknown) =>
  typeof body === 'object' && body !== null && (body as { object?: unknown }).object === 'v2.core.event';

/**
 * The event for one automation from a verified request. `time` is the signed timestamp where the
 * scheme has one, else the time of arrival.
 */
export function mapEvent(
  binding: EventPaths | EventTransform,
  scheme: EventScheme,
  input: EventTransformInput,
  time: Date,
): MappingResult {
  const mapped =
    typeof binding === 'function' ? byTransform(binding, input) : byPaths(binding, scheme, input);
  if ('failed' in mapped) return { ok: false, status: 422, field: 'transform', rule: mapped.failed };
  if (mapped.key === undefined)
    return {
      ok: false,
      status: 422,
      field: mapped.keyFrom,
      rule: notFound('key', mapped.keyFrom, scheme, input.body),
    };
  const key = automationKeySchema.safeParse(mapped.key);
  if (!key.success)
    return { ok: false, status: 422, field: mapped.keyFrom, rule: firstIssue(key.error).rule };
  if (mapped.id === undefined)
    return {
      ok: false,
      status: 422,
      field: mapped.idFrom,
      rule: notFound('event id', mapped.idFrom, scheme, input.body),
    };
  const checked = parseAutomationEvent({
    id: mapped.id,
    ...(mapped.type === undefined ? {} : { type: mapped.type }),
    data: mapped.data,
    time: time.toISOString(),
  });
  if (!checked.ok) {
    const tooLarge = checked.field === 'event.data' && checked.rule.includes(`at most ${MAX_EVENT_BYTES}`);
    return { ok: false, status: tooLarge ? 413 : 422, field: checked.field, rule: checked.rule };
  }
  return { ok: true, key: key.data, event: checked.event };
}
