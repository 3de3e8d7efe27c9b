/**
 * Bulk actions over a selection of runs: cancel running jobs and batches (their remote jobs with
 * them), retry failed jobs, redrive the failed items of finished batches. A selection is a
 * visibility query, built from a few fields or given whole; the action is a durable workflow
 * (workflows/bulk/bulk-action.ts) that pages through it, so it survives a worker's crash and
 * carries on. A dry run counts what the action would act on and shows a sample, and starts nothing.
 *
 *   const plan = await dryRunBulkAction(client, 'cancel', { endpointId: 'ep-1', tags: ['nightly'] });
 *   const handle = await startBulkAction(client, 'cancel', { endpointId: 'ep-1' });
 *   await getBulkProgress(client, { workflowId: handle.workflowId });
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import {
  BULK_STATUS_CLAUSE,
  BULK_WORKFLOW_TYPES,
  type BulkActionName,
  type BulkProgress,
  bulkActions,
  DEFAULT_BULK_PAGE_SIZE,
  MAX_BULK_PAGE_SIZE,
  replayWindowSchema,
} from '../contracts/bulk-action';
import { firstIssue } from '../contracts/input-rules';
import { tagSchema } from '../contracts/tags';
import { bulkProgressQuery } from '../workflows/bulk/bulk-definitions';
import { automationKeyKey, automationNameKey, endpointIdKey } from '../workflows/shared/search-attributes';
import { DEFAULT_TASK_QUEUE } from './endpoints';
import { queryLiteral, tagClause } from './visibility-queries';

export { type BulkActionName, type BulkProgress, bulkActions } from '../contracts/bulk-action';

const isoTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a zone' });

/** Which runs: every field given narrows the selection (AND). */
export const bulkSelectionSchema = z.strictObject({
  /** A visibility query of your own (as `temporal workflow list --query` takes), ANDed with the rest. */
  query: z.string().min(1, { error: 'must not be empty' }).max(4_000).optional(),
  endpointId: pathSegmentSchema.optional(),
  /** Runs started at or after this time. */
  startedAfter: isoTime.optional(),
  /** Runs started before this time. */
  startedBefore: isoTime.optional(),
  /** Runs carrying every one of these tags. */
  tags: z.array(tagSchema).max(10).optional(),
  /** Runs a schedule started. */
  scheduleId: z.string().min(1).optional(),
  /** Runs an automation, batch or ephemeral run started (their parent's workflow id). */
  startedBy: z.string().min(1).optional(),
  /** Automations of this name (replay), and of this key. */
  automation: z.string().min(1).optional(),
  automationKey: z.string().min(1).optional(),
});
export type BulkSelection = z.input<typeof bulkSelectionSchema>;

const actionSchema = z.enum(bulkActions, { error: `must be one of ${bulkActions.join(', ')}` });

function checked<T>(schema: z.ZodType<T>, value: unknown, root: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { field, rule } = firstIssue(result.error, root);
  throw new ValidationError(field, rule);
}

/**
 * The visibility query of an action over a selection: the selection's clauses, the workflow types
 * the action applies to, and the state it acts on (running for cancel, failed for retry, closed
 * for redrive).
 */
export function bulkActionQuery(action: BulkActionName, selection: BulkSelection = {}): string {
  checked(actionSchema, action, 'action');
  const {
    query,
    endpointId,
    startedAfter,
    startedBefore,
    tags,
    scheduleId,
    startedBy,
    automation,
    automationKey,
  } = checked(bulkSelectionSchema, selection, 'selection');
  const types = BULK_WORKFLOW_TYPES[action].map((type) => `"${type}"`).join(', ');
  const status = BULK_STATUS_CLAUSE[action];
  const clauses = [`WorkflowType IN (${types})`, ...(status ? [status] : [])];
  if (automation !== undefined)
    clauses.push(`${automationNameKey.name} = ${queryLiteral('selection.automation', automation)}`);
  if (automationKey !== undefined)
    clauses.push(`${automationKeyKey.name} = ${queryLiteral('selection.automationKey', automationKey)}`);
  if (endpointId !== undefined)
    clauses.push(`${endpointIdKey.name} = ${queryLiteral('selection.endpointId', endpointId)}`);
  if (startedAfter !== undefined) clauses.push(`StartTime >= "${new Date(startedAfter).toISOString()}"`);
  if (startedBefore !== undefined) clauses.push(`StartTime < "${new Date(startedBefore).toISOString()}"`);
  for (const tag of tags ?? []) clauses.push(tagClause(tag));
  if (scheduleId !== undefined)
    clauses.push(`TemporalScheduledById = ${queryLiteral('selection.scheduleId', scheduleId)}`);
  if (startedBy !== undefined)
    clauses.push(`ParentWorkflowId = ${queryLiteral('selection.startedBy', startedBy)}`);
  // Yours in parentheses, so its own OR stays inside it.
  if (query !== undefined) clauses.push(`(${query})`);
  return clauses.join(' AND ');
}

