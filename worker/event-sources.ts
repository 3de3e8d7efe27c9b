/**
 * Event sources: who may send events to the gateway's `POST /events/{automation}?source=<name>`,
 * how their requests are verified and how their bodies become events. A source is
 *
 * - a name (the `source` of the URL);
 * - a verification scheme with its secrets (several during a rotation: any one may match);
 * - the automations it may feed, each with a mapping from the sender's body and headers to the
 *   event's key, type, id and data: declared paths (`body.repository.full_name`,
 *   `header.x-github-event`) or a transform function (automations module only).
 *
 * Sources come from EVENT_SOURCES (JSON, secrets by the name of the variable holding them) or from
 * the automations module (`defineEventSource`). Every rule is a zod schema here; an error names
 * the field (`sources[1].automations.deploys.key`) and the rule, never a secret.
 */
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import {
  type EventScheme,
  eventSchemeSchema,
  eventSecretSchema,
  type HmacSpec,
  hmacSpecSchema,
} from '../client/event-signature';
import { automationNameSchema } from '../contracts/automation-input';
import { firstIssue } from '../contracts/input-rules';
import { commaItems } from './env-lists';

export const DEFAULT_SOURCE_NAME = 'default';
export const DEFAULT_SOURCE_TOLERANCE_SECONDS = 300;

export const eventSourceNameSchema = z
  .string({ error: 'must be a string' })
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, {
    error: 'must be 1 to 64 lower-case letters, digits, _ or - (starting with a letter or digit)',
  });

/**
 * Where a value is taken from: `body` (the whole JSON body), `body.a.b.0` (a field; numbers index
 * arrays), or `header.<name>` (a request header, case-insensitive).
 */
export const eventPathSchema = z
  .string({ error: 'must be a path' })
  .regex(/^(body(\.[^.\s]+)*|header\.[A-Za-z0-9-]{1,64})$/, {
    error: 'must be body, body.<field>(.<field>...) or header.<name>',
  })
  .transform((path) => (path.startsWith('header.') ? path.toLowerCase() : path));

/** Declared paths: `key` is required; the others have the scheme's defaults (see schemeDefaults). */
export const eventMappingSchema = z.strictObject({
  key: eventPathSchema,
  type: eventPathSchema.optional(),
  id: eventPathSchema.optional(),
  data: eventPathSchema.optional(),
});
export type EventMappingInput = z.input<typeof eventMappingSchema>;
export type EventPaths = z.output<typeof eventMappingSchema>;

/** What a transform is given: the parsed body and the headers (lower-case names, secrets removed). */
export interface EventTransformInput {
  body: unknown;
  headers: Readonly<Record<string, string>>;
}

/** What a transform returns; `undefined` (or no key) refuses the event with 422. */
export interface EventTransformOutput {
  key?: string;
  type?: string;
  id?: string;
  data?: unknown;
}

/** For what paths cannot express: a pure function of the sender's body and headers. */
export type EventTransform = (input: EventTransformInput) => EventTransformOutput | undefined;

/**
 * The per-scheme defaults: where the sender puts its delivery id and event type, and which of the
 * sender's headers hold credentials (never given to a transform).
 */
export const schemeDefaults: Record<
  EventScheme,
  { id?: string; type?: string; credentialHeaders: readonly string[] }
> = {
  'standard-webhooks': { id: 'header.webhook-id', credentialHeaders: ['webhook-signature'] },
  github: {
    id: 'header.x-github-delivery',
    type: 'header.x-github-event',
    credentialHeaders: ['x-hub-signature-256', 'x-hub-signature'],
  },
  stripe: { id: 'body.id', type: 'body.type', credentialHeaders: ['stripe-signature'] },
  hmac: { credentialHeaders: [] },
  bearer: { credentialHeaders: ['authorization'] },
};

const toleranceSchema = z
  .number({ error: 'must be a number of seconds' })
  .int({ error: 'must be a whole number of seconds' })
  .min(1, { error: 'must be at least 1 second' })
  .max(86_400, { error: 'must be at most 86400 seconds' });

/** Secrets by scheme: Standard Webhooks' `whsec_` base64 form; others as the sender issues them. */
function secretRuleFor(scheme: EventScheme): z.ZodType<string> {
  switch (scheme) {
    case 'standard-webhooks':
      return eventSecretSchema;
    case 'bearer':
      return z.string().min(32, { error: 'must be at least 32 characters' });
    default:
      return z.string().min(16, { error: 'must be at least 16 characters' });
  }
}

const bindingSchema = z.union([
  z.custom<EventTransform>((value) => typeof value === 'function'),
  eventMappingSchema,
]);

const sourceShape = {
  name: eventSourceNameSchema,
  scheme: eventSchemeSchema,
  /** Seconds a signed timestamp may be away from the gateway's clock (Standard Webhooks, Stripe, hmac). */
  toleranceSeconds: toleranceSchema.default(DEFAULT_SOURCE_TOLERANCE_SECONDS),
  hmac: hmacSpecSchema.optional(),
};

function checkSource(
  source: {
    scheme: EventScheme;
    hmac?: unknown;
    secrets: readonly string[];
    automations: Record<string, EventPaths | EventTransform>;
  },
  ctx: z.RefinementCtx,
): void {
  // The event id is what de-duplicates a sender's retries: a scheme with no delivery id of its own
  // needs the path of one.
  if (schemeDefaults[source.scheme].id === undefined) {
    for (const [name, binding] of Object.entries(source.automations)) {
      if (typeof binding !== 'function' && binding.id === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['automations', name, 'id'],
          message: `is required for scheme ${source.scheme} (the path of the sender's delivery id, for de-duplication)`,
        });
    }
  }
  if (source.scheme === 'hmac' && source.hmac === undefined)
    ctx.addIssue({ code: 'custom', path: ['hmac'], message: 'is required when scheme is hmac' });
  if (source.scheme !== 'hmac' && source.hmac !== undefined)
    ctx.addIssue({ code: 'custom', path: ['hmac'], message: 'is only for scheme hmac' });
  const rule = secretRuleFor(source.scheme);
  source.secrets.forEach((secret, index) => {
    const checked = rule.safeParse(secret);
    if (!checked.success)
      ctx.addIssue({
        code: 'custom',
        path: ['secrets', index],
        message: checked.error.issues[0]?.message ?? 'is invalid',
      });
  });
}

