/**
 * A pipeline's input: items (as a batch's) that flow through ordered stages, each on its own
 * endpoint or route with its own window, job options, failure tolerance, budget share and
 * scheduling, each stage's input made from the previous stage's output by a declarative `map`
 * (contracts/pipeline-map-paths.ts) or a `transform` registered on the worker. Between two stages
 * a bounded buffer holds the items finished by the first and not yet started by the second.
 *
 * The per-stage options are the batch's own schemas (contracts/batch-input.ts), so a stage and a
 * batch can never drift apart. Bundled into workflow code: zod and contracts only.
 */
import { z } from 'zod';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import {
  batchInputSchema,
  batchItemOptionsSchema,
  concurrencySchema,
  failureToleranceSchema,
  MAX_BATCH_CONCURRENCY,
} from './batch-input';
import { schedulingSchema } from './endpoint-gate';
import { firstIssue } from './input-rules';
import { firstEndpoint } from './job-input';
import { parseSourcePath, parseTargetPath, type TargetPath, targetsOverlap } from './pipeline-map-paths';
import { routeSchema } from './route';

export const MAX_PIPELINE_STAGES = 20;
/**
 * The stages' maxConcurrency together, and their buffers together: every item in flight or
 * buffered crosses continue-as-new in one payload, under Temporal's 2 MB limit (a batch's window
 * of 10,000 jobs in flight is about 1 MB).
 */
export const MAX_PIPELINE_IN_FLIGHT = MAX_BATCH_CONCURRENCY;
export const MAX_PIPELINE_BUFFERED = 2 * MAX_BATCH_CONCURRENCY;
/** A stage's buffer when none is given: twice its maxConcurrency (at most one stage's limit). */
export const BUFFER_PER_CONCURRENCY = 2;
export const MAX_MAP_FIELDS = 100;
/** The parts a transform may split one item into (each part is a piece with a record of its own). */
export const MAX_SPLIT_PARTS = 1_000;

