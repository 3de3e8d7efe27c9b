/**
 * `durable-serverless event send`: one event to an automation.
 *
 * Straight through Temporal (sendEvent, by signalWithStart): no signature is needed, the CLI
 * already holds the Temporal connection, which is the stronger credential.
 *
 *   npm run cli -- event send orders --key user-42 --id evt-1 --type order.paid --data '{"amount":12}'
 *   npm run cli -- event send orders --key user-42 --id evt-2 --data @event.json
 *
 * Or over HTTP to a gateway (`--to`), signed as any source's scheme would sign it, for testing a
 * source end to end. The secret is read from the variable `--secret-env` names, never from a flag:
 *
 *   GH_SECRET=... npm run cli -- event send deploys --to http://localhost:8080 --source github \
 *     --scheme github --secret-env GH_SECRET --id delivery-1 --body @push.json --header x-github-event:push
 *
 * Everything is checked (name, key, id, type, data and its size, the scheme's settings) before
 * anything is sent.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { request } from 'undici';
import type { z } from 'zod';
import { ValidationError } from '../api/errors';
import { parseAutomationEvent } from '../contracts/automation-input';
import { firstIssue } from '../contracts/input-rules';
import { automationKeySchema, automationNameSchema, sendEvent } from './automations';
import { parseJsonArgument, parseJsonObject, parseTags } from './cli-input';
import { eventSchemeSchema, hmacSpecSchema, type SigningScheme, signAs } from './event-signature';

function check<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = firstIssue(parsed.error, field);
  throw new ValidationError(issue.field, issue.rule);
}

/** `event.data.x` -> `--data.x`: the error names the flag the user typed. */
function flagOf(field: string): string {
  return field.replace(/^event\.(id|type|data|time)/, '--$1');
}

export interface EventCliContext {
  out: (text: string) => void;
  err: (text: string) => void;
  connect: () => Promise<Client>;
  taskQueue: () => string;
}

