/**
 * `durable-serverless schedule ...`: Temporal Schedules of jobs, batches and ephemeral runs.
 *
 *   npm run cli -- schedule create nightly --kind batch --endpoint ep-1 --items @items.jsonl \
 *     --cron '0 2 * * *' --timezone Europe/Paris --overlap SKIP --catchup-window 1h
 *   npm run cli -- schedule create hourly --kind job --route ep-a,ep-b --job-input '{"n":1}' --cron '0 * * * *'
 *   npm run cli -- schedule describe nightly
 *   npm run cli -- schedule backfill nightly --start 2026-01-01T00:00:00Z --end 2026-01-03T00:00:00Z [--rerun]
 *
 * Output is JSON on stdout, like every command. A bad spec is refused before anything is sent,
 * naming the flag (and the field behind it). The workflow input is never printed: it may hold
 * credentials (s3Config).
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import { parseTolerance, readItems } from './cli-batch';
import { parseChoice, parseInteger, parseJsonArgument, parseJsonObject, parseTags } from './cli-input';
import { parseStages } from './cli-pipeline';
import { ROUTE_HELP, routeOptions, targetOf } from './cli-route';
import { OVERLAP_POLICIES, type OverlapPolicy, type ScheduleSpecInput } from './schedule-spec';
import {
  backfillSchedule,
  checkBackfill,
  checkSchedule,
  checkScheduleUpdate,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  pauseSchedule,
  SCHEDULE_KINDS,
  type ScheduleKind,
  scheduleBatch,
  scheduleEphemeralRun,
  scheduleJob,
  schedulePipeline,
  triggerSchedule,
  unpauseSchedule,
  updateSchedule,
} from './schedules';

export interface ScheduleCliContext {
  out: (text: string) => void;
  err: (text: string) => void;
  connect: () => Promise<Client>;
  taskQueue: () => string;
}

type Flags = Record<string, string | string[] | boolean | undefined>;

/** The flag behind each field of a schedule, so that an error names what the user typed. */
const FLAG_OF: [RegExp, string][] = [
  [/^spec\.cron/, '--cron'],
  [/^spec\.intervals/, '--interval'],
  [/^spec\.timezone/, '--timezone'],
  [/^spec\.jitter/, '--jitter'],
  [/^spec\.startAt/, '--start-at'],
  [/^spec\.endAt/, '--end-at'],
  [/^spec\./, '--spec'],
  [/^policies\.overlap|^overlap/, '--overlap'],
  [/^policies\.catchupWindow/, '--catchup-window'],
  [/^input\.stages/, '--stages'],
  [/^input/, '--input'],
  [/^start$/, '--start'],
  [/^end$/, '--end'],
];

async function namingFlags<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const flag = FLAG_OF.find(([pattern]) => pattern.test(error.field))?.[1];
    if (!flag) throw error;
    throw new ValidationError(`${flag} (${error.field})`, error.rule);
  }
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `--interval 1h` or `--interval 1h/15m` (every hour, 15 minutes past). */
function parseInterval(raw: string) {
  const [every, offset, extra] = raw.split('/');
  if (extra !== undefined || !every)
    throw new ValidationError('--interval', 'must be <every>[/<offset>], e.g. 1h/15m');
  return { every, ...(offset ? { offset } : {}) };
}

/** The spec from --spec (JSON) and the spec flags on top; undefined when none is given. */
function specOf(flags: Flags): ScheduleSpecInput | undefined {
  const spec: Record<string, unknown> =
    typeof flags.spec === 'string' ? { ...parseJsonObject('--spec', flags.spec) } : {};
  if (Array.isArray(flags.cron)) spec.cron = flags.cron;
  if (Array.isArray(flags.interval)) spec.intervals = flags.interval.map(parseInterval);
  for (const [flag, field] of [
    ['timezone', 'timezone'],
    ['jitter', 'jitter'],
    ['startAt', 'startAt'],
    ['endAt', 'endAt'],
  ] as const) {
    if (typeof flags[flag] === 'string') spec[field] = flags[flag];
  }
  return Object.keys(spec).length > 0 ? (spec as ScheduleSpecInput) : undefined;
}

function policiesOf(flags: Flags) {
  return {
    ...(typeof flags.overlap === 'string'
      ? { overlap: parseChoice('--overlap', flags.overlap, OVERLAP_POLICIES) }
      : {}),
    ...(typeof flags.catchupWindow === 'string' ? { catchupWindow: flags.catchupWindow } : {}),
    ...(typeof flags.pauseOnFailure === 'boolean' ? { pauseOnFailure: flags.pauseOnFailure } : {}),
  };
}

