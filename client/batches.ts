/**
 * The facade of the batch workflow: start, await, watch, steer and read batches.
 *
 * The input is checked here before anything starts: a bad field (an inline item's too) throws
 * ValidationError naming it. A batch's results are JSONL lines in the batch store; pass the
 * worker's store (its RESULT_STORE_URL or RESULT_STORE_DIR) as `store` to read them.
 */
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type SearchAttributePair } from '@temporalio/common';
import { z } from 'zod';
import { ConfigError, ValidationError } from '../api/errors';
import { jobRequestBody } from '../api/jobs';
import type { JobRequestInput } from '../api/schemas/job';
import {
  type BatchInput,
  concurrencyChangeIssue,
  type ParsedBatchInput,
  parseBatchInput,
  storeKeySchema,
} from '../contracts/batch-input';
import type {
  BatchProgress,
  BatchResultLine,
  BatchResultsRef,
  BatchSummary,
} from '../contracts/batch-summary';
import { BATCH_FAILURE } from '../contracts/failures';
import { tagAttributes, tagsSchema } from '../contracts/tags';
import { workloadTaskPriority } from '../contracts/task-priority';
import type { BatchStore } from '../stores/batch-store';
import { openStores, storeLocationFromUrl } from '../stores/store-location';
import {
  batchProgressQuery,
  batchSummaryQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../workflows/batch/batch-definitions';
import { endpointIdKey } from '../workflows/shared/search-attributes';
import { checked } from './checked';
import { DEFAULT_TASK_QUEUE } from './endpoints';
import { describeBatch } from './workflow-descriptions';
import { waitForResult } from './workflow-result';
import { startOnce } from './workflow-start';
import { startInputOf, workflowHandleOf } from './workflow-target';

export type { BatchInput } from '../contracts/batch-input';
export type {
  BatchCounts,
  BatchProgress,
  BatchResultLine,
  BatchResultsRef,
  BatchSummary,
} from '../contracts/batch-summary';
export { BATCH_FAILURE } from '../contracts/failures';

/**
 * The batch workflow as a caller sees it: a BatchInput in, its summary out (what it carries through
 * continue-as-new is its own).
 */
export type BatchWorkflow = (input: BatchInput) => Promise<BatchSummary>;
export type BatchHandle = WorkflowHandle<BatchWorkflow>;

/** A Temporal payload holds 2 MB; larger item lists go in a manifest (writeBatchManifest). */
export const MAX_BATCH_INPUT_BYTES = 1_900_000;

export const startBatchOptionsSchema = z.strictObject({
  workflowId: z.string({ error: 'is required' }).min(1, { error: 'must not be empty' }).max(1000),
  taskQueue: z.string().min(1, { error: 'must not be empty' }).default(DEFAULT_TASK_QUEUE),
  /** A few short strings of yours, to select runs by (`batch list --tag`, bulk actions, the UI). */
  tags: tagsSchema.optional(),
});
export type StartBatchOptions = z.input<typeof startBatchOptionsSchema>;

/** Everything the workflow would refuse, refused here first. */
export function validateBatchInput(input: BatchInput): void {
  checkedBatchInput(input);
}

/** The input parsed as the workflow will parse it, or the ValidationError it would fail with. */
function checkedBatchInput(input: BatchInput): ParsedBatchInput {
  const parsed = parseBatchInput(input);
  if (!parsed.ok) throw new ValidationError(parsed.field, parsed.rule);
  const items = (input as { items: { inline?: JobRequestInput[] } }).items;
  if (items.inline) {
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
    if (bytes > MAX_BATCH_INPUT_BYTES) {
      throw new ValidationError(
        'items.inline',
        `the batch input is ${bytes} bytes; a Temporal payload holds at most ${MAX_BATCH_INPUT_BYTES}: ` +
          'write the items to a manifest (writeBatchManifest) and pass { manifest: { key } }',
      );
    }
  }
  return parsed.value;
}

/**
 * The search attributes a batch starts with (startBatch, and a schedule's batch runs), so `cost
 * endpoint` and visibility queries find the batches of an endpoint: its endpoint, or its route's
 * first (in the order work goes to the route's endpoints, cheapest first when priced).
 */
export function batchSearchAttributes(input: BatchInput): SearchAttributePair[] {
  return [{ key: endpointIdKey, value: checkedBatchInput(input).endpointId }];
}

/** Starts a batch, or returns the one already started with this workflow id. */
export async function startBatch(
  client: Client,
  input: BatchInput,
  options: StartBatchOptions,
): Promise<BatchHandle> {
  validateBatchInput(input);
  const { workflowId, taskQueue, tags } = checked(startBatchOptionsSchema, options, 'options');
  return startOnce<BatchWorkflow>(client, 'serverlessBatch', {
    taskQueue,
    workflowId,
    args: [input],
    ...describeBatch(input),
    typedSearchAttributes: [...batchSearchAttributes(input), ...tagAttributes(tags)],
    ...workloadTaskPriority(input),
  });
}

/** Which batch a call acts on. */
export interface BatchTarget {
  /** The batch: its workflow id, or the handle startBatch returned. */
  batch: string | BatchHandle;
}

const handleOf = (client: Client, batch: string | BatchHandle): BatchHandle =>
  workflowHandleOf<BatchWorkflow>(client, batch, 'batch');

/**
 * The batch's summary. A batch over its failure tolerance throws WorkflowFailedError; its summary
 * is in `batchFailureOf(error).summary`.
 */
export async function awaitBatch(client: Client, { batch }: BatchTarget): Promise<BatchSummary> {
  return waitForResult(handleOf(client, batch));
}

export interface BatchFailure {
  type: string;
  message: string;
  /** BatchToleranceExceeded, BatchBudgetExceeded: the same summary a successful batch returns. */
  summary?: BatchSummary;
}

/** The typed failure inside what awaitBatch threw (undefined for anything else, e.g. a cancellation). */
export function batchFailureOf(error: unknown): BatchFailure | undefined {
  const cause = error instanceof WorkflowFailedError ? error.cause : error;
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const summary =
    cause.type === BATCH_FAILURE.toleranceExceeded || cause.type === BATCH_FAILURE.budgetExceeded
      ? (cause.details?.[0] as BatchSummary | undefined)
      : undefined;
  return { type: cause.type ?? 'Error', message: cause.message, ...(summary ? { summary } : {}) };
}

export function getBatchProgress(client: Client, { batch }: BatchTarget): Promise<BatchProgress> {
  return handleOf(client, batch).query(batchProgressQuery);
}

/** Cancels the batch: every job in flight is cancelled at the service, then it ends as cancelled. */
export async function cancelBatch(client: Client, { batch }: BatchTarget): Promise<void> {
  await handleOf(client, batch).cancel();
}

/** No new submissions until resumeBatch; jobs in flight carry on. */
export async function pauseBatch(client: Client, { batch }: BatchTarget): Promise<void> {
  await handleOf(client, batch).signal(pauseBatchSignal);
}

export async function resumeBatch(client: Client, { batch }: BatchTarget): Promise<void> {
  await handleOf(client, batch).signal(resumeBatchSignal);
}

export interface SetBatchConcurrencyOptions extends BatchTarget {
  /** Jobs in flight at most from now on (1 to 10,000; 1,000 in mode 'children'). */
  maxConcurrency: number;
}

/** Sets how many jobs may be in flight; returns the previous value. */
export async function setBatchConcurrency(
  client: Client,
  { batch, maxConcurrency }: SetBatchConcurrencyOptions,
): Promise<number> {
  const issue = concurrencyChangeIssue(maxConcurrency);
  if (issue) throw new ValidationError('maxConcurrency', issue);
  return handleOf(client, batch).executeUpdate(setBatchConcurrencyUpdate, { args: [maxConcurrency] });
}

/** The summary of a finished batch, whether it succeeded or went over its tolerance or budget. */
export async function finishedSummary(client: Client, { batch }: BatchTarget): Promise<BatchSummary> {
  try {
    return await awaitBatch(client, { batch });
  } catch (error) {
    const summary = batchFailureOf(error)?.summary;
    if (summary) return summary;
    // Cancelled: its result is the cancellation, but its summary (counts, results) is still asked.
    if (error instanceof WorkflowFailedError && error.cause instanceof CancelledFailure)
      return handleOf(client, batch).query(batchSummaryQuery);
    throw error;
  }
}

export interface RedriveBatchOptions extends StartBatchOptions, BatchTarget {
  /** Options to change for the redrive (more retries, say). */
  changes?: Partial<Pick<BatchInput, 'job' | 'maxConcurrency' | 'failureTolerance' | 'pageSize'>>;
}

/**
 * A new batch of the items of a finished one that did not complete (failed, or never started when
 * it stopped), with the same endpoint and options. Its results number them from 0, in their order.
 */
export async function redriveBatch(client: Client, options: RedriveBatchOptions): Promise<BatchHandle> {
  const { batch, changes = {}, ...startOptions } = options;
  const handle = handleOf(client, batch);
  const summary = await finishedSummary(client, { batch: handle });
  if (summary.counts.completed === summary.total)
    throw new ValidationError('batch', 'has no failed items to redrive');
  const original = await startInputOf<BatchInput>(handle);
  return startBatch(
    client,
    { ...original, ...changes, items: { redrive: { key: summary.results.key } } },
    startOptions,
  );
}

const isResultsSource = (batch: ReadBatchResultsOptions['batch']): batch is BatchSummary | BatchResultsRef =>
  typeof batch === 'object' && batch !== null && !('workflowId' in batch);

async function resultsRefOf(
  client: Client,
  batch: ReadBatchResultsOptions['batch'],
): Promise<BatchResultsRef> {
  if (!isResultsSource(batch)) return (await finishedSummary(client, { batch })).results;
  return 'results' in batch ? batch.results : batch;
}

/**
 * The worker's store: its RESULT_STORE_URL or RESULT_STORE_DIR (a directory, file:///dir or
 * s3://bucket/prefix, with RESULT_STORE_ENDPOINT, _REGION and _PATH_STYLE read from this
 * process's environment as the worker reads them), or a batch store.
 */
export type BatchStoreOption = string | BatchStore;

export async function storeOf(store: BatchStoreOption): Promise<BatchStore> {
  if (typeof store !== 'string') return store;
  try {
    return (await openStores(storeLocationFromUrl(store, 'store'))).batchStore;
  } catch (error) {
    if (error instanceof ConfigError) throw new ValidationError(error.variable, error.rule);
    throw error;
  }
}

export interface ReadBatchResultsOptions {
  /**
   * The batch: its summary (or the `results` of one), or its workflow id or handle, whose summary
   * is read once it has finished (as finishedSummary does).
   */
  batch: string | BatchHandle | BatchSummary | BatchResultsRef;
  /** Where the batch's worker wrote them: its RESULT_STORE_DIR, or a batch store. */
  store: BatchStoreOption;
  /** `'failures'`: only the items that did not complete. */
  only?: 'failures';
}

/**
 * The result lines of a batch, one per item (with its index; not in item order). `only: 'failures'`
 * reads the items that did not complete.
 */
export async function* readBatchResults(
  client: Client,
  options: ReadBatchResultsOptions,
): AsyncIterable<BatchResultLine> {
  const ref = await resultsRefOf(client, options.batch);
  const store = await storeOf(options.store);
  if (ref.store !== store.name)
    throw new ValidationError(
      'store',
      `the batch's results are in the store ${ref.store}, not in ${store.name}: read them with the worker's store`,
    );
  const seen = new Set<number>();
  const folders = options.only === 'failures' ? ['failures'] : ['results', 'failures'];
  for (const folder of folders) {
    for (const part of await store.list(`${ref.key}/${folder}`)) {
      const count = await store.countLines(part);
      for (let from = 0; from < count; from += 1_000) {
        const indexes = Array.from({ length: Math.min(1_000, count - from) }, (_, k) => from + k);
        for (const text of await store.readLines(part, indexes)) {
          const line = JSON.parse(text) as BatchResultLine;
          // A line written twice (an activity whose answer was lost, then done again) counts once.
          if (seen.has(line.index)) continue;
          seen.add(line.index);
          yield line;
        }
      }
    }
  }
}

export interface WriteBatchManifestOptions {
  /** Where the batch's worker reads it: its RESULT_STORE_DIR, or a batch store. */
  store: BatchStoreOption;
  /** The manifest's key in the store, for `items: { manifest: { key } }`. */
  key: string;
}

/** Writes job requests as a manifest under `key`, for `items: { manifest: { key } }`. */
export async function writeBatchManifest(
  requests: Iterable<JobRequestInput>,
  options: WriteBatchManifestOptions,
): Promise<{ key: string; count: number }> {
  const { store, key } = options;
  if (!storeKeySchema.safeParse(key).success)
    throw new ValidationError('key', 'must be a relative path of letters, digits, . _ - segments');
  const lines: string[] = [];
  let k = 0;
  for (const request of requests) {
    try {
      lines.push(jobRequestBody(request, 'run'));
    } catch (error) {
      if (error instanceof ValidationError)
        throw new ValidationError(`items.${k}.${error.field}`, error.rule);
      throw error;
    }
    k += 1;
  }
  await (await storeOf(store)).writeLines(key, lines);
  return { key, count: lines.length };
}