interface SendFlags {
  key?: string;
  tags?: string;
  id?: string;
  type?: string;
  data?: string;
  time?: string;
  to?: string;
  source?: string;
  scheme: string;
  secretEnv?: string;
  body?: string;
  header: string[];
  hmac?: string;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/** `--body`: the exact bytes to send (inline, or @file read as is: the signature covers them). */
function bodyOf(raw: string): string {
  if (!raw.startsWith('@')) return raw;
  try {
    return readFileSync(raw.slice(1), 'utf8');
  } catch (error) {
    throw new ValidationError(
      '--body',
      `cannot read ${raw.slice(1)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

/** `name:value` headers; the credential headers are the scheme's to set. */
function headersOf(entries: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf(':');
    const name = entry.slice(0, at).trim().toLowerCase();
    if (at <= 0 || !/^[a-z0-9-]{1,64}$/.test(name))
      throw new ValidationError('--header', 'must be name:value (a header name of letters, digits and -)');
    headers[name] = entry.slice(at + 1).trim();
  }
  return headers;
}

/** Over HTTP to a gateway, signed as `--scheme` signs; resolves to the gateway's answer. */
async function sendOverHttp(automation: string, flags: SendFlags, ctx: EventCliContext): Promise<void> {
  const scheme = check(eventSchemeSchema, flags.scheme, '--scheme');
  const to = check(automationNameSchema, automation, 'automation');
  let base: URL;
  try {
    base = new URL(flags.to ?? '');
  } catch {
    throw new ValidationError('--to', 'must be the gateway URL, e.g. http://localhost:8080');
  }
  if (!flags.secretEnv)
    throw new ValidationError('--secret-env', 'is required with --to: the variable holding the secret');
  const secrets = (process.env[flags.secretEnv] ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter(Boolean);
  if (secrets.length === 0)
    throw new ValidationError('--secret-env', `names a variable that is not set (${flags.secretEnv})`);
  const signing: SigningScheme =
    scheme === 'hmac'
      ? {
          scheme,
          hmac: check(
            hmacSpecSchema,
            flags.hmac ? parseJsonObject('--hmac', flags.hmac) : undefined,
            '--hmac',
          ),
        }
      : { scheme };
  // The sender's own body as given; without one, the library's own `{ key, type?, data? }`.
  let body: string;
  if (flags.body !== undefined) body = bodyOf(flags.body);
  else {
    if (flags.key === undefined) throw new ValidationError('--key', 'is required without --body');
    check(automationKeySchema, flags.key, '--key');
    body = JSON.stringify({
      key: flags.key,
      ...(flags.type === undefined ? {} : { type: flags.type }),
      ...(flags.data === undefined ? {} : { data: parseJsonArgument('--data', flags.data) }),
    });
  }
  const signed = await signAs(signing, secrets, body, { id: flags.id ?? `cli_${randomUUID()}` });
  const url = new URL(
    `events/${encodeURIComponent(to)}`,
    base.href.endsWith('/') ? base.href : `${base.href}/`,
  );
  if (flags.source) url.searchParams.set('source', flags.source);
  const answer = await request(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headersOf(flags.header), ...signed },
  });
  const text = await answer.body.text();
  ctx.out(`${JSON.stringify({ status: answer.statusCode, answer: safeJson(text) }, null, 2)}\n`);
  if (answer.statusCode >= 300) throw new Error(`the gateway answered ${answer.statusCode}`);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function addEventCommands(program: Command, ctx: EventCliContext): void {
  const event = program.command('event').description('send events to automations');
  event
    .command('send')
    .description('send one event to <automation> for --key (started if not running)')
    .argument('<automation>')
    .option('--key <key>', 'the automation key (one automation workflow per name and key)')
    .option('--id <id>', 'the event id: a repeat within the de-duplication window is dropped')
    .option('--type <type>', 'the event type')
    .option('--data <json>', 'the event data: JSON inline or @file.json (default null)')
    .option('--time <iso>', 'when the event happened (ISO 8601; default: not set)')
    .option('--tags <tags>', "tags of the automation's workflow, if this event starts it (comma-separated)")
    .option('--to <url>', 'send over HTTP to this gateway, signed by --scheme, instead of through Temporal')
    .option('--source <name>', 'with --to: the event source (default: the source named default)')
    .option(
      '--scheme <scheme>',
      'with --to: standard-webhooks, github, stripe, hmac or bearer',
      'standard-webhooks',
    )
    .option(
      '--secret-env <variable>',
      'with --to: the environment variable holding the secret(s), comma-separated',
    )
    .option('--body <json>', "with --to: the sender's own body, inline or @file, sent byte for byte")
    .option(
      '--header <name:value>',
      'with --to: an extra header (repeatable), e.g. x-github-event:push',
      collect,
      [],
    )
    .option('--hmac <json>', 'with --scheme hmac: {"header","encoding","prefix","signed","timestampHeader"}')
    .action(async (automation: string, flags: SendFlags) => {
      if (flags.to !== undefined) return sendOverHttp(automation, flags, ctx);
      if (flags.key === undefined) throw new ValidationError('--key', 'is required');
      if (flags.id === undefined) throw new ValidationError('--id', 'is required');
      const data = flags.data === undefined ? null : parseJsonArgument('--data', flags.data);
      const event = {
        id: flags.id,
        data,
        ...(flags.type === undefined ? {} : { type: flags.type }),
        ...(flags.time === undefined ? {} : { time: flags.time }),
      };
      // Checked before connecting, so bad input is exit 2 with no connection attempt; sendEvent
      // checks again by the same schemas.
      check(automationNameSchema, automation, 'automation');
      check(automationKeySchema, flags.key, '--key');
      const parsed = parseAutomationEvent(event);
      if (!parsed.ok) throw new ValidationError(flagOf(parsed.field), parsed.rule);
      const tags = flags.tags === undefined ? undefined : parseTags('--tags', flags.tags);
      const sent = await sendEvent(await ctx.connect(), parsed.event, {
        automation,
        key: flags.key,
        taskQueue: ctx.taskQueue(),
        ...(tags ? { tags } : {}),
      });
      ctx.out(`${JSON.stringify(sent, null, 2)}\n`);
    });
}
