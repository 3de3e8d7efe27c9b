/**
 * Scheduled jobs, batches, pipelines and ephemeral-endpoint runs, on Temporal Schedules (`client.schedule`):
 * the server keeps the timetable, the overlap policy, catch-up, pause, trigger and backfill; we
 * add no timer of our own.
 *
 * Run ids: the action's workflow id is the schedule id, and Temporal appends each run's scheduled
 * time to it, so the run due at 2026-01-01T02:00:00Z of schedule `nightly` is the workflow
 * `nightly-2026-01-01T02:00:00Z` (see scheduledRunWorkflowId). A retried action (the server's own
 * retry, a backfill over the same time) meets that id while the run is open and starts nothing;
 * once it has closed, Temporal would start it again, so backfillSchedule leaves out the times whose
 * run exists (backfill-window.ts).
 *
 * Every input is parsed before anything is sent: a bad one throws ValidationError naming the field
 * (`spec.cron.0`, `input.request.input`, ...). The workflow input goes through the same validators
 * as startJob, startBatch, startPipeline and startEphemeralEndpoint, and reaches the workflow as they pass it.
 */
import type { Client, ScheduleDescription, ScheduleHandle } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import type { BatchInput } from '../contracts/batch-input';
import { type EphemeralEndpointInput, ephemeralEndpointInputSchema } from '../contracts/endpoint-input';
import { firstIssue } from '../contracts/input-rules';
import type { JobWorkflowInput } from '../contracts/job-input';
import type { PipelineInput } from '../contracts/pipeline-input';
import { tagAttributes, tagsSchema } from '../contracts/tags';
import { type TaskPriorityOf, workloadTaskPriority } from '../contracts/task-priority';
import { tagsKey } from '../workflows/shared/search-attributes';
import {
  existingRunTimes,
  rangesWithTimes,
  scheduleMatchingTimes,
  type TimeRange,
  uncoveredRanges,
} from './backfill-window';
import { batchSearchAttributes, validateBatchInput } from './batches';
import { DEFAULT_TASK_QUEUE } from './endpoints';
import { jobSearchAttributes, validateJobInput } from './jobs';
import { pipelineSearchAttributes, validatePipelineInput } from './pipelines';
import {
  instantSchema,
  type OverlapPolicy,
  overlapSchema,
  schedulePoliciesSchema,
  scheduleSpecSchema,
  toTemporalSpec,
} from './schedule-spec';
import { latestActionAt, triggerNotBefore } from './schedule-trigger-time';
import {
  describeBatch,
  describeEndpointStep,
  describeJob,
  describePipeline,
  type WorkflowDescription,
} from './workflow-descriptions';

export type { OverlapPolicy, SchedulePoliciesInput, ScheduleSpecInput } from './schedule-spec';
export { cronProblem, OVERLAP_POLICIES } from './schedule-spec';

/** What a schedule runs, and the workflow type each kind starts. */
export const SCHEDULE_KINDS = {
  job: 'serverlessJob',
  batch: 'serverlessBatch',
  pipeline: 'serverlessPipeline',
  ephemeral: 'ephemeralEndpointWorkflow',
} as const;
export type ScheduleKind = keyof typeof SCHEDULE_KINDS;

/** Room for the `-<RFC 3339 time>` Temporal appends, under its 1,000-character workflow id limit. */
const MAX_SCHEDULE_ID = 200;
const scheduleIdSchema = z
  .string({ error: 'is required' })
  .min(1, { error: 'must not be empty' })
  .max(MAX_SCHEDULE_ID, { error: `must be at most ${MAX_SCHEDULE_ID} characters` })
  .regex(/^\S+$/, { error: 'must not contain spaces' });

export const scheduleOptionsSchema = z.strictObject({
  scheduleId: scheduleIdSchema,
  spec: scheduleSpecSchema,
  policies: schedulePoliciesSchema.optional(),
  taskQueue: z.string().min(1, { error: 'must not be empty' }).default(DEFAULT_TASK_QUEUE),
  /** Create it paused (it runs only when triggered or backfilled until unpaused). */
  paused: z.boolean({ error: 'must be a boolean' }).default(false),
  /** Shown by describe and the UI; why it was created, or paused. */
  note: z.string({ error: 'must be a string' }).max(1000).optional(),
  /** Yours, kept on the schedule (not on its runs). */
  memo: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
  /** Set on every run it starts (not on the schedule itself): select the runs by them. */
  tags: tagsSchema.optional(),
  /** The workflow input: checked by the kind's own validator, so typed loosely here. */
  input: z.unknown(),
});