/** The workflow input: --input (the whole input), or the flags of `job start` / `batch start` / `pipeline start`. */
function inputOf(kind: ScheduleKind, flags: Flags): Record<string, unknown> {
  const input: Record<string, unknown> =
    typeof flags.input === 'string' ? { ...parseJsonObject('--input', flags.input) } : {};
  // --endpoint or a route (an ephemeral run's endpoint is its own, in --input; a pipeline's stages name theirs).
  if (
    kind === 'pipeline' &&
    (flags.endpoint !== undefined || flags.route !== undefined || flags.routeFile !== undefined)
  )
    throw new ValidationError(
      '--endpoint',
      "a pipeline's stages name their endpoints: give them in --stages",
    );
  if (kind !== 'ephemeral' && kind !== 'pipeline') Object.assign(input, targetOf(flags, { required: false }));
  if (kind === 'job' && typeof flags.jobInput === 'string')
    input.request = { input: parseJsonArgument('--job-input', flags.jobInput) };
  if (kind === 'pipeline' && typeof flags.stages === 'string')
    input.stages = parseStages('--stages', flags.stages);
  if (kind === 'batch' || kind === 'pipeline') {
    if (typeof flags.items === 'string') input.items = { inline: readItems('--items', flags.items) };
    if (typeof flags.manifest === 'string') input.items = { manifest: { key: flags.manifest } };
  }
  if (kind === 'batch') {
    if (typeof flags.maxConcurrency === 'string')
      input.maxConcurrency = parseInteger('--max-concurrency', flags.maxConcurrency);
    if (typeof flags.tolerate === 'string') input.failureTolerance = parseTolerance(flags.tolerate);
  }
  if (typeof flags.options === 'string') Object.assign(input, parseJsonObject('--options', flags.options));
  return input;
}

function specOptions(command: Command): Command {
  return command
    .option(
      '--cron <expr>',
      "a cron string as Temporal reads it, e.g. '0 2 * * *' or @daily (repeatable)",
      collect,
    )
    .option('--interval <every[/offset]>', 'every so long, e.g. 1h or 1d/2h (repeatable)', collect)
    .option('--spec <json>', 'the spec as JSON (calendars, skip...), inline or @file; flags override')
    .option('--timezone <zone>', 'IANA zone the crons are read in (default UTC)')
    .option('--jitter <duration>', 'start each run up to this much later, e.g. 30s')
    .option('--start-at <time>', 'no runs before this time (ISO 8601)')
    .option('--end-at <time>', 'no runs after this time (ISO 8601)')
    .option('--overlap <policy>', `when a run is still going: ${OVERLAP_POLICIES.join(', ')} (default SKIP)`)
    .option('--catchup-window <duration>', 'how late a missed run may still start, e.g. 1h')
    .option('--pause-on-failure', 'pause the schedule when a run fails')
    .option('--note <text>', 'a note shown by describe');
}