const automationsSchema = <T extends z.ZodType>(binding: T) =>
  z
    .record(automationNameSchema, binding, { error: 'must be an object of automation name to mapping' })
    .refine((bound) => Object.keys(bound).length > 0, { error: 'must bind at least one automation' });

/** A source as the automations module declares it (`defineEventSource`). */
export const eventSourceSchema = z
  .strictObject({
    ...sourceShape,
    secrets: z
      .array(z.string({ error: 'must be a string' }), { error: 'must be an array of secrets' })
      .min(1, {
        error: 'must hold at least one secret',
      }),
    automations: automationsSchema(bindingSchema),
  })
  .superRefine(checkSource);

export type EventSourceInput = Omit<z.input<typeof eventSourceSchema>, 'automations'> & {
  automations: Record<string, EventMappingInput | EventTransform>;
};

/**
 * A source as EVENT_SOURCES declares it: secrets are read from the variable `secretsEnv` names
 * (comma-separated: several during a rotation), so no secret sits in the JSON; paths only.
 */
export const envEventSourceSchema = z.strictObject({
  ...sourceShape,
  secretsEnv: z
    .string({ error: 'must name the variable holding the secrets' })
    .regex(/^[A-Z_][A-Z0-9_]*$/, { error: 'must be an environment variable name' }),
  automations: automationsSchema(eventMappingSchema),
});

/** A checked source, as the gateway uses it. */
export interface EventSource {
  name: string;
  scheme: EventScheme;
  secrets: readonly string[];
  toleranceSeconds: number;
  hmac?: HmacSpec;
  /** Automation name -> how its events are taken from the sender's request. */
  automations: ReadonlyMap<string, EventPaths | EventTransform>;
}

function fromParsed(parsed: z.output<typeof eventSourceSchema>): EventSource {
  return {
    name: parsed.name,
    scheme: parsed.scheme,
    secrets: parsed.secrets,
    toleranceSeconds: parsed.toleranceSeconds,
    ...(parsed.hmac ? { hmac: parsed.hmac } : {}),
    automations: new Map(Object.entries(parsed.automations) as Array<[string, EventPaths | EventTransform]>),
  };
}

/** Checks a source (ValidationError naming the field, never a secret's value) and returns it. */
export function defineEventSource(source: EventSourceInput): EventSource & { kind: 'event-source' } {
  const parsed = eventSourceSchema.safeParse(source);
  if (!parsed.success) {
    const issue = firstIssue(parsed.error);
    throw new ValidationError(issue.field, issue.rule);
  }
  return { kind: 'event-source', ...fromParsed(parsed.data) };
}

/** True for what defineEventSource returned (the automations module's loader looks for these). */
export function isEventSource(value: unknown): value is EventSource & { kind: 'event-source' } {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'event-source';
}

/**
 * EVENT_SOURCES' sources with their secrets read from `env`. Errors are ValidationErrors whose
 * field is the path inside the JSON (`[0].automations.deploys.key`) or the secrets variable.
 */
export function eventSourcesFromEnv(json: unknown, env: NodeJS.ProcessEnv): EventSource[] {
  const list = z.array(envEventSourceSchema, { error: 'must be a JSON array of sources' }).safeParse(json);
  if (!list.success) {
    const issue = firstIssue(list.error);
    throw new ValidationError(issue.field.replace(/^(\d+)/, '[$1]'), issue.rule);
  }
  return list.data.map((entry, index) => {
    const secrets = commaItems(env[entry.secretsEnv] ?? '');
    const { secretsEnv, ...rest } = entry;
    const parsed = eventSourceSchema.safeParse({ ...rest, secrets });
    if (!parsed.success) {
      const issue = firstIssue(parsed.error);
      // A secret's rule is reported against the variable that holds it (never its value).
      const field = issue.field.startsWith('secrets') ? secretsEnv : `[${index}].${issue.field}`;
      throw new ValidationError(field, issue.rule);
    }
    return fromParsed(parsed.data);
  });
}

/**
 * The source of EVENT_SIGNING_SECRETS: Standard Webhooks with the library's own body
 * `{ key, type?, data? }`, bound to every automation the gateway knows (it predates sources).
 */
export function nativeEventSource(
  secrets: readonly string[],
  automations: readonly string[],
  toleranceSeconds: number = DEFAULT_SOURCE_TOLERANCE_SECONDS,
): EventSource {
  const paths: EventPaths = {
    key: 'body.key',
    type: 'body.type',
    data: 'body.data',
    id: 'header.webhook-id',
  };
  return {
    name: DEFAULT_SOURCE_NAME,
    scheme: 'standard-webhooks',
    secrets,
    toleranceSeconds,
    automations: new Map(automations.map((name) => [name, paths])),
  };
}

/** Sources by name; two of the same name are a configuration error naming it. */
export function sourcesByName(sources: readonly EventSource[]): ReadonlyMap<string, EventSource> {
  const byName = new Map<string, EventSource>();
  for (const source of sources) {
    if (byName.has(source.name))
      throw new ValidationError('sources', `two sources are named ${source.name}: names must be unique`);
    byName.set(source.name, source);
  }
  return byName;
}