/** The schedule's id, timetable and policies: everything but the workflow input of its runs. */
export type ScheduleOptions = Omit<z.input<typeof scheduleOptionsSchema>, 'input'>;

function parse<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { field, rule } = firstIssue(result.error, root);
  // An unknown field is named itself: the object holding it may be the whole options, which
  // firstIssue would call `input`, the name of a real field (and the CLI's --input).
  const issue = result.error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const named = [root, ...issue.path.map(String), issue.keys[0]].filter(Boolean).join('.');
    throw new ValidationError(named, rule);
  }
  throw new ValidationError(field, rule);
}

/** Under `input.`: the error names the field inside the workflow input. */
function underInput<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof ValidationError)
      // `input` alone is a validator's name for the whole input, already our field's name.
      throw new ValidationError(error.field === 'input' ? 'input' : `input.${error.field}`, error.rule);
    throw error;
  }
}

/** The workflow arguments of a kind, checked as its start function checks them, in the same shape. */
function actionArgs(kind: ScheduleKind, input: unknown): unknown[] {
  return underInput(() => {
    if (kind === 'job') {
      validateJobInput(input as JobWorkflowInput);
      return [input];
    }
    if (kind === 'batch') {
      validateBatchInput(input as BatchInput);
      return [input];
    }
    if (kind === 'pipeline') {
      validatePipelineInput(input as PipelineInput);
      return [input];
    }
    // startEphemeralEndpoint passes the parsed request; so does its schedule.
    return [parse(ephemeralEndpointInputSchema, input, '')];
  });
}

/**
 * The static summary and details every run of a schedule starts with (the input is already
 * checked), and the search attributes startJob and startBatch set (ServerlessEndpointId: the
 * endpoint, or a route's first).
 */
function actionDescription(
  kind: ScheduleKind,
  args: unknown[],
  tags: readonly string[] | undefined,
): WorkflowDescription & { typedSearchAttributes?: SearchAttributePair[] } {
  if (kind === 'job') {
    const input = args[0] as JobWorkflowInput;
    return {
      ...describeJob(input),
      typedSearchAttributes: [...jobSearchAttributes(input), ...tagAttributes(tags)],
    };
  }
  if (kind === 'batch') {
    const input = args[0] as BatchInput;
    return {
      ...describeBatch(input),
      typedSearchAttributes: [...batchSearchAttributes(input), ...tagAttributes(tags)],
    };
  }
  if (kind === 'pipeline') {
    const input = args[0] as PipelineInput;
    return {
      ...describePipeline(input),
      typedSearchAttributes: [...pipelineSearchAttributes(input), ...tagAttributes(tags)],
    };
  }
  return {
    ...describeEndpointStep({ step: 'ephemeral', input: args[0] as EphemeralEndpointInput }),
    ...(tags?.length ? { typedSearchAttributes: tagAttributes(tags) } : {}),
  };
}

