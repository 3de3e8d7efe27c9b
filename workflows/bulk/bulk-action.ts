/**
 * A bulk action: pages through a visibility query and acts on every run on each page (one activity
 * a page: list, then act), keeping counts a query reads. It is a workflow so that an action over a
 * million runs survives a worker's crash and carries on where it was: a page is acted on again
 * only if its activity did not finish, and every action is idempotent (a cancel requested twice is
 * one; a retry or redrive starts its new run under an id named after this workflow, so a second
 * start finds the first). Long selections continue as new, carrying the page token and the counts.
 */
import { continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BulkActivities } from '../../activities/bulk';
import {
  type BulkActionInput,
  type BulkProgress,
  bulkActionInputSchema,
  MAX_BULK_FAILURES_KEPT,
} from '../../contracts/bulk-action';
import { bulkProgressQuery } from './bulk-definitions';

const { bulkPage } = proxyActivities<BulkActivities>({
  // A page of a thousand runs takes a while; a heartbeat every few runs says it is alive, and a
  // worker that died mid-page is noticed within the heartbeat timeout, and the page acted on again.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** Pages between two continue-as-new, unless Temporal suggests one sooner. */
const PAGES_PER_RUN = 200;

export async function bulkAction(rawInput: BulkActionInput): Promise<BulkProgress> {
  const input = bulkActionInputSchema.parse(rawInput);
  const progress: BulkProgress = input.progress ?? {
    action: input.action,
    query: input.query,
    pages: 0,
    seen: 0,
    acted: 0,
    skipped: 0,
    failed: 0,
    done: false,
    failures: [],
  };
  setHandler(bulkProgressQuery, () => progress);
  const bulkId = workflowInfo().workflowId;
  for (let pagesThisRun = 0; ; pagesThisRun++) {
    if (pagesThisRun >= PAGES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof bulkAction>({ ...input, progress });
    }
    const page = await bulkPage({
      action: input.action,
      query: input.query,
      pageSize: input.pageSize,
      bulkId,
      ...(input.window ? { window: input.window } : {}),
      ...(progress.nextPageToken ? { nextPageToken: progress.nextPageToken } : {}),
    });
    progress.pages += 1;
    progress.seen += page.seen;
    progress.acted += page.acted;
    progress.skipped += page.skipped;
    progress.failed += page.failed;
    progress.failures = [...progress.failures, ...page.failures].slice(0, MAX_BULK_FAILURES_KEPT);
    if (!page.nextPageToken) break;
    progress.nextPageToken = page.nextPageToken;
  }
  delete progress.nextPageToken;
  progress.done = true;
  return progress;
}
