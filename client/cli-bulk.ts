/**
 * `durable-serverless bulk ...`: act on many runs at once by a selection (client/bulk.ts).
 *
 *   npm run cli -- bulk cancel --endpoint ep-1 --tag nightly --dry-run
 *   npm run cli -- bulk cancel --query 'StartTime > "2026-11-01T00:00:00Z"' --wait
 *   npm run cli -- bulk retry --endpoint ep-1 --since 2026-11-27T00:00:00Z
 *   npm run cli -- bulk redrive --tag nightly
 *   npm run cli -- bulk replay --automation on-upload --from 2026-11-27T00:00:00Z --to 2026-11-28T00:00:00Z --failed
 *   npm run cli -- bulk status bulk-cancel-...
 *
 * The selection is checked before anything is contacted; a dry run starts nothing.
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import { replayWindowSchema } from '../contracts/bulk-action';
import {
  awaitBulkAction,
  type BulkActionName,
  type BulkSelection,
  bulkActionQuery,
  bulkActions,
  dryRunBulkAction,
  getBulkProgress,
  startBulkAction,
} from './bulk';
import { parseInteger, parseTags } from './cli-input';

export interface BulkCliContext {
  out: (text: string) => void;
  connect: () => Promise<Client>;
  taskQueue: () => string;
}

interface BulkFlags {
  query?: string;
  endpoint?: string;
  since?: string;
  until?: string;
  tag?: string;
  schedule?: string;
  startedBy?: string;
  automation?: string;
  key?: string;
  from?: string;
  to?: string;
  failed?: boolean;
  dryRun?: boolean;
  wait?: boolean;
  id?: string;
  pageSize?: string;
  sample?: string;
}

const WHAT: Record<BulkActionName, string> = {
  cancel: 'cancel running jobs and batches (their remote jobs are cancelled first)',
  retry: 'start failed jobs again, under their own workflow ids',
  redrive: 'a new batch of the failed items of each finished batch',
  replay:
    'send again the events automations received in --from..--to (--failed: those whose run failed), each under a new id',
};

function selectionOf(flags: BulkFlags): BulkSelection {
  return {
    ...(flags.query !== undefined ? { query: flags.query } : {}),
    ...(flags.endpoint !== undefined ? { endpointId: flags.endpoint } : {}),
    ...(flags.since !== undefined ? { startedAfter: flags.since } : {}),
    ...(flags.until !== undefined ? { startedBefore: flags.until } : {}),
    ...(flags.tag !== undefined ? { tags: parseTags('--tag', flags.tag) } : {}),
    ...(flags.schedule !== undefined ? { scheduleId: flags.schedule } : {}),
    ...(flags.startedBy !== undefined ? { startedBy: flags.startedBy } : {}),
    ...(flags.automation !== undefined ? { automation: flags.automation } : {}),
    ...(flags.key !== undefined ? { automationKey: flags.key } : {}),
  };
}

function checkReplayWindow(from: string, to: string): void {
  const parsed = replayWindowSchema.safeParse({ from, to });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ValidationError(`--${String(issue?.path[0] ?? 'from')}`, issue?.message ?? 'is invalid');
  }
}

export function addBulkCommands(program: Command, ctx: BulkCliContext): void {
  const print = (value: unknown) => ctx.out(`${JSON.stringify(value, null, 2)}\n`);
  const bulk = program
    .command('bulk')
    .description('act on many runs by a selection: cancel, retry, redrive (durable; --dry-run first)');

  for (const action of bulkActions) {
    const command = bulk.command(action);
    if (action === 'replay') {
      command
        .requiredOption('--from <iso>', 'the events received at or after this time')
        .requiredOption('--to <iso>', 'and before this time')
        .option('--failed', 'only the events whose run ended failed')
        .option('--automation <name>', 'the automation (its name)')
        .option('--key <key>', 'and its key');
    }
    command
      .description(WHAT[action])
      .option('--query <query>', 'a visibility query of your own, ANDed with the flags below')
      .option('--endpoint <id>', 'runs on this endpoint')
      .option('--since <iso>', 'runs started at or after this time')
      .option('--until <iso>', 'runs started before this time')
      .option('--tag <tags>', 'runs carrying every one of these tags (comma-separated)')
      .option('--schedule <id>', 'runs this schedule started')
      .option('--started-by <workflow-id>', 'runs this automation, batch or ephemeral run started')
      .option('--dry-run', 'print the count and a sample, and act on nothing')
      .option('--sample <n>', 'with --dry-run: how many to show (default 10)')
      .option('--id <workflow-id>', "the bulk action's workflow id (the same id twice is one action)")
      .option('--page-size <n>', 'runs listed and acted on at a time (default 100)')
      .option('--wait', 'wait until it has gone through the whole selection, then print its counts')
      .action(async (flags: BulkFlags) => {
        const selection = selectionOf(flags);
        // Checked before connecting: a bad selection never waits for Temporal.
        bulkActionQuery(action, selection);
        if (action === 'replay') checkReplayWindow(String(flags.from), String(flags.to));
        const client = await ctx.connect();
        if (flags.dryRun) {
          const sampleSize = flags.sample === undefined ? 10 : parseInteger('--sample', flags.sample);
          return print(await dryRunBulkAction(client, action, selection, { sampleSize }));
        }
        const handle = await startBulkAction(client, action, selection, {
          taskQueue: ctx.taskQueue(),
          ...(action === 'replay'
            ? {
                window: {
                  from: String(flags.from),
                  to: String(flags.to),
                  ...(flags.failed ? { onlyFailed: true } : {}),
                },
              }
            : {}),
          ...(flags.id !== undefined ? { workflowId: flags.id } : {}),
          ...(flags.pageSize !== undefined ? { pageSize: parseInteger('--page-size', flags.pageSize) } : {}),
        });
        if (!flags.wait) return print({ workflowId: handle.workflowId, started: true });
        print(await awaitBulkAction(client, { workflowId: handle.workflowId }));
      });
  }

  bulk
    .command('status')
    .description("a bulk action's progress: pages, runs seen, acted on, skipped, failed")
    .argument('<workflow-id>')
    .action(async (workflowId: string) => print(await getBulkProgress(await ctx.connect(), { workflowId })));
}