export interface BulkSampleRun {
  workflowId: string;
  runId: string;
  workflowType: string;
  status: string;
  startTime: Date;
}

export interface BulkDryRun {
  action: BulkActionName;
  query: string;
  /** How many runs the action would act on now (visibility's count: eventually consistent). */
  count: number;
  /** The newest of them. */
  sample: BulkSampleRun[];
}

/** What an action would act on: the count and a sample. Starts nothing. */
export async function dryRunBulkAction(
  client: Client,
  action: BulkActionName,
  selection: BulkSelection = {},
  options: { sampleSize?: number } = {},
): Promise<BulkDryRun> {
  const query = bulkActionQuery(action, selection);
  const sampleSize = checked(
    z.number().int().min(0).max(100),
    options.sampleSize ?? 10,
    'options.sampleSize',
  );
  const { count } = await client.workflow.count(query);
  const sample: BulkSampleRun[] = [];
  if (sampleSize > 0) {
    for await (const info of client.workflow.list({ query, pageSize: sampleSize })) {
      sample.push({
        workflowId: info.workflowId,
        runId: info.runId,
        workflowType: info.type,
        status: info.status.name,
        startTime: info.startTime,
      });
      if (sample.length >= sampleSize) break;
    }
  }
  return { action, query, count, sample };
}

export const startBulkActionOptionsSchema = z.strictObject({
  /** The bulk action's workflow id; default `bulk-<action>-<uuid>`. The same id twice is one action. */
  workflowId: z.string().min(1, { error: 'must not be empty' }).max(200).optional(),
  taskQueue: z.string().min(1, { error: 'must not be empty' }).default(DEFAULT_TASK_QUEUE),
  /** Runs listed, and acted on, a page at a time. */
  pageSize: z.number().int().min(1).max(MAX_BULK_PAGE_SIZE).default(DEFAULT_BULK_PAGE_SIZE),
  /**
   * replay (required there): the events the automation received in this range are sent again;
   * with `onlyFailed: true`, only those whose run ended failed.
   */
  window: replayWindowSchema.optional(),
});
export type StartBulkActionOptions = z.input<typeof startBulkActionOptionsSchema>;

export type BulkActionHandle = WorkflowHandle<(input: unknown) => Promise<BulkProgress>>;

/** Starts the durable bulk action; returns at once (getBulkProgress, awaitBulkAction). */
export async function startBulkAction(
  client: Client,
  action: BulkActionName,
  selection: BulkSelection = {},
  options: StartBulkActionOptions = {},
): Promise<BulkActionHandle> {
  // Runs started before the action only: the runs it starts itself (a retry, a redrive's batch)
  // are never in its own selection, however the pages fall.
  const query = `${bulkActionQuery(action, selection)} AND StartTime < "${new Date().toISOString()}"`;
  const { workflowId, taskQueue, pageSize, window } = checked(
    startBulkActionOptionsSchema,
    options,
    'options',
  );
  if (action === 'replay' && !window) throw new ValidationError('options.window', 'is required for a replay');
  if (action !== 'replay' && window) throw new ValidationError('options.window', 'is for a replay only');
  return client.workflow.start('bulkAction', {
    taskQueue,
    workflowId: workflowId ?? `bulk-${action}-${randomUUID()}`,
    args: [{ action, query, pageSize, ...(window ? { window } : {}) }],
    staticSummary: `bulk ${action}`,
    staticDetails: `bulk ${action} over: ${query}`,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

/** Where a bulk action is: pages, runs seen, acted on, skipped, failed (and the first failures). */
export function getBulkProgress(
  client: Client,
  { workflowId }: { workflowId: string },
): Promise<BulkProgress> {
  return client.workflow.getHandle(workflowId).query(bulkProgressQuery);
}

/** Its final progress, once it has paged through the whole selection. */
export function awaitBulkAction(
  client: Client,
  { workflowId }: { workflowId: string },
): Promise<BulkProgress> {
  return client.workflow.getHandle(workflowId).result() as Promise<BulkProgress>;
}
