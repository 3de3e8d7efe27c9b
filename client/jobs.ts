/**
 * The facade of the job workflow: start, await, query, cancel and find jobs.
 *
 * The input is parsed here before anything is started: a bad one throws ValidationError naming
 * the field, and nothing reaches Temporal or the service. The workflow id is the caller's: the
 * same id twice is one job (a running one is joined; a finished one is returned, not re-run).
 */
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, type SearchAttributePair } from '@temporalio/common';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { jobRequestBody } from '../api/jobs';
import type { JobStatusValue } from '../api/schemas/job';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import type { JobFailureDetails } from '../contracts/failures';
import { type JobWorkflowInput, jobTtlSchema, parseJobWorkflowInput } from '../contracts/job-input';
import type { JobResult, JobSnapshot } from '../contracts/job-snapshot';
import { waitHeartbeatSchema } from '../contracts/job-types';
import { tagAttributes, tagSchema, tagsSchema } from '../contracts/tags';
import { workloadTaskPriority } from '../contracts/task-priority';
import { type ResultStore, resultRefSchema } from '../stores/result-store';
import { openStores, storeLocationFromUrl } from '../stores/store-location';
import type { serverlessJob } from '../workflows/job/job';
import { extendJobTtlSignal, jobSnapshotQuery } from '../workflows/job/job-definitions';
import { endpointIdKey, jobIdKey, jobStatusKey, tagsKey } from '../workflows/shared/search-attributes';
import { checked } from './checked';
import { DEFAULT_TASK_QUEUE } from './endpoints';
import { queryLiteral, runningClause, startedByClause, tagClause } from './visibility-queries';
import { describeJob } from './workflow-descriptions';
import { waitForResult } from './workflow-result';
import { startOnce } from './workflow-start';
import { type WorkflowTarget, workflowHandleOf, workflowIdOf } from './workflow-target';

export type { JobFailureDetails, JobFailureType } from '../contracts/failures';
export { JOB_FAILURE } from '../contracts/failures';
export type { JobWorkflowInput } from '../contracts/job-input';
export type { JobResult, JobSnapshot } from '../contracts/job-snapshot';

export type JobHandle = WorkflowHandle<typeof serverlessJob>;

/**
 * Temporal refuses payloads over 2 MB by default; the input must fit in one, with room for the
 * envelope. Larger job inputs belong in storage the handler reads (s3Config, a URL in the input).
 */
export const MAX_JOB_INPUT_BYTES = 1_900_000;

export const startJobOptionsSchema = z.strictObject({
  /** Your id for this job: starting the same id again returns the same job. */
  workflowId: z.string({ error: 'is required' }).min(1, { error: 'must not be empty' }).max(1000),
  taskQueue: z.string().min(1, { error: 'must not be empty' }).default(DEFAULT_TASK_QUEUE),
  /**
   * `never` (default): an id is one job forever, even after it failed. `after-failure`: a failed,
   * cancelled or terminated job of this id may be started again (a completed one never is).
   */
  idReuse: z.enum(['never', 'after-failure']).default('never'),
  /** A few short strings of yours, to select runs by (`job list --tag`, bulk actions, the UI). */
  tags: tagsSchema.optional(),
});

export type StartJobOptions = z.input<typeof startJobOptionsSchema>;

/** Everything the workflow would refuse, refused here first. */
/**
 * The search attributes a job starts with (startJob, and a schedule's job runs): its endpoint (a
 * route's first), so the workflow writes no event of its own for it. None when the job's
 * `searchAttributes` option is off (a namespace without them registered).
 */
export function jobSearchAttributes(input: JobWorkflowInput): SearchAttributePair[] {
  const parsed = parseJobWorkflowInput(input);
  if (!parsed.ok || !parsed.value.options.searchAttributes) return [];
  return [{ key: endpointIdKey, value: parsed.value.options.endpointId }];
}

export function validateJobInput(input: JobWorkflowInput): void {
  const parsed = parseJobWorkflowInput(input);
  if (!parsed.ok) throw new ValidationError(parsed.field, parsed.rule);
  // The client's own rules for the request (payload size per target included); a requestRef's
  // line was checked when its manifest was staged.
  const { request } = parsed.value;
  try {
    if (request) jobRequestBody(request, parsed.value.options.mode === 'runsync' ? 'runSync' : 'run');
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ValidationError(`request.${error.field}`.replace(/\.$/, ''), error.rule);
    throw error;
  }
  const bytes = Buffer.byteLength(JSON.stringify(input));
  if (bytes > MAX_JOB_INPUT_BYTES) {
    throw new ValidationError(
      'request',
      `the workflow input is ${bytes} bytes; a Temporal payload holds at most ${MAX_JOB_INPUT_BYTES}: ` +
        'pass large inputs by reference (s3Config, a URL in the input)',
    );
  }
}

/**
 * Starts the job workflow, or returns the one already started with this workflow id (running or
 * finished): a retried start never submits a second job.
 */
