/**
 * `durable-serverless batch ...`: start, watch, steer and read batches from the shell.
 *
 *   npm run cli -- batch start nightly --endpoint ep-1 --items @items.jsonl --tolerate 5% --wait
 *   npm run cli -- batch start nightly --route-file route.json --items @items.jsonl --wait
 *   npm run cli -- batch status nightly --watch
 *   npm run cli -- batch results nightly --store .results > results.jsonl
 *
 * Progress goes to stderr (a line per second), results and summaries to stdout, so both pipe well.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import type { JobRequestInput } from '../api/schemas/job';
import {
  awaitBatch,
  type BatchInput,
  batchFailureOf,
  cancelBatch,
  getBatchProgress,
  pauseBatch,
  readBatchResults,
  redriveBatch,
  resumeBatch,
  setBatchConcurrency,
  startBatch,
  validateBatchInput,
} from './batches';
import { parseInteger, parseJsonObject, parseTags } from './cli-input';
import { ROUTE_HELP, routeOptions, targetOf } from './cli-route';
import { schedulingOf, schedulingOptions } from './cli-scheduling';
import { createBatchProgressBar } from './progress-bar';
import { watchBatch } from './watch';

export interface BatchCliContext {
  out: (text: string) => void;
  err: (text: string) => void;
  /** stderr is a terminal: the progress bar redraws in place (else a line per update). */
  errIsTTY?: boolean;
  connect: () => Promise<Client>;
  taskQueue: () => string;
}

/** `--tolerate 5%` (a percentage) or `--tolerate 10` (a count). */
export function parseTolerance(raw: string): { count: number } | { percentage: number } {
  const percent = /^(\d+(?:\.\d+)?)%$/.exec(raw.trim());
  if (percent) return { percentage: Number(percent[1]) };
  if (/^\d+$/.test(raw.trim())) return { count: Number(raw) };
  throw new ValidationError('--tolerate', 'must be a count (10) or a percentage (5%)');
}

/** Job requests from a JSONL file (or a JSON array), `@path`. */
export function readItems(flag: string, raw: string): JobRequestInput[] {
  if (!raw.startsWith('@'))
    throw new ValidationError(flag, 'must be @file (JSONL: one job request per line)');
  let text: string;
  try {
    text = readFileSync(raw.slice(1), 'utf8');
  } catch (error) {
    throw new ValidationError(flag, `cannot read ${raw.slice(1)}: ${(error as NodeJS.ErrnoException).code}`);
  }
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    try {
      return JSON.parse(trimmed) as JobRequestInput[];
    } catch {
      throw new ValidationError(flag, 'must be a JSON array or JSONL');
    }
  }
  return trimmed
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, k) => {
      try {
        return JSON.parse(line) as JobRequestInput;
      } catch {
        throw new ValidationError(`${flag} line ${k + 1}`, 'must be JSON');
      }
    });
}

/** Draws the batch's progress (watchBatch: each change) until it has ended. */
async function watchProgress(ctx: BatchCliContext, workflowId: string): Promise<void> {
  const bar = createBatchProgressBar(ctx.err, { isTTY: ctx.errIsTTY === true });
  try {
    for await (const progress of watchBatch(await ctx.connect(), { batch: workflowId })) bar.update(progress);
  } finally {
    bar.stop();
  }
}

