/**
 * Bulk actions: one durable workflow pages through a visibility query and acts on each run it
 * finds (cancel, retry a failed job, redrive a batch's failed items, replay an automation's
 * events). What the workflow, its activity and the client share: the actions, the input and the
 * progress.
 */
import { z } from 'zod';

export const bulkActions = ['cancel', 'retry', 'redrive', 'replay'] as const;
export type BulkActionName = (typeof bulkActions)[number];

/** The workflow types each action applies to: the query is narrowed to them, whatever it selects. */
export const BULK_WORKFLOW_TYPES: Record<BulkActionName, readonly string[]> = {
  // Cancelling the library's job and batch workflows cancels their remote jobs first.
  cancel: ['serverlessJob', 'serverlessBatch'],
  retry: ['serverlessJob'],
  redrive: ['serverlessBatch'],
  // Every run of the automation's chain (each continue-as-new is one): its history holds the events.
  replay: ['automationWorkflow'],
};

/** The run state each action needs, ANDed to the query: only what it can act on is paged through. */
export const BULK_STATUS_CLAUSE: Record<BulkActionName, string | undefined> = {
  cancel: 'ExecutionStatus = "Running"',
  retry: 'ExecutionStatus = "Failed"',
  // A batch over its tolerance fails; one within it completes with failed items; a cancelled one
  // keeps the items it did not run.
  redrive: 'ExecutionStatus != "Running"',
  // Running or not: a run that continued as new received events too.
  replay: undefined,
};

/**
 * The events a replay sends again: those the automation received in [from, to), or, with
 * `onlyFailed`, only those of them whose run ended failed (failed, timed out or terminated).
 */
export const replayWindowSchema = z
  .strictObject({
    from: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a zone' }),
    to: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a zone' }),
    onlyFailed: z.boolean({ error: 'must be true or false' }).optional(),
  })
  .refine((window) => Date.parse(window.from) < Date.parse(window.to), {
    error: 'from must be before to',
    path: ['to'],
  });
export type ReplayWindow = z.infer<typeof replayWindowSchema>;

export const DEFAULT_BULK_PAGE_SIZE = 100;
export const MAX_BULK_PAGE_SIZE = 1_000;
/** Failures kept in the progress (the counts hold them all). */
export const MAX_BULK_FAILURES_KEPT = 20;

export const bulkCountsSchema = z.object({
  /** Runs the query returned. */
  seen: z.number().int().nonnegative(),
  /** Runs acted on: cancel requested, job started again, batch redriven, events replayed. */
  acted: z.number().int().nonnegative(),
  /** Runs there was nothing to do for (closed already, retried already, no failed items). */
  skipped: z.number().int().nonnegative(),
  /** Runs the action failed for. */
  failed: z.number().int().nonnegative(),
});
export type BulkCounts = z.infer<typeof bulkCountsSchema>;

export const bulkFailureSchema = z.object({ workflowId: z.string(), message: z.string() });

export const bulkProgressSchema = bulkCountsSchema.extend({
  action: z.enum(bulkActions),
  query: z.string(),
  pages: z.number().int().nonnegative(),
  done: z.boolean(),
  /** The first failures (at most MAX_BULK_FAILURES_KEPT). */
  failures: z.array(bulkFailureSchema),
  /** Where the next page starts (base64 of Temporal's page token); absent at the start. */
  nextPageToken: z.string().optional(),
});
export type BulkProgress = z.infer<typeof bulkProgressSchema>;

export const bulkActionInputSchema = z.strictObject({
  action: z.enum(bulkActions, { error: `must be one of ${bulkActions.join(', ')}` }),
  /** The whole visibility query, narrowed to the action's workflow types and states already. */
  query: z.string().min(1, { error: 'must not be empty' }),
  pageSize: z.number().int().min(1).max(MAX_BULK_PAGE_SIZE).default(DEFAULT_BULK_PAGE_SIZE),
  /** replay: the events received in this range are sent again. */
  window: replayWindowSchema.optional(),
  /** Carried through continue-as-new. */
  progress: bulkProgressSchema.optional(),
});
export type BulkActionInput = z.input<typeof bulkActionInputSchema>;

/** What the page activity is asked: one page of the query, each run on it acted on. */
export interface BulkPageRequest {
  action: BulkActionName;
  query: string;
  pageSize: number;
  nextPageToken?: string;
  /** The bulk action's workflow id: the new runs it starts are named after it, so a repeat starts none. */
  bulkId: string;
  window?: ReplayWindow;
}

export interface BulkPageResult extends BulkCounts {
  nextPageToken?: string;
  failures: Array<z.infer<typeof bulkFailureSchema>>;
}
