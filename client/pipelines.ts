/**
 * The facade of the pipeline workflow: start, await, watch, steer and read pipelines.
 *
 * The input is checked here before anything starts (parsePipelineInput, and every inline item as
 * a job request): a bad field throws ValidationError naming it. A pipeline's result lines, one per
 * piece, are JSONL in the batch store; pass the worker's store (its RESULT_STORE_URL or
 * RESULT_STORE_DIR) as `store` to read them.
 */
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type SearchAttributePair } from '@temporalio/common';
import type { z } from 'zod';
import { ValidationError } from '../api/errors';
import { jobRequestBody } from '../api/jobs';
import type { JobRequestInput } from '../api/schemas/job';
import type { BatchResultLine } from '../contracts/batch-summary';
import { type PipelineInput, parsePipelineInput, stageConcurrencyIssue } from '../contracts/pipeline-input';
import {
  PIPELINE_FAILURE,
  type PipelineProgress,
  type PipelineResultLine,
  type PipelineSummary,
  pipelineResultsKey,
  stageKeyOf,
  stageLineKey,
} from '../contracts/pipeline-types';
import { tagAttributes } from '../contracts/tags';
import { workloadTaskPriority } from '../contracts/task-priority';
import {
  pausePipelineSignal,
  pipelineProgressQuery,
  pipelineSummaryQuery,
  resumePipelineSignal,
  setPipelineConcurrencyUpdate,
} from '../workflows/pipeline/pipeline-definitions';
import type { PipelineRunInput } from '../workflows/pipeline/pipeline-run';
import { endpointIdKey } from '../workflows/shared/search-attributes';
import { type BatchStoreOption, MAX_BATCH_INPUT_BYTES, startBatchOptionsSchema, storeOf } from './batches';
import { checked } from './checked';
import { describePipeline } from './workflow-descriptions';
import { waitForResult } from './workflow-result';
import { startOnce } from './workflow-start';
import { startInputOf, workflowHandleOf } from './workflow-target';

export { definePipelineTransform, type PipelineTransform, type TransformPiece } from '../activities/pipeline';
export type { PipelineInput, PipelineStageInput } from '../contracts/pipeline-input';
export type {
  PipelineProgress,
  PipelineResultLine,
  PipelineStageProgress,
  PipelineSummary,
} from '../contracts/pipeline-types';
export { PIPELINE_FAILURE } from '../contracts/pipeline-types';

/** The pipeline workflow as a caller sees it: a PipelineInput in, its summary out. */
export type PipelineWorkflow = (input: PipelineInput) => Promise<PipelineSummary>;
export type PipelineHandle = WorkflowHandle<PipelineWorkflow>;

/** As startBatch's: the workflow id, the task queue (default: the library's) and tags. */
export const startPipelineOptionsSchema = startBatchOptionsSchema;
export type StartPipelineOptions = z.input<typeof startPipelineOptionsSchema>;

/** Everything the workflow would refuse, refused here first. */
export function validatePipelineInput(input: PipelineInput): void {
  const parsed = parsePipelineInput(input);
  if (!parsed.ok) throw new ValidationError(parsed.field, parsed.rule);
  const items = (input as { items: { inline?: JobRequestInput[] } }).items;
  if (!items.inline) return;
  items.inline.forEach((request, k) => {
    try {
      jobRequestBody(request, 'run');
    } catch (error) {
      if (error instanceof ValidationError)
        throw new ValidationError(`items.inline.${k}.${error.field}`.replace(/\.$/, ''), error.rule);
      throw error;
    }
  });
  const bytes = Buffer.byteLength(JSON.stringify(input));
  if (bytes > MAX_BATCH_INPUT_BYTES)
    throw new ValidationError(
      'items.inline',
      `the pipeline input is ${bytes} bytes; a Temporal payload holds at most ${MAX_BATCH_INPUT_BYTES}: ` +
        'write the items to a manifest (writeBatchManifest) and pass { manifest: { key } }',
    );
}

/** ServerlessEndpointId: the first stage's endpoint (its route's first), as a batch's is its own. */
export function pipelineSearchAttributes(input: PipelineInput): SearchAttributePair[] {
  const parsed = parsePipelineInput(input);
  const first = parsed.ok ? parsed.value.stages[0]?.endpointId : undefined;
  return first === undefined ? [] : [{ key: endpointIdKey, value: first }];
}