export function addBatchCommands(program: Command, ctx: BatchCliContext): void {
  const print = (value: unknown) => ctx.out(`${JSON.stringify(value, null, 2)}\n`);
  const batch = program
    .command('batch')
    .description('run many jobs on one endpoint (or a route) as one batch');

  async function summaryOrFailure(workflowId: string) {
    const client = await ctx.connect();
    const result = awaitBatch(client, { batch: workflowId });
    // Its failure is read below, after the watch: until then it must not count as unhandled.
    result.catch(() => undefined);
    await watchProgress(ctx, workflowId);
    try {
      return await result;
    } catch (error) {
      const summary = batchFailureOf(error)?.summary;
      if (summary) print(summary);
      throw error;
    }
  }

  const batchStart = routeOptions(
    batch
      .command('start')
      .description('start a batch (the same id twice is one batch)')
      .argument('<workflow-id>', 'your id for this batch')
      .option('--endpoint <id>', 'endpoint id'),
  )
    .addHelpText('after', ROUTE_HELP)
    .option('--items <@file>', 'job requests: JSONL (one per line) or a JSON array')
    .option('--manifest <key>', 'or: a JSONL manifest already in the batch store')
    .option('--max-concurrency <n>', 'jobs in flight at once (default 100)')
    .option('--tolerate <n|p%>', 'failures tolerated: a count (10) or a percentage (5%)')
    .option('--options <json>', 'further batch options (job, pageSize...), JSON inline or @file')
    .option('--tags <tags>', 'your tags, comma-separated (at most 10): select runs by them')
    .option('--wait', 'show progress until the batch ends, then print its summary');
  schedulingOptions(batchStart).action(
    async (workflowId: string, flags: Record<string, string | boolean | undefined>) => {
      if (Boolean(flags.items) === Boolean(flags.manifest))
        throw new ValidationError('--items', 'give either --items @file or --manifest <key>');
      const input: Record<string, unknown> = {
        ...targetOf(flags, { required: true }),
        ...schedulingOf(flags),
        items:
          typeof flags.items === 'string'
            ? { inline: readItems('--items', flags.items) }
            : { manifest: { key: flags.manifest } },
      };
      if (typeof flags.maxConcurrency === 'string')
        input.maxConcurrency = parseInteger('--max-concurrency', flags.maxConcurrency);
      if (typeof flags.tolerate === 'string') input.failureTolerance = parseTolerance(flags.tolerate);
      if (typeof flags.options === 'string')
        Object.assign(input, parseJsonObject('--options', flags.options));
      // Checked before connecting: bad input never waits for Temporal.
      validateBatchInput(input as BatchInput);
      const tags = typeof flags.tags === 'string' ? parseTags('--tags', flags.tags) : undefined;
      const handle = await startBatch(await ctx.connect(), input as BatchInput, {
        workflowId,
        taskQueue: ctx.taskQueue(),
        ...(tags ? { tags } : {}),
      });
      if (!flags.wait) return print({ workflowId: handle.workflowId, started: true });
      print(await summaryOrFailure(handle.workflowId));
    },
  );

  batch
    .command('status')
    .description("a batch's progress: counts, in flight, rate, time left")
    .argument('<workflow-id>')
    .option('--watch', 'a progress line every second until the batch ends, then its summary')
    .action(async (workflowId: string, flags: { watch?: boolean }) => {
      if (flags.watch) return print(await summaryOrFailure(workflowId));
      print(await getBatchProgress(await ctx.connect(), { batch: workflowId }));
    });

  batch
    .command('results')
    .description("a batch's result lines as JSONL on stdout (one per item)")
    .argument('<workflow-id>')
    .requiredOption(
      '--store <store>',
      "the worker's store: its RESULT_STORE_DIR, or its RESULT_STORE_URL (s3://bucket/prefix; RESULT_STORE_ENDPOINT, _REGION, _PATH_STYLE and the AWS credentials from the environment)",
    )
    .option('--failures', 'only the items that did not complete')
    .action(async (workflowId: string, flags: { store: string; failures?: boolean }) => {
      const client = await ctx.connect();
      let summary: Awaited<ReturnType<typeof awaitBatch>>;
      try {
        summary = await awaitBatch(client, { batch: workflowId });
      } catch (error) {
        const carried = batchFailureOf(error)?.summary;
        if (!carried) throw error;
        summary = carried;
      }
      const options = { store: flags.store, ...(flags.failures ? { only: 'failures' as const } : {}) };
      for await (const line of readBatchResults(client, { batch: summary, ...options }))
        ctx.out(`${JSON.stringify(line)}\n`);
    });

  for (const [name, what, act] of [
    ['cancel', 'cancel every job in flight, then the batch', cancelBatch],
    ['pause', 'submit no new items until resumed', pauseBatch],
    ['resume', 'submit again', resumeBatch],
  ] as const) {
    batch
      .command(name)
      .description(what)
      .argument('<workflow-id>')
      .action(async (workflowId: string) => {
        await act(await ctx.connect(), { batch: workflowId });
        print({ workflowId, [name]: true });
      });
  }

  batch
    .command('concurrency')
    .description('set how many jobs may be in flight')
    .argument('<workflow-id>')
    .argument('<n>')
    .action(async (workflowId: string, n: string) => {
      const previous = await setBatchConcurrency(await ctx.connect(), {
        batch: workflowId,
        maxConcurrency: parseInteger('<n>', n),
      });
      print({ workflowId, maxConcurrency: Number(n), previous });
    });

  batch
    .command('redrive')
    .description('a new batch of the items of a finished one that did not complete')
    .argument('<workflow-id>', 'the finished batch')
    .argument('<new-workflow-id>')
    .option('--wait', 'show progress until the new batch ends, then print its summary')
    .action(async (workflowId: string, newId: string, flags: { wait?: boolean }) => {
      const handle = await redriveBatch(await ctx.connect(), {
        batch: workflowId,
        workflowId: newId,
        taskQueue: ctx.taskQueue(),
      });
      if (!flags.wait) return print({ workflowId: handle.workflowId, started: true });
      print(await summaryOrFailure(handle.workflowId));
    });
}