export function addScheduleCommands(program: Command, ctx: ScheduleCliContext): void {
  const print = (value: unknown) => ctx.out(`${JSON.stringify(value, null, 2)}\n`);
  const schedule = program
    .command('schedule')
    .description('run jobs, batches, pipelines or ephemeral-endpoint runs on a Temporal Schedule');
  const kinds = Object.keys(SCHEDULE_KINDS) as ScheduleKind[];

  specOptions(
    routeOptions(
      schedule
        .command('create')
        .description("create a schedule; each run's workflow id is <schedule-id>-<its time>")
        .argument('<schedule-id>')
        .requiredOption('--kind <kind>', `what each run is: ${kinds.join(', ')}`)
        .option(
          '--input <json>',
          'the whole workflow input (as startJob/startBatch take it), inline or @file',
        )
        .option('--endpoint <id>', 'endpoint id (job, batch)'),
      'job, batch: ',
    )
      .option('--job-input <json>', 'job: the handler input, JSON inline or @file')
      .option('--stages <json>', 'pipeline: the stages in order, a JSON array inline or @file')
      .option('--items <@file>', 'batch, pipeline: job requests, JSONL or a JSON array')
      .option('--manifest <key>', 'batch, pipeline: or a JSONL manifest in the batch store')
      .option('--max-concurrency <n>', 'batch: jobs in flight at once')
      .option('--tolerate <n|p%>', 'batch: failures tolerated, a count or a percentage')
      .option('--options <json>', 'further workflow input fields, merged last'),
  )
    .option('--paused', 'create it paused')
    .option('--tags <tags>', 'tags of every run it starts, comma-separated (at most 10)')
    .addHelpText('after', ROUTE_HELP)
    .action(async (scheduleId: string, flags: Flags) => {
      const kind = parseChoice('--kind', String(flags.kind), kinds);
      const spec = specOf(flags);
      if (!spec) throw new ValidationError('--cron', 'give --cron, --interval or --spec');
      const policies = policiesOf(flags);
      const input = inputOf(kind, flags) as never;
      const options = {
        scheduleId,
        spec,
        taskQueue: ctx.taskQueue(),
        paused: flags.paused === true,
        ...(Object.keys(policies).length > 0 ? { policies } : {}),
        ...(typeof flags.note === 'string' ? { note: flags.note } : {}),
        ...(typeof flags.tags === 'string' ? { tags: parseTags('--tags', flags.tags) } : {}),
      };
      const create = {
        job: scheduleJob,
        batch: scheduleBatch,
        pipeline: schedulePipeline,
        ephemeral: scheduleEphemeralRun,
      }[kind];
      // Checked before connecting: a bad spec never reaches Temporal (nor waits for it).
      await namingFlags(async () => checkSchedule(kind, input, options));
      await create(await ctx.connect(), input, options);
      print({ scheduleId, kind, created: true });
    });

  schedule
    .command('list')
    .description("this library's schedules")
    .option('--kind <kind>', kinds.join(', '))
    .option('--limit <n>', 'at most this many', '100')
    .action(async (flags: { kind?: string; limit: string }) => {
      const limit = parseInteger('--limit', flags.limit);
      const filter = flags.kind ? { kind: parseChoice('--kind', flags.kind, kinds) } : {};
      const listed = [];
      for await (const listing of listSchedules(await ctx.connect(), filter)) {
        listed.push(listing);
        if (listed.length >= limit) break;
      }
      print(listed);
    });

  schedule
    .command('describe')
    .description('spec, policies, next run times, recent runs with their status')
    .argument('<schedule-id>')
    .action(async (scheduleId: string) => print(await describeSchedule(await ctx.connect(), { scheduleId })));

  for (const [name, what, act] of [
    ['pause', 'no scheduled runs until unpaused', pauseSchedule],
    ['unpause', 'run on the spec again', unpauseSchedule],
  ] as const) {
    schedule
      .command(name)
      .description(what)
      .argument('<schedule-id>')
      .option('--note <text>', 'why')
      .action(async (scheduleId: string, flags: { note?: string }) => {
        await act(await ctx.connect(), {
          scheduleId,
          ...(flags.note === undefined ? {} : { note: flags.note }),
        });
        print({ scheduleId, [name === 'pause' ? 'paused' : 'unpaused']: true });
      });
  }

  schedule
    .command('trigger')
    .description("start a run now (the schedule's overlap policy applies unless --overlap)")
    .argument('<schedule-id>')
    .option('--overlap <policy>', OVERLAP_POLICIES.join(', '))
    .action(async (scheduleId: string, flags: { overlap?: string }) => {
      const overlap = flags.overlap ? parseChoice('--overlap', flags.overlap, OVERLAP_POLICIES) : undefined;
      await triggerSchedule(await ctx.connect(), { scheduleId, ...(overlap ? { overlap } : {}) });
      print({ scheduleId, triggered: true });
    });

  schedule
    .command('backfill')
    .description(
      'run the times of the spec in a past window (both ends included) whose run does not exist yet',
    )
    .argument('<schedule-id>')
    .requiredOption('--start <time>', 'ISO 8601')
    .requiredOption('--end <time>', 'ISO 8601')
    .option('--overlap <policy>', `${OVERLAP_POLICIES.join(', ')} (BUFFER_ALL or ALLOW_ALL runs every time)`)
    .option('--rerun', 'start again the times whose run has closed (an open run still refuses a second)')
    .action(
      async (
        scheduleId: string,
        flags: { start: string; end: string; overlap?: string; rerun?: boolean },
      ) => {
        const overlap: OverlapPolicy | undefined = flags.overlap
          ? parseChoice('--overlap', flags.overlap, OVERLAP_POLICIES)
          : undefined;
        const window = {
          start: flags.start,
          end: flags.end,
          ...(overlap ? { overlap } : {}),
          ...(flags.rerun ? { rerun: true } : {}),
        };
        await namingFlags(async () => checkBackfill(window));
        const { ranges, skipped } = await backfillSchedule(await ctx.connect(), { scheduleId, ...window });
        // What was sent, and the times left out because their run exists: a no-op shows as such.
        print({ scheduleId, backfill: { start: flags.start, end: flags.end }, ranges, skipped });
      },
    );

  specOptions(
    schedule
      .command('update')
      .description('replace the spec (if a spec flag is given), change policies, the input or the note')
      .argument('<schedule-id>')
      .option('--input <json>', 'the whole new workflow input, inline or @file'),
  )
    .option('--no-pause-on-failure', 'do not pause when a run fails')
    .action(async (scheduleId: string, flags: Flags) => {
      const spec = specOf(flags);
      const policies = policiesOf(flags);
      const changes = {
        ...(spec ? { spec } : {}),
        ...(Object.keys(policies).length > 0 ? { policies } : {}),
        ...(typeof flags.input === 'string' ? { input: parseJsonObject('--input', flags.input) } : {}),
        ...(typeof flags.note === 'string' ? { note: flags.note } : {}),
      };
      await namingFlags(async () => checkScheduleUpdate(changes));
      // The new input is checked against the schedule's kind, which only the server knows.
      await namingFlags(async () => updateSchedule(await ctx.connect(), { scheduleId, ...changes }));
      print({ scheduleId, updated: true });
    });

  schedule
    .command('delete')
    .description('delete the schedule (runs already started carry on)')
    .argument('<schedule-id>')
    .action(async (scheduleId: string) => {
      await deleteSchedule(await ctx.connect(), { scheduleId });
      print({ scheduleId, deleted: true });
    });
}