/** Starts a pipeline, or returns the one already started with this workflow id. */
export async function startPipeline(
  client: Client,
  input: PipelineInput,
  options: StartPipelineOptions,
): Promise<PipelineHandle> {
  validatePipelineInput(input);
  const { workflowId, taskQueue, tags } = checked(startPipelineOptionsSchema, options, 'options');
  return startOnce<PipelineWorkflow>(client, 'serverlessPipeline', {
    taskQueue,
    workflowId,
    args: [input],
    ...describePipeline(input),
    typedSearchAttributes: [...pipelineSearchAttributes(input), ...tagAttributes(tags)],
    // The first stage's endpoint as its task fairness key (contracts/task-priority.ts).
    ...workloadTaskPriority(input),
  });
}

/** Which pipeline a call acts on. */
export interface PipelineTarget {
  /** The pipeline: its workflow id, or the handle startPipeline returned. */
  pipeline: string | PipelineHandle;
}

const handleOf = (client: Client, pipeline: string | PipelineHandle): PipelineHandle =>
  workflowHandleOf<PipelineWorkflow>(client, pipeline, 'pipeline');

/**
 * The pipeline's summary. A pipeline stopped by a tolerance or its budget throws
 * WorkflowFailedError; its summary is in `pipelineFailureOf(error).summary`.
 */
export function awaitPipeline(client: Client, { pipeline }: PipelineTarget): Promise<PipelineSummary> {
  return waitForResult(handleOf(client, pipeline));
}

export interface PipelineFailure {
  type: string;
  message: string;
  /** PipelineToleranceExceeded, PipelineBudgetExceeded: the summary a finished pipeline returns. */
  summary?: PipelineSummary;
}

/** The typed failure inside what awaitPipeline threw (undefined for anything else). */
export function pipelineFailureOf(error: unknown): PipelineFailure | undefined {
  const cause = error instanceof WorkflowFailedError ? error.cause : error;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const summary =
    cause.type === PIPELINE_FAILURE.toleranceExceeded || cause.type === PIPELINE_FAILURE.budgetExceeded
      ? (cause.details?.[0] as PipelineSummary | undefined)
      : undefined;
  return { type: cause.type ?? 'Error', message: cause.message, ...(summary ? { summary } : {}) };
}

/** Each stage's counts, window, buffer and cost as they stand. */
export function getPipelineProgress(client: Client, { pipeline }: PipelineTarget): Promise<PipelineProgress> {
  return handleOf(client, pipeline).query(pipelineProgressQuery);
}

/** No piece enters any stage until resumePipeline; jobs in flight carry on. */
export async function pausePipeline(client: Client, { pipeline }: PipelineTarget): Promise<void> {
  await handleOf(client, pipeline).signal(pausePipelineSignal);
}

export async function resumePipeline(client: Client, { pipeline }: PipelineTarget): Promise<void> {
  await handleOf(client, pipeline).signal(resumePipelineSignal);
}

export interface SetPipelineConcurrencyOptions extends PipelineTarget {
  /** The stage, by name. */
  stage: string;
  /** Its jobs in flight at most from now on (the stages' together at most 10,000). */
  maxConcurrency: number;
}

/** Sets one stage's window (its jobs in flight at most); returns the previous value. */
export async function setPipelineConcurrency(
  client: Client,
  { pipeline, stage, maxConcurrency }: SetPipelineConcurrencyOptions,
): Promise<number> {
  const issue = stageConcurrencyIssue({ stage, maxConcurrency });
  if (issue) throw new ValidationError(issue.field, issue.rule);
  return handleOf(client, pipeline).executeUpdate(setPipelineConcurrencyUpdate, {
    args: [{ stage, maxConcurrency }],
  });
}

/** Cancels the pipeline: every stage's jobs in flight are cancelled, then it ends as cancelled. */
export async function cancelPipeline(client: Client, { pipeline }: PipelineTarget): Promise<void> {
  await handleOf(client, pipeline).cancel();
}

