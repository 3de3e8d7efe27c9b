/**
 * The page activity of a bulk action (workflows/bulk/bulk-action.ts): one page of the visibility
 * query, then the action on each run on it, a few at a time, heartbeating as it goes. Cancel is
 * done here; retry and redrive start new runs the way the client starts them, so the worker hands
 * them in (`bulkRunActions`: worker/bulk-run-actions.ts), and this layer keeps out of client/.
 */
import { Context } from '@temporalio/activity';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  BULK_WORKFLOW_TYPES,
  type BulkPageRequest,
  type BulkPageResult,
  type ReplayWindow,
} from '../contracts/bulk-action';

/** One run the query found. */
export interface BulkRun {
  workflowId: string;
  runId: string;
  workflowType: string;
}

/** What acting on one run came to; a thrown error is a failure of that run only. */
export type BulkRunOutcome = 'acted' | 'skipped';

/** Starts the new run of a retry or a redrive: the client's own start functions, handed in. */
export interface BulkRunActions {
  retry(run: BulkRun, bulkId: string): Promise<BulkRunOutcome>;
  redrive(run: BulkRun, bulkId: string): Promise<BulkRunOutcome>;
  replay(run: BulkRun, bulkId: string, window: ReplayWindow): Promise<BulkRunOutcome>;
}

export interface BulkActivityDeps {
  /** The worker's Temporal client: the query is read, and runs are cancelled, through it. */
  temporalClient?: Client;
  bulkRunActions?: BulkRunActions;
}

/** Runs acted on at once: a cancel is one call to Temporal; the job's own cancel paces the service. */
const AT_ONCE = 20;

export function createBulkActivities(deps: BulkActivityDeps) {
  const clientOf = (): Client => {
    if (!deps.temporalClient)
      throw ApplicationFailure.nonRetryable(
        'this worker has no Temporal client for bulk actions',
        'BulkSetup',
      );
    return deps.temporalClient;
  };

  async function cancel(client: Client, run: BulkRun): Promise<BulkRunOutcome> {
    // The workflow id only: a batch that continued as new is the same batch under a new run id.
    try {
      await client.workflow.getHandle(run.workflowId).cancel();
      return 'acted';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'skipped'; // closed since it was listed
      throw error;
    }
  }

  async function act(request: BulkPageRequest, run: BulkRun): Promise<BulkRunOutcome> {
    const { action, bulkId } = request;
    const client = clientOf();
    // The query names the types already; this guards a hand-written one that does not.
    if (!BULK_WORKFLOW_TYPES[action].includes(run.workflowType)) return 'skipped';
    if (action === 'cancel') return cancel(client, run);
    if (!deps.bulkRunActions)
      throw ApplicationFailure.nonRetryable(`this worker cannot ${action} runs`, 'BulkSetup');
    if (action === 'replay') {
      if (!request.window)
        throw ApplicationFailure.nonRetryable('a replay needs its time range', 'BulkInput');
      return deps.bulkRunActions.replay(run, bulkId, request.window);
    }
    return deps.bulkRunActions[action](run, bulkId);
  }

  return {
    async bulkPage(request: BulkPageRequest): Promise<BulkPageResult> {
      const client = clientOf();
      const listed = await client.workflowService.listWorkflowExecutions({
        namespace: client.options.namespace,
        query: request.query,
        pageSize: request.pageSize,
        ...(request.nextPageToken ? { nextPageToken: Buffer.from(request.nextPageToken, 'base64') } : {}),
      });
      const runs: BulkRun[] = (listed.executions ?? []).map((execution) => ({
        workflowId: execution.execution?.workflowId ?? '',
        runId: execution.execution?.runId ?? '',
        workflowType: execution.type?.name ?? '',
      }));
      const result: BulkPageResult = { seen: runs.length, acted: 0, skipped: 0, failed: 0, failures: [] };
      for (let start = 0; start < runs.length; start += AT_ONCE) {
        const outcomes = await Promise.allSettled(
          runs.slice(start, start + AT_ONCE).map((run) => act(request, run)),
        );
        outcomes.forEach((outcome, offset) => {
          if (outcome.status === 'fulfilled') result[outcome.value] += 1;
          else {
            result.failed += 1;
            result.failures.push({
              workflowId: runs[start + offset]!.workflowId,
              message: outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason),
            });
          }
        });
        Context.current().heartbeat({ acted: start + AT_ONCE });
      }
      const token = listed.nextPageToken;
      return token && token.length > 0
        ? { ...result, nextPageToken: Buffer.from(token).toString('base64') }
        : result;
    },
  };
}

export type BulkActivities = ReturnType<typeof createBulkActivities>;
