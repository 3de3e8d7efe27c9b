/**
 * `durable-serverless pipeline ...`: start, watch, steer, read and redrive pipelines from the shell,
 * as the `batch` commands do batches.
 *
 *   npm run cli -- pipeline start dub --stages @stages.json --items @items.jsonl --wait
 *   npm run cli -- pipeline status dub --watch
 *   npm run cli -- pipeline results dub --store .results > results.jsonl
 *   npm run cli -- pipeline redrive dub dub-again --wait
 *
 * Progress goes to stderr (one line per stage, redrawn on each change), results and summaries to
 * stdout. Every flag is checked before anything is sent; an error names the flag.
 */
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import type { BatchCliContext } from './cli-batch';
import { readItems } from './cli-batch';
import { parseInteger, parseJsonArgument, parseJsonObject, parseTags } from './cli-input';
import { schedulingOf, schedulingOptions } from './cli-scheduling';
import { createPipelineProgressBars, pipelineProgressLines } from './pipeline-progress';
import {
  awaitPipeline,
  cancelPipeline,
  finishedPipelineSummary,
  getPipelineProgress,
  type PipelineInput,
  pausePipeline,
  pipelineFailureOf,
  readPipelineResults,
  redrivePipeline,
  resumePipeline,
  setPipelineConcurrency,
  startPipeline,
  validatePipelineInput,
} from './pipelines';
import { watchPipeline } from './watch';

export type PipelineCliContext = BatchCliContext;

/** `--budget 12.5`: an amount above 0, in the cost's currency. */
export function parseBudget(flag: string, raw: string): number {
  const amount = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(amount > 0))
    throw new ValidationError(flag, 'must be an amount above 0 (12.5)');
  return amount;
}

/** `--stages '[...]'` or `--stages @stages.json`: the stages, a JSON array. */
export function parseStages(flag: string, raw: string): unknown[] {
  const stages = parseJsonArgument(flag, raw);
  if (!Array.isArray(stages))
    throw new ValidationError(flag, 'must be a JSON array of stages (inline, or @file)');
  return stages;
}

/** Which flag gave a field of the input: a refusal names the flag, then the field under it. */
const FLAG_OF_FIELD: Array<[string, string]> = [
  ['stages', '--stages'],
  ['items', '--items'],
  ['budget', '--budget'],
];

/** The input from the flags, checked as startPipeline checks it; a refusal names its flag. */
export function pipelineInputOf(flags: Record<string, string | boolean | undefined>): PipelineInput {
  if (typeof flags.stages !== 'string')
    throw new ValidationError('--stages', 'is required: a JSON array of stages');
  if (Boolean(flags.items) === Boolean(flags.manifest))
    throw new ValidationError('--items', 'give either --items @file or --manifest <key>');
  const input: Record<string, unknown> = {
    ...(typeof flags.options === 'string' ? parseJsonObject('--options', flags.options) : {}),
    ...schedulingOf(flags),
    stages: parseStages('--stages', flags.stages),
    items:
      typeof flags.items === 'string'
        ? { inline: readItems('--items', flags.items) }
        : { manifest: { key: flags.manifest } },
  };
  if (typeof flags.budget === 'string') input.budget = parseBudget('--budget', flags.budget);
  try {
    validatePipelineInput(input as PipelineInput);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const [, flag] = FLAG_OF_FIELD.find(([field]) => error.field.split('.')[0] === field) ?? [
      '',
      '--options',
    ];
    throw new ValidationError(`${flag} ${error.field}`, error.rule);
  }
  return input as PipelineInput;
}

