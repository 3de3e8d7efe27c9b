/**
 * The new runs of a bulk retry or redrive (activities/bulk.ts calls these), started by the client's
 * own functions: startJob and redriveBatch, so a bulk action starts exactly what a person would.
 * Each is idempotent for one bulk action: a repeat after a crash finds the run it started and
 * starts nothing.
 */
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { BulkRun, BulkRunActions, BulkRunOutcome } from '../activities/bulk';
import { ValidationError } from '../api/errors';
import { redriveBatch } from '../client/batches';
import { startJob } from '../client/jobs';
import type { JobWorkflowInput } from '../contracts/job-input';
import { tagsKey } from '../contracts/search-attributes';

/** The input a workflow chain was started with: the first event of its first run. */
async function firstInput(client: Client, workflowId: string, firstRunId: string): Promise<unknown> {
  const history = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId: firstRunId },
    maximumPageSize: 1,
  });
  const payload = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) throw new Error(`the input of ${workflowId} could not be read`);
  return defaultPayloadConverter.fromPayload(payload);
}

/** The id of the batch a bulk action redrives a batch into: one per batch and bulk action. */
export const redriveWorkflowId = (batchId: string, bulkId: string) => `${batchId}-redrive-${bulkId}`;

export function createBulkRunActions(client: Client): BulkRunActions {
  return {
    /**
     * The failed job again, under its own workflow id (so a list by id or tag finds one job), with
     * its input, task queue and tags. Only while the failed run is the latest one: a job retried
     * already (by this action before a crash, or anyone) is left alone.
     */
    async retry(run: BulkRun): Promise<BulkRunOutcome> {
      const description = await client.workflow.getHandle(run.workflowId).describe();
      if (description.runId !== run.runId || description.status.name !== 'FAILED') return 'skipped';
      const firstRunId = description.raw.workflowExecutionInfo?.firstRunId || run.runId;
      const input = (await firstInput(client, run.workflowId, firstRunId)) as JobWorkflowInput;
      const tags = description.typedSearchAttributes.get(tagsKey);
      await startJob(client, input, {
        workflowId: run.workflowId,
        taskQueue: description.taskQueue,
        idReuse: 'after-failure',
        ...(tags?.length ? { tags } : {}),
      });
      return 'acted';
    },

    /** One new batch of the batch's items that did not complete, with its tags. */
    async redrive(run: BulkRun, bulkId: string): Promise<BulkRunOutcome> {
      const workflowId = redriveWorkflowId(run.workflowId, bulkId);
      try {
        await client.workflow.getHandle(workflowId).describe();
        return 'skipped'; // redriven already by this action (before a crash)
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
      const description = await client.workflow.getHandle(run.workflowId).describe();
      const tags = description.typedSearchAttributes.get(tagsKey);
      try {
        await redriveBatch(client, {
          batch: run.workflowId,
          workflowId,
          taskQueue: description.taskQueue,
          ...(tags?.length ? { tags } : {}),
        });
        return 'acted';
      } catch (error) {
        if (error instanceof ValidationError && error.field === 'batch') return 'skipped'; // nothing failed
        throw error;
      }
    },
  };
}