export async function startJob(
  client: Client,
  input: JobWorkflowInput,
  options: StartJobOptions,
): Promise<JobHandle> {
  validateJobInput(input);
  const { workflowId, taskQueue, idReuse, tags } = checked(startJobOptionsSchema, options, 'options');
  return startOnce<typeof serverlessJob>(client, 'serverlessJob', {
    taskQueue,
    workflowId,
    // The input as given: the workflow parses it again, and the request must reach the service
    // unchanged (filled-in policy defaults would override the endpoint's own settings).
    args: [input],
    ...describeJob(input),
    typedSearchAttributes: [...jobSearchAttributes(input), ...tagAttributes(tags)],
    ...workloadTaskPriority(input),
    // A failed job's id may run again unless the caller says never.
    workflowIdReusePolicy: idReuse === 'never' ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY',
  });
}

export const awaitJobOptionsSchema = z.strictObject({
  /**
   * Replace an `outputRef` by the output itself, read from this store (or the local store of the
   * worker's RESULT_STORE_DIR, given as a path). Without it, a large output stays a reference.
   */
  store: z
    .union([z.string().min(1, { error: 'must not be empty' }), z.custom<ResultStore>(isResultStore)], {
      error: "must be a result store or the worker's RESULT_STORE_DIR",
    })
    .optional(),
});

function isResultStore(value: unknown): value is ResultStore {
  return typeof (value as Partial<ResultStore> | null)?.get === 'function';
}

/** Where a job's large output is read from (awaitJob, runJob). */
export type JobResultStoreOptions = z.input<typeof awaitJobOptionsSchema>;

export interface AwaitJobOptions extends JobResultStoreOptions {
  /** The job: its workflow id, or the handle startJob returned. */
  job: string | JobHandle;
}

/** The result of a job; a failed job throws WorkflowFailedError (see jobFailureOf). */
export async function awaitJob(client: Client, options: AwaitJobOptions): Promise<JobResult> {
  const { job, ...resultOptions } = options;
  const handle = workflowHandleOf<typeof serverlessJob>(client, job, 'job');
  const { store: given } = checked(awaitJobOptionsSchema, resultOptions);
  const result = await waitForResult(handle);
  if (!result.outputRef || given === undefined) return result;
  const store =
    typeof given === 'string' ? (await openStores(storeLocationFromUrl(given, 'store'))).resultStore : given;
  const { outputRef, ...rest } = result;
  return { ...rest, output: await store.get(resultRefSchema.parse(outputRef)) };
}

/** Starts a job (or joins the one of this id) and waits for its result. */
export async function runJob(
  client: Client,
  input: JobWorkflowInput,
  options: StartJobOptions & JobResultStoreOptions,
): Promise<JobResult> {
  const { store, ...start } = options;
  const handle = await startJob(client, input, start);
  return awaitJob(client, { job: handle, ...(store === undefined ? {} : { store }) });
}

/** A job workflow's failure, typed: `type` is one of JOB_FAILURE or a service error kind. */
export interface JobFailure {
  type: string;
  message: string;
  details?: JobFailureDetails;
}

/** The typed failure inside what awaitJob threw, or undefined for anything else (e.g. a cancellation). */
export function jobFailureOf(error: unknown): JobFailure | undefined {
  const cause = error instanceof WorkflowFailedError ? error.cause : error;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const details = cause.details?.[0] as JobFailureDetails | undefined;
  return { type: cause.type ?? 'Error', message: cause.message, ...(details ? { details } : {}) };
}

export interface LiveJobSnapshot extends JobSnapshot {
  /**
   * From the wait activity's latest look: status polls so far, the status when it is not the one
   * the workflow recorded (a job that started: the workflow records only its end unless asked to
   * record its start), and the freshest progress update.
   */
  live?: { polls: number; status?: JobStatusValue; progress?: unknown };
}

export interface GetJobSnapshotOptions extends WorkflowTarget {
  /** Add the status and progress the wait activity has seen since the workflow's last change. */
  live?: boolean;
}

/**
 * The workflow's snapshot. With `live`, the status and progress the wait activity has seen since
 * (the workflow itself records a job's end, and its start only with `recordStart`, which keeps its
 * history short).
 */
export async function getJobSnapshot(
  client: Client,
  options: GetJobSnapshotOptions,
): Promise<LiveJobSnapshot> {
  const workflowId = workflowIdOf(options.workflowId);
  const handle = client.workflow.getHandle<typeof serverlessJob>(workflowId);
  const snapshot: LiveJobSnapshot = await handle.query(jobSnapshotQuery);
  if (!options.live) return snapshot;
  const description = await handle.describe();
  const converter = client.workflow.options.loadedDataConverter.payloadConverter;
  for (const activity of description.raw.pendingActivities ?? []) {
    if (activity.activityType?.name !== 'waitForJobChange') continue;
    // Between looks the wait's news is in its last JobUnchanged failure; inside a fast inline loop,
    // in its heartbeat. Either is the same shape.
    const payloads = [
      activity.lastFailure?.applicationFailureInfo?.details?.payloads?.[0],
      activity.heartbeatDetails?.payloads?.[0],
    ];
    for (const payload of payloads) {
      if (!payload) continue;
      const beat = waitHeartbeatSchema.safeParse(converter.fromPayload(payload));
      if (beat.success && beat.data.jobId === snapshot.jobId) {
        snapshot.live = {
          polls: beat.data.polls,
          ...(beat.data.status !== undefined ? { status: beat.data.status } : {}),
          ...(beat.data.progress !== undefined ? { progress: beat.data.progress } : {}),
        };
        break;
      }
    }
  }
  return snapshot;
}