export function addPipelineCommands(program: Command, ctx: PipelineCliContext): void {
  const print = (value: unknown) => ctx.out(`${JSON.stringify(value, null, 2)}\n`);
  const pipeline = program
    .command('pipeline')
    .description('run items through ordered stages, each on its own endpoint, as soon as each is ready');

  /** Draws every stage's line on stderr until the pipeline ends; then its summary (or its failure). */
  async function watchToEnd(workflowId: string) {
    const client = await ctx.connect();
    const result = awaitPipeline(client, { pipeline: workflowId });
    // Its failure is read below, after the watch: until then it must not count as unhandled.
    result.catch(() => undefined);
    const bars = createPipelineProgressBars(ctx.err, { isTTY: ctx.errIsTTY === true });
    for await (const progress of watchPipeline(client, { pipeline: workflowId })) bars.update(progress);
    try {
      return await result;
    } catch (error) {
      const summary = pipelineFailureOf(error)?.summary;
      if (summary) print(summary);
      throw error;
    }
  }

  const start = pipeline
    .command('start')
    .description('start a pipeline (the same id twice is one pipeline)')
    .argument('<workflow-id>', 'your id for this pipeline')
    .option(
      '--stages <json>',
      'the stages in order: a JSON array, inline or @file (name, endpointId, map...)',
    )
    .option('--items <@file>', 'job requests: JSONL (one per line) or a JSON array')
    .option('--manifest <key>', 'or: a JSONL manifest already in the batch store')
    .option('--budget <amount>', 'stop every stage once the estimated cost reaches this amount')
    .option(
      '--options <json>',
      'further pipeline options (pageSize, maxEventsPerRun...), JSON inline or @file',
    )
    .option('--tags <tags>', 'your tags, comma-separated (at most 10): select runs by them')
    .option('--wait', 'show progress until the pipeline ends, then print its summary');
  schedulingOptions(start).action(
    async (workflowId: string, flags: Record<string, string | boolean | undefined>) => {
      // Checked before connecting: bad input never waits for Temporal.
      const input = pipelineInputOf(flags);
      const tags = typeof flags.tags === 'string' ? parseTags('--tags', flags.tags) : undefined;
      const handle = await startPipeline(await ctx.connect(), input, {
        workflowId,
        taskQueue: ctx.taskQueue(),
        ...(tags ? { tags } : {}),
      });
      if (!flags.wait) return print({ workflowId: handle.workflowId, started: true });
      print(await watchToEnd(handle.workflowId));
    },
  );

  pipeline
    .command('status')
    .description("a pipeline's progress: a line per stage (ended, failed, in flight, buffered, cost)")
    .argument('<workflow-id>')
    .option('--watch', 'redraw the stages on each change until the pipeline ends, then its summary')
    .option('--json', 'the progress as JSON')
    .action(async (workflowId: string, flags: { watch?: boolean; json?: boolean }) => {
      if (flags.watch) return print(await watchToEnd(workflowId));
      const progress = await getPipelineProgress(await ctx.connect(), { pipeline: workflowId });
      if (flags.json) return print(progress);
      ctx.out(`${pipelineProgressLines(progress).join('\n')}\n`);
    });

  pipeline
    .command('results')
    .description("a pipeline's result lines as JSONL on stdout (one per piece)")
    .argument('<workflow-id>')
    .requiredOption(
      '--store <store>',
      "the worker's store: its RESULT_STORE_DIR, or its RESULT_STORE_URL (s3://bucket/prefix; RESULT_STORE_ENDPOINT, _REGION, _PATH_STYLE and the AWS credentials from the environment)",
    )
    .option('--failures', 'only the pieces that did not complete')
    .action(async (workflowId: string, flags: { store: string; failures?: boolean }) => {
      const client = await ctx.connect();
      const summary = await finishedPipelineSummary(client, { pipeline: workflowId });
      const options = { store: flags.store, ...(flags.failures ? { only: 'failures' as const } : {}) };
      for await (const line of readPipelineResults(client, { pipeline: summary, ...options }))
        ctx.out(`${JSON.stringify(line)}\n`);
    });

  for (const [name, what, act] of [
    ['cancel', "cancel every stage's jobs in flight, then the pipeline", cancelPipeline],
    ['pause', 'start no piece in any stage until resumed', pausePipeline],
    ['resume', 'start pieces again', resumePipeline],
  ] as const) {
    pipeline
      .command(name)
      .description(what)
      .argument('<workflow-id>')
      .action(async (workflowId: string) => {
        await act(await ctx.connect(), { pipeline: workflowId });
        print({ workflowId, [name]: true });
      });
  }

  pipeline
    .command('concurrency')
    .description("set how many of a stage's jobs may be in flight")
    .argument('<workflow-id>')
    .argument('<stage>')
    .argument('<n>')
    .action(async (workflowId: string, stage: string, n: string) => {
      const maxConcurrency = parseInteger('<n>', n);
      const previous = await setPipelineConcurrency(await ctx.connect(), {
        pipeline: workflowId,
        stage,
        maxConcurrency,
      });
      print({ workflowId, stage, maxConcurrency, previous });
    });

  pipeline
    .command('redrive')
    .description('a new pipeline of the pieces of a finished one that did not complete, each at its stage')
    .argument('<workflow-id>', 'the finished pipeline')
    .argument('<new-workflow-id>')
    .option('--budget <amount>', 'the new pipeline budget (default: the first one)')
    .option('--wait', 'show progress until the new pipeline ends, then print its summary')
    .action(async (workflowId: string, newId: string, flags: { budget?: string; wait?: boolean }) => {
      const changes =
        typeof flags.budget === 'string' ? { budget: parseBudget('--budget', flags.budget) } : {};
      const handle = await redrivePipeline(
        await ctx.connect(),
        { pipeline: workflowId, changes },
        { workflowId: newId, taskQueue: ctx.taskQueue() },
      );
      if (!flags.wait) return print({ workflowId: handle.workflowId, started: true });
      print(await watchToEnd(handle.workflowId));
    });
}