/** A stage's or a transform's name: it appears in result lines, progress and metrics, so plain. */
const nameSchema = z
  .string({ error: 'is required' })
  .min(1, { error: 'must not be empty' })
  .max(64, { error: 'must be at most 64 characters' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, {
    error: 'must be letters, digits, . _ - (starting with a letter or digit)',
  });

/** Where one field of the next request comes from. */
const mapSourceSchema = z.union(
  [
    /** A path that must be there: a missing value fails the item at this stage. */
    z.string(),
    /** A path, and the value to use when it is missing. */
    z.strictObject({ path: z.string(), default: z.json({ error: 'must be a JSON value' }) }),
    /** A constant. */
    z.strictObject({ value: z.json({ error: 'must be a JSON value' }) }),
  ],
  { error: 'must be a source path ($.item... or $.previous...), { path, default } or { value }' },
);

export type StageMapSource = z.infer<typeof mapSourceSchema>;

/** The path a map source reads: none for a constant. */
export function sourcePathOf(source: StageMapSource): string | undefined {
  if (typeof source === 'string') return source;
  return 'path' in source ? source.path : undefined;
}

/**
 * The next stage's job request, field by field: target path (`input.text`, `policy.ttl`) to
 * source. Targets must not overlap, and `input` or a field of it must be set.
 */
export const stageMapSchema = z
  .record(z.string(), mapSourceSchema, { error: 'must be an object of target path to source' })
  .superRefine((map, ctx) => {
    const targets = Object.keys(map);
    if (targets.length === 0 || targets.length > MAX_MAP_FIELDS)
      ctx.addIssue({ code: 'custom', message: `must set 1 to ${MAX_MAP_FIELDS} fields` });
    const parsed: Array<[string, TargetPath]> = [];
    for (const target of targets) {
      const checked = parseTargetPath(target);
      if (!checked.ok) {
        ctx.addIssue({ code: 'custom', path: [target], message: `is not a target: ${checked.rule}` });
        continue;
      }
      const over = parsed.find(([, earlier]) => targetsOverlap(earlier, checked.path));
      if (over) ctx.addIssue({ code: 'custom', path: [target], message: `overlaps ${over[0]}` });
      parsed.push([target, checked.path]);
      const source = map[target];
      const path = source === undefined ? undefined : sourcePathOf(source);
      const read = path === undefined ? undefined : parseSourcePath(path);
      if (read && !read.ok) ctx.addIssue({ code: 'custom', path: [target], message: read.rule });
    }
    if (targets.length > 0 && !parsed.some(([, target]) => target.root === 'input'))
      ctx.addIssue({ code: 'custom', message: 'must set input or a field of it (input.text, ...)' });
  });
export type StageMap = z.infer<typeof stageMapSchema>;

/** A transform registered on the worker by name, run in an activity: it may drop or split an item. */
export const stageTransformSchema = z.strictObject({
  name: nameSchema,
  /** Passed to the transform as is (small: it is part of the input, in history). */
  options: z.json({ error: 'must be a JSON value' }).optional(),
});

export const pipelineStageSchema = z.strictObject({
  /** Unique in the pipeline: result lines and progress name the stage by it. */
  name: nameSchema,
  /** The stage's endpoint (exactly one of endpointId and route), as a batch's. */
  endpointId: pathSegmentSchema.optional(),
  route: routeSchema.optional(),
  /** Its jobs in flight at once (submitted and not finished). */
  maxConcurrency: concurrencySchema.default(100),
  /** Options its jobs run with (the batch's per-item options, the job workflow's defaults). */
  job: batchItemOptionsSchema.prefault({}),
  /** Failures at this stage tolerated before the pipeline fails (default: none). */
  failureTolerance: failureToleranceSchema,
  /** The share (0 to 1] of the pipeline's budget this stage may spend. */
  budgetShare: z.number({ error: 'must be a number above 0, at most 1' }).gt(0).max(1).optional(),
  /** How its submits share the endpoint: the pipeline's priority and fairness unless set here. */
  ...schedulingSchema.shape,
  /** Its input made from the item and the previous stage's result, field by field. */
  map: stageMapSchema.optional(),
  /** Or by a transform registered on the worker (not on the first stage). */
  transform: stageTransformSchema.optional(),
  /**
   * Items finished by the stage before and waiting for this one, at most (not on the first
   * stage; default twice this stage's maxConcurrency). A full buffer stops the stage before.
   */
  buffer: z
    .int({ error: `must be a whole number of items from 1 to ${MAX_BATCH_CONCURRENCY}` })
    .min(1, { error: `must be a whole number of items from 1 to ${MAX_BATCH_CONCURRENCY}` })
    .max(MAX_BATCH_CONCURRENCY, {
      error: `must be a whole number of items from 1 to ${MAX_BATCH_CONCURRENCY}`,
    })
    .optional(),
});

const batch = batchInputSchema.shape;

export const pipelineInputSchema = z
  .strictObject({
    /** The items, as a batch's: inline, a manifest in the store, or a redrive's list. */
    items: batch.items,
    stages: z
      .array(pipelineStageSchema)
      .min(1, { error: 'must hold at least one stage' })
      .max(MAX_PIPELINE_STAGES, { error: `must hold at most ${MAX_PIPELINE_STAGES} stages` }),
    /** Every stage's scheduling unless the stage sets its own; the pipeline's task priority. */
    ...schedulingSchema.shape,
    /** Stop every stage's submissions once the estimated cost of all stages reaches this amount. */
    budget: batch.budget,
    pageSize: batch.pageSize,
    maxEventsPerRun: batch.maxEventsPerRun,
    /** Send an event to an automation when the pipeline ends (chaining), as a batch does. */
    emitOnEnd: batch.emitOnEnd,
  })
  .superRefine((input, ctx) => {
    const stages = input.stages;
    const issue = (path: Array<string | number>, message: string) =>
      ctx.addIssue({ code: 'custom', path: ['stages', ...path], message });
    const names = new Set<string>();
    stages.forEach((stage, at) => {
      if (names.has(stage.name))
        issue([at, 'name'], `must be unique: "${stage.name}" names an earlier stage`);
      names.add(stage.name);
      if ((stage.endpointId === undefined) === (stage.route === undefined))
        issue([at, 'endpointId'], 'exactly one of endpointId and route is required');
      if (stage.budgetShare !== undefined && input.budget === undefined)
        issue([at, 'budgetShare'], "is a share of the pipeline's budget: set budget");
      if (at === 0) {
        if (stage.transform) issue([0, 'transform'], 'the first stage takes the item as is or by a map');
        if (stage.buffer !== undefined) issue([0, 'buffer'], 'the first stage reads the items: no buffer');
        for (const [target, source] of Object.entries(stage.map ?? {})) {
          const path = sourcePathOf(source);
          const read = path === undefined ? undefined : parseSourcePath(path);
          if (read?.ok && read.path.root !== 'item')
            issue([0, 'map', target], 'the first stage has no previous stage: read from $.item only');
        }
      } else if ((stage.map === undefined) === (stage.transform === undefined)) {
        issue([at, 'map'], 'exactly one of map and transform is required after the first stage');
      }
    });
    const inFlight = stages.reduce((sum, stage) => sum + stage.maxConcurrency, 0);
    if (inFlight > MAX_PIPELINE_IN_FLIGHT)
      issue(
        [],
        `the stages' maxConcurrency together must be at most ${MAX_PIPELINE_IN_FLIGHT} (${inFlight})`,
      );
    const buffered = stages.reduce((sum, stage, at) => sum + bufferOf(stage, at), 0);
    if (buffered > MAX_PIPELINE_BUFFERED)
      issue([], `the stages' buffers together must be at most ${MAX_PIPELINE_BUFFERED} (${buffered})`);
  });

/** A stage's buffer: none before the first, else its own or twice its maxConcurrency. */
function bufferOf(stage: { buffer?: number | undefined; maxConcurrency: number }, at: number): number {
  if (at === 0) return 0;
  return stage.buffer ?? Math.min(BUFFER_PER_CONCURRENCY * stage.maxConcurrency, MAX_BATCH_CONCURRENCY);
}

export type PipelineInput = z.input<typeof pipelineInputSchema>;
export type PipelineStageInput = z.input<typeof pipelineStageSchema>;
type Stage = z.infer<typeof pipelineStageSchema>;

/**
 * A parsed stage: `endpointId` its first endpoint (its route's first when it names a route),
 * `buffer` its buffer (0 on the first stage), scheduling its own or the pipeline's, `budget` its
 * share of the pipeline's budget when it has one.
 */
export type ParsedPipelineStage = Omit<Stage, 'endpointId' | 'buffer'> & {
  endpointId: string;
  buffer: number;
  budget?: number;
};
export type ParsedPipelineInput = Omit<z.infer<typeof pipelineInputSchema>, 'stages'> & {
  stages: ParsedPipelineStage[];
};

export function parsePipelineInput(
  raw: unknown,
): { ok: true; value: ParsedPipelineInput } | { ok: false; field: string; rule: string } {
  const result = pipelineInputSchema.safeParse(raw);
  if (!result.success) return { ok: false, ...firstIssue(result.error) };
  const input = result.data;
  const stages = input.stages.map((stage, at): ParsedPipelineStage => {
    const share = stage.budgetShare;
    return {
      ...stage,
      endpointId: firstEndpoint(stage),
      buffer: bufferOf(stage, at),
      priority: stage.priority ?? input.priority,
      fairnessKey: stage.fairnessKey ?? input.fairnessKey,
      fairnessWeight: stage.fairnessWeight ?? input.fairnessWeight,
      ...(share !== undefined && input.budget !== undefined ? { budget: share * input.budget } : {}),
    };
  });
  return { ok: true, value: { ...input, stages } };
}

/**
 * A live change of one stage's maxConcurrency (setPipelineConcurrency): the rule it breaks, or
 * undefined. The stages' windows together stay within MAX_PIPELINE_IN_FLIGHT (they cross
 * continue-as-new in one payload); `current` is every stage's maxConcurrency now, when known.
 */
export function stageConcurrencyIssue(
  change: { stage: unknown; maxConcurrency: unknown },
  stages?: ReadonlyArray<{ name: string; maxConcurrency: number }>,
): { field: string; rule: string } | undefined {
  const name = nameSchema.safeParse(change.stage);
  if (!name.success) return { field: 'stage', rule: name.error.issues[0]?.message ?? 'is invalid' };
  const checked = concurrencySchema.safeParse(change.maxConcurrency);
  if (!checked.success)
    return { field: 'maxConcurrency', rule: `must be a whole number from 1 to ${MAX_BATCH_CONCURRENCY}` };
  if (stages === undefined) return undefined;
  if (!stages.some((stage) => stage.name === name.data))
    return {
      field: 'stage',
      rule: `names no stage of the pipeline (${stages.map((stage) => stage.name).join(', ')})`,
    };
  const others = stages.reduce(
    (sum, stage) => (stage.name === name.data ? sum : sum + stage.maxConcurrency),
    0,
  );
  if (others + checked.data > MAX_PIPELINE_IN_FLIGHT)
    return {
      field: 'maxConcurrency',
      rule: `the stages' maxConcurrency together must be at most ${MAX_PIPELINE_IN_FLIGHT} (${others + checked.data})`,
    };
  return undefined;
}