/** The id of the run a schedule starts for `at` (its scheduled time, not the jittered start). */
export function scheduledRunWorkflowId(scheduleId: string, at: Date): string {
  return `${scheduleId}-${at.toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
}

/**
 * Everything scheduleJob/Batch/EphemeralRun check, without sending: for callers (the CLI) that
 * must refuse bad input before they even connect.
 */
export function checkSchedule(kind: ScheduleKind, input: unknown, options: ScheduleOptions) {
  const parsed = parse(scheduleOptionsSchema, { ...options, input }, '');
  return { options: parsed, args: actionArgs(kind, parsed.input) };
}

async function createSchedule(
  client: Client,
  kind: ScheduleKind,
  input: unknown,
  raw: ScheduleOptions,
): Promise<ScheduleHandle> {
  const { options, args } = checkSchedule(kind, input, raw);
  return client.schedule.create({
    scheduleId: options.scheduleId,
    spec: toTemporalSpec(options.spec),
    action: {
      type: 'startWorkflow',
      workflowType: SCHEDULE_KINDS[kind],
      // The prefix of every run's id: Temporal appends the scheduled time (scheduledRunWorkflowId).
      workflowId: options.scheduleId,
      taskQueue: options.taskQueue,
      args,
      ...actionDescription(kind, args, options.tags),
      // Each run's task priority, as a job's, batch's or pipeline's started by hand. An ephemeral
      // run's endpoint is made by the run, which names it on the work it starts there.
      ...(kind === 'ephemeral' ? {} : workloadTaskPriority(args[0] as TaskPriorityOf)),
    },
    ...(options.policies ? { policies: options.policies } : {}),
    memo: { ...options.memo, durableServerlessKind: kind },
    state: { paused: options.paused, ...(options.note !== undefined ? { note: options.note } : {}) },
  });
}

/**
 * A schedule of job workflows, each run with `input` (as startJob takes it). A schedule id already
 * in use throws ScheduleAlreadyRunning.
 */
export function scheduleJob(
  client: Client,
  input: JobWorkflowInput,
  options: ScheduleOptions,
): Promise<ScheduleHandle> {
  return createSchedule(client, 'job', input, options);
}

/** A schedule of batches: each run is one batch of the same items (inline or a manifest). */
export function scheduleBatch(
  client: Client,
  input: BatchInput,
  options: ScheduleOptions,
): Promise<ScheduleHandle> {
  return createSchedule(client, 'batch', input, options);
}

/** A schedule of pipelines: each run is one pipeline of the same items through the same stages. */
export function schedulePipeline(
  client: Client,
  input: PipelineInput,
  options: ScheduleOptions,
): Promise<ScheduleHandle> {
  return createSchedule(client, 'pipeline', input, options);
}

/** A schedule of ephemeral-endpoint runs: each provisions an endpoint, runs the jobs, tears it down. */
export function scheduleEphemeralRun(
  client: Client,
  input: EphemeralEndpointInput,
  options: ScheduleOptions,
): Promise<ScheduleHandle> {
  return createSchedule(client, 'ephemeral', input, options);
}

const handleOf = (client: Client, scheduleId: string): ScheduleHandle =>
  client.schedule.getHandle(parse(scheduleIdSchema, scheduleId, 'scheduleId'));

const kindOf = (workflowType: string | undefined): ScheduleKind | undefined =>
  (Object.keys(SCHEDULE_KINDS) as ScheduleKind[]).find((kind) => SCHEDULE_KINDS[kind] === workflowType);

export interface ScheduleListing {
  scheduleId: string;
  kind: ScheduleKind;
  paused: boolean;
  note?: string;
  nextActionTimes: Date[];
  recentWorkflowIds: string[];
}

/**
 * The schedules of this library's workflows (others in the namespace are left out). Listing reads
 * Temporal's visibility store, so a schedule just created may take a moment to appear.
 */
export async function* listSchedules(
  client: Client,
  filter: { kind?: ScheduleKind } = {},
): AsyncIterable<ScheduleListing> {
  for await (const summary of client.schedule.list()) {
    const kind = kindOf(summary.action?.workflowType);
    if (!kind || (filter.kind && filter.kind !== kind)) continue;
    yield {
      scheduleId: summary.scheduleId,
      kind,
      paused: summary.state.paused,
      ...(summary.state.note ? { note: summary.state.note } : {}),
      nextActionTimes: summary.info.nextActionTimes,
      recentWorkflowIds: summary.info.recentActions.map((a) => a.action.workflow.workflowId),
    };
  }
}

export interface ScheduledRun {
  /** The time the run was due (its id carries it). */
  scheduledAt: Date;
  /** When the schedule started it (later by the jitter, or by the backfill's replay). */
  takenAt: Date;
  workflowId: string;
  runId: string;
  /** RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, CONTINUED_AS_NEW, or UNKNOWN. */
  status: string;
}

export interface ScheduleDetails {
  scheduleId: string;
  kind: ScheduleKind | undefined;
  workflowType: string;
  taskQueue: string;
  /** Every run's id is this, `-`, and its scheduled time (RFC 3339, UTC). */
  workflowIdPrefix: string;
  spec: ScheduleDescription['spec'];
  policies: ScheduleDescription['policies'];
  paused: boolean;
  note?: string;
  memo?: Record<string, unknown>;
  nextActionTimes: Date[];
  /** The latest runs (Temporal keeps the last 10), oldest first, each with its outcome now. */
  recentRuns: ScheduledRun[];
  runningWorkflowIds: string[];
  numActionsTaken: number;
  numActionsSkippedOverlap: number;
  numActionsMissedCatchupWindow: number;
  createdAt: Date;
}

/**
 * A schedule: its spec and policies, its next times, and its recent runs with their status read
 * from each workflow. The workflow input is left out: it may carry credentials (s3Config).
 */
export async function describeSchedule(
  client: Client,
  { scheduleId }: ScheduleTarget,
): Promise<ScheduleDetails> {
  const d = await handleOf(client, scheduleId).describe();
  const recentRuns = await Promise.all(
    d.info.recentActions.map(async ({ scheduledAt, takenAt, action }) => {
      const { workflowId, firstExecutionRunId } = action.workflow;
      const status = await client.workflow
        .getHandle(workflowId, firstExecutionRunId)
        .describe()
        .then((w) => w.status.name as string)
        .catch(() => 'UNKNOWN');
      return { scheduledAt, takenAt, workflowId, runId: firstExecutionRunId, status };
    }),
  );
  const memo = { ...d.memo };
  delete memo.durableServerlessKind;
  return {
    scheduleId: d.scheduleId,
    kind: kindOf(d.action.workflowType),
    workflowType: d.action.workflowType,
    taskQueue: d.action.taskQueue,
    workflowIdPrefix: d.action.workflowId,
    spec: d.spec,
    policies: d.policies,
    paused: d.state.paused,
    ...(d.state.note ? { note: d.state.note } : {}),
    ...(Object.keys(memo).length > 0 ? { memo } : {}),
    nextActionTimes: d.info.nextActionTimes,
    recentRuns,
    runningWorkflowIds: d.info.runningActions.map((a) => a.workflow.workflowId),
    numActionsTaken: d.info.numActionsTaken,
    numActionsSkippedOverlap: d.info.numActionsSkippedOverlap,
    numActionsMissedCatchupWindow: d.info.numActionsMissedCatchupWindow,
    createdAt: d.info.createdAt,
  };
}

const noteSchema = z.string({ error: 'must be a string' }).max(1000).optional();

/** Which schedule a call acts on: the id it was created with. */
export interface ScheduleTarget {
  scheduleId: string;
}

export interface PauseScheduleOptions extends ScheduleTarget {
  /** Shown with the schedule (describeSchedule, the UI): why it was paused or unpaused. */
  note?: string;
}

/** No scheduled runs until unpaused (trigger and backfill still run). */
export async function pauseSchedule(
  client: Client,
  { scheduleId, note }: PauseScheduleOptions,
): Promise<void> {
  const checked = parse(noteSchema, note, 'note');
  await handleOf(client, scheduleId).pause(checked);
}

export async function unpauseSchedule(
  client: Client,
  { scheduleId, note }: PauseScheduleOptions,
): Promise<void> {
  const checked = parse(noteSchema, note, 'note');
  await handleOf(client, scheduleId).unpause(checked);
}

export interface TriggerScheduleOptions extends ScheduleTarget {
  /** This run's overlap policy; default: the schedule's. */
  overlap?: OverlapPolicy;
}

/** This process's latest trigger of each schedule (by namespace and id), which the server may not show yet. */
const lastTriggers = new Map<string, number>();

/**
 * Starts a run now. Its overlap policy is the schedule's unless `overlap` overrides it (the SDK
 * alone would allow every overlap); a run still going with SKIP means this one does not start.
 * A trigger in the same second as the schedule's latest action waits for the next second: a run
 * is named by its second, and Temporal would start nothing (schedule-trigger-time.ts).
 */
export async function triggerSchedule(client: Client, options: TriggerScheduleOptions): Promise<void> {
  const { scheduleId } = options;
  const overlap = parse(overlapSchema.optional(), options.overlap, 'overlap');
  const handle = handleOf(client, scheduleId);
  const description = await handle.describe();
  const key = `${client.options.namespace}/${scheduleId}`;
  const notBefore = triggerNotBefore(latestActionAt(description.info.recentActions), lastTriggers.get(key));
  const wait = notBefore - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  await handle.trigger(overlap ?? description.policies.overlap);
  lastTriggers.set(key, Date.now());
}

export const backfillInputSchema = z
  .strictObject({
    start: instantSchema,
    end: instantSchema,
    /** Default: the schedule's policy. BUFFER_ALL or ALLOW_ALL to run every time in the window. */
    overlap: overlapSchema.optional(),
    /**
     * Start every time of the window, as Temporal's own backfill does: a time whose run has closed
     * runs again (one whose run is still open does not: its id refuses a second start).
     */
    rerun: z.boolean({ error: 'must be a boolean' }).default(false),
  })
  .refine((b) => b.start < b.end, { error: 'must be after start', path: ['end'] });
export type BackfillInput = z.input<typeof backfillInputSchema>;
/** The schedule, and the window to run. */
export type BackfillScheduleOptions = ScheduleTarget & BackfillInput;

/** What backfillSchedule checks, without sending. */
export const checkBackfill = (window: BackfillInput) => parse(backfillInputSchema, window, '');

export interface BackfillResult {
  /** The ranges sent to Temporal's backfill: the window less the times skipped (empty: none sent). */
  ranges: TimeRange[];
  /** The times in the window whose run already existed, left out (none with `rerun`). */
  skipped: Date[];
}

/**
 * Runs the times the spec gives between start and end (both included), as if the schedule had run
 * then. A time whose run already exists, open or closed, is left out (see backfill-window.ts,
 * which finds them in visibility, and its limits); `rerun: true` starts those again, as Temporal's
 * own backfill does once a run has closed (its id guards only while the run is open).
 */
export async function backfillSchedule(
  client: Client,
  { scheduleId, ...window }: BackfillScheduleOptions,
): Promise<BackfillResult> {
  const { start, end, overlap, rerun } = checkBackfill(window);
  const handle = handleOf(client, scheduleId);
  const skipped = rerun ? [] : await existingRunTimes(client, handle.scheduleId, { start, end });
  let ranges = uncoveredRanges({ start, end }, skipped);
  // Cut around runs that exist, the window leaves gaps between them; those the spec has no time
  // in are dropped, so a backfill over times that all ran sends nothing.
  if (skipped.length > 0)
    ranges = rangesWithTimes(ranges, await scheduleMatchingTimes(client, handle.scheduleId, { start, end }));
  if (ranges.length === 0) {
    // Nothing to send, but a schedule that is not there is still an error (ScheduleNotFoundError).
    await handle.describe();
    return { ranges, skipped };
  }
  await handle.backfill(ranges.map((range) => ({ ...range, ...(overlap ? { overlap } : {}) })));
  return { ranges, skipped };
}

export const scheduleUpdateSchema = z.strictObject({
  /** Replaces the whole spec. */
  spec: scheduleSpecSchema.optional(),
  /** Changes the policies given; the others stay. */
  policies: schedulePoliciesSchema.optional(),
  /** Replaces the workflow input, checked by the schedule's kind's validator. */
  input: z.unknown().optional(),
  note: noteSchema,
});
export type ScheduleUpdate = z.input<typeof scheduleUpdateSchema>;
/** The schedule, and what to change. */
export type UpdateScheduleOptions = ScheduleTarget & ScheduleUpdate;

/** What updateSchedule checks before reading the schedule (the input waits for its kind). */
export const checkScheduleUpdate = (changes: ScheduleUpdate) => parse(scheduleUpdateSchema, changes, '');

/**
 * Changes a schedule's spec, policies or input. The new input is checked for the schedule's kind
 * (read from the server) before the update is sent; runs already started are not touched.
 */
export async function updateSchedule(
  client: Client,
  { scheduleId, ...changes }: UpdateScheduleOptions,
): Promise<void> {
  const parsed = checkScheduleUpdate(changes);
  const handle = handleOf(client, scheduleId);
  await handle.update((previous) => {
    let action = previous.action;
    if (parsed.input !== undefined) {
      const kind = kindOf(previous.action.workflowType);
      if (!kind)
        throw new ValidationError(
          'scheduleId',
          `runs ${previous.action.workflowType}, not a job, batch, pipeline or ephemeral run`,
        );
      const args = actionArgs(kind, parsed.input);
      // The runs keep the tags the schedule was created with.
      const previousAttributes = previous.action.typedSearchAttributes;
      const tags = Array.isArray(previousAttributes)
        ? (previousAttributes.find((pair) => pair.key.name === tagsKey.name)?.value as string[] | undefined)
        : previousAttributes?.get(tagsKey);
      action = { ...previous.action, args, ...actionDescription(kind, args, tags) };
    }
    return {
      ...previous,
      spec: parsed.spec ? toTemporalSpec(parsed.spec) : previous.spec,
      policies: { ...previous.policies, ...parsed.policies },
      action,
      state: {
        ...previous.state,
        ...(parsed.note !== undefined ? { note: parsed.note } : {}),
      },
    };
  });
}

/** Deletes the schedule; runs it started carry on. */
export async function deleteSchedule(client: Client, { scheduleId }: ScheduleTarget): Promise<void> {
  await handleOf(client, scheduleId).delete();
}