/** Cancels the workflow; it cancels the remote job first, then ends as cancelled. */
export async function cancelJob(client: Client, { workflowId }: WorkflowTarget): Promise<void> {
  const id = workflowIdOf(workflowId);
  await client.workflow.getHandle(id).cancel();
}

export const extendJobTtlOptionsSchema = z.strictObject({
  workflowId: z.string({ error: 'is required' }).min(1, { error: 'must not be empty' }),
  /** The job's new ttl, counted from its submission (10 seconds to 7 days). */
  ttl: jobTtlSchema,
});

export type ExtendJobTtlOptions = z.input<typeof extendJobTtlOptionsSchema>;

/**
 * Asks the workflow to set the job's ttl (counted from submission) through /status?ttl=; returns
 * that ttl in ms.
 */
export async function extendJobTtl(client: Client, options: ExtendJobTtlOptions): Promise<number> {
  const { workflowId, ttl } = checked(extendJobTtlOptionsSchema, options);
  await client.workflow.getHandle(workflowId).signal(extendJobTtlSignal, { ttl });
  return ttl;
}

export const jobFilterSchema = z.strictObject({
  endpointId: pathSegmentSchema.optional(),
  jobId: pathSegmentSchema.optional(),
  /** The remote job's last known status (IN_QUEUE, COMPLETED, ...). */
  status: z
    .string()
    .regex(/^[A-Z_]+$/, { error: 'must be a job status such as IN_PROGRESS' })
    .optional(),
  /** Only running (or only closed) workflows. */
  running: z.boolean().optional(),
  /** Only those started with this tag. */
  tag: tagSchema.optional(),
  /** The workflow id of the batch (mode 'children'), automation or ephemeral run that started the jobs. */
  startedBy: z.string().min(1).optional(),
});

export type JobFilter = z.input<typeof jobFilterSchema>;

const literal = queryLiteral;

/** The visibility query for a filter (for `temporal workflow list --query` too). */
export function jobListQuery(filter: JobFilter = {}): string {
  const { endpointId, jobId, status, running, startedBy, tag } = checked(jobFilterSchema, filter, 'filter');
  const clauses = [`WorkflowType = "serverlessJob"`];
  if (endpointId !== undefined)
    clauses.push(`${endpointIdKey.name} = ${literal('filter.endpointId', endpointId)}`);
  if (jobId !== undefined) clauses.push(`${jobIdKey.name} = ${literal('filter.jobId', jobId)}`);
  if (status !== undefined) clauses.push(`${jobStatusKey.name} = ${literal('filter.status', status)}`);
  if (startedBy !== undefined) clauses.push(startedByClause(startedBy));
  if (tag !== undefined) clauses.push(tagClause(tag));
  return [...clauses, ...runningClause(running)].join(' AND ');
}

export interface JobListing {
  workflowId: string;
  runId: string;
  /** The workflow's status (RUNNING, COMPLETED, FAILED, CANCELLED, ...). */
  workflowStatus: string;
  endpointId?: string;
  jobIds: string[];
  jobStatus?: string;
  /** The tags it was started with. */
  tags: string[];
  startTime: Date;
  closeTime?: Date;
}

/** Job workflows matching the filter, newest first (visibility is eventually consistent). */
export async function* listJobs(client: Client, filter: JobFilter = {}): AsyncIterable<JobListing> {
  for await (const info of client.workflow.list({ query: jobListQuery(filter) })) {
    const attributes = info.typedSearchAttributes;
    const endpointId = attributes.get(endpointIdKey);
    const jobStatus = attributes.get(jobStatusKey);
    yield {
      workflowId: info.workflowId,
      runId: info.runId,
      workflowStatus: info.status.name,
      ...(endpointId !== undefined ? { endpointId } : {}),
      jobIds: attributes.get(jobIdKey) ?? [],
      ...(jobStatus !== undefined ? { jobStatus } : {}),
      tags: attributes.get(tagsKey) ?? [],
      startTime: info.startTime,
      ...(info.closeTime ? { closeTime: info.closeTime } : {}),
    };
  }
}

export interface FindJobOptions {
  /** The remote job's id (the service's). */
  jobId: string;
}

/** The workflow that owns (or owned) a remote job id. */
export async function findJobByJobId(
  client: Client,
  { jobId }: FindJobOptions,
): Promise<JobListing | undefined> {
  for await (const listing of listJobs(client, { jobId })) return listing;
  return undefined;
}
