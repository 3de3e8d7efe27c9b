/**
 * `durable-serverless event send`: one event to an automation, straight through Temporal
 * (sendEvent, by signalWithStart). No signature is needed: the CLI already holds the Temporal
 * connection, which is the stronger credential; signatures are for the gateway's HTTP route.
 *
 *   npm run cli -- event send orders --key user-42 --id evt-1 --type order.paid --data '{"amount":12}'
 *   npm run cli -- event send orders --key user-42 --id evt-2 --data @event.json
 *
 * Everything is checked (name, key, id, type, data and its size) before anything is sent.
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import type { z } from 'zod';
import { ValidationError } from '../api/errors';
import { parseAutomationEvent } from '../contracts/automation-input';
import { firstIssue } from '../contracts/input-rules';
import { automationKeySchema, automationNameSchema, sendEvent } from './automations';
import { parseJsonArgument } from './cli-input';

function check(schema: z.ZodType, value: unknown, field: string): void {
  const parsed = schema.safeParse(value);
  if (parsed.success) return;
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

export function addEventCommands(program: Command, ctx: EventCliContext): void {
  const event = program.command('event').description('send events to automations');
  event
    .command('send')
    .description('send one event to <automation> for --key (started if not running)')
    .argument('<automation>')
    .requiredOption('--key <key>', 'the automation key (one automation workflow per name and key)')
    .requiredOption('--id <id>', 'the event id: a repeat within the de-duplication window is dropped')
    .option('--type <type>', 'the event type')
    .option('--data <json>', 'the event data: JSON inline or @file.json (default null)')
    .option('--time <iso>', 'when the event happened (ISO 8601; default: not set)')
    .action(
      async (
        automation: string,
        flags: { key: string; id: string; type?: string; data?: string; time?: string },
      ) => {
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
        const sent = await sendEvent(await ctx.connect(), automation, flags.key, parsed.event, {
          taskQueue: ctx.taskQueue(),
        });
        ctx.out(`${JSON.stringify(sent, null, 2)}\n`);
      },
    );
}