/** Which finished pipeline to redrive, and what to change for the redrive. */
export interface RedrivePipelineTarget extends PipelineTarget {
  /** Options to change for the redrive: the budget, the page size. */
  changes?: Partial<Pick<PipelineInput, 'budget' | 'pageSize'>>;
}

/**
 * A new pipeline of the pieces of a finished one that did not complete (failed, or never started
 * when it stopped), with the same stages. Each piece starts at the stage it ended at, its input
 * made again from the previous stage's output in the store (or its transform run again), never
 * from the beginning; its result line names its origin item and part as before.
 */
export async function redrivePipeline(
  client: Client,
  { pipeline, changes = {} }: RedrivePipelineTarget,
  options: StartPipelineOptions,
): Promise<PipelineHandle> {
  const handle = handleOf(client, pipeline);
  const summary = await finishedPipelineSummary(client, { pipeline: handle });
  // A pipeline that stopped may have items never read (no line): its redrive starts them too.
  if (summary.ended.failed + summary.ended.notStarted === 0 && summary.stopped === undefined)
    throw new ValidationError('pipeline', 'has no failed or unstarted pieces to redrive');
  // A run continued as new starts with what it carried: the caller's input is the rest.
  const { carried: _carried, ...original } = await startInputOf<PipelineRunInput>(handle);
  return startPipeline(
    client,
    { ...original, ...changes, items: { redrive: { key: summary.results.key } } },
    options,
  );
}

/** The summary of a finished pipeline, whether it succeeded, stopped or was cancelled. */
export async function finishedPipelineSummary(
  client: Client,
  { pipeline }: PipelineTarget,
): Promise<PipelineSummary> {
  try {
    return await awaitPipeline(client, { pipeline });
  } catch (error) {
    const summary = pipelineFailureOf(error)?.summary;
    if (summary) return summary;
    if (error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure)
      return handleOf(client, pipeline).query(pipelineSummaryQuery);
    throw error;
  }
}

export interface ReadPipelineResultsOptions {
  /** The pipeline: its summary, or its workflow id or handle (read once it has finished). */
  pipeline: string | PipelineHandle | PipelineSummary;
  /** Where the pipeline's worker wrote them: its RESULT_STORE_DIR, or a batch store. */
  store: BatchStoreOption;
  /** `'failures'`: only the pieces that did not complete (failed or not started). */
  only?: 'failures';
}

/**
 * The result lines of a pipeline, one per piece (not in item order): where it came from (origin
 * item and part), the stage it ended at and how; a completed piece with its last stage's output.
 */
export async function* readPipelineResults(
  client: Client,
  options: ReadPipelineResultsOptions,
): AsyncIterable<PipelineResultLine> {
  const { pipeline } = options;
  const summary =
    typeof pipeline === 'object' && 'results' in pipeline
      ? pipeline
      : await finishedPipelineSummary(client, { pipeline });
  const store = await storeOf(options.store);
  if (summary.results.store !== undefined && summary.results.store !== store.name)
    throw new ValidationError(
      'store',
      `the pipeline's results are in the store ${summary.results.store}, not in ${store.name}: read them with the worker's store`,
    );
  const { key } = summary.results;
  const last = summary.stages[summary.stages.length - 1]?.name as string;
  const seen = new Set<number>();
  for (const part of await store.list(pipelineResultsKey(key))) {
    const count = await store.countLines(part);
    const lines = await store.readLines(
      part,
      Array.from({ length: count }, (_, k) => k),
    );
    for (const text of lines) {
      const line = JSON.parse(text) as PipelineResultLine;
      // A part written twice (an activity whose answer was lost, then done again) counts once.
      if (seen.has(line.seq)) continue;
      seen.add(line.seq);
      if (line.outcome === 'completed' && options.only === 'failures') continue;
      if (line.outcome !== 'completed') {
        yield line;
        continue;
      }
      const [result] = await store.readLines(stageLineKey(stageKeyOf(key, last), line.seq), [0]);
      const ran = JSON.parse(result as string) as BatchResultLine;
      yield {
        ...line,
        ...(ran.output === undefined ? {} : { output: ran.output }),
        ...(ran.outputRef === undefined ? {} : { outputRef: ran.outputRef }),
      };
    }
  }
}
