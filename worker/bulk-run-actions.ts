/**
 * The new runs of a bulk retry, redrive or replay (activities/bulk.ts calls these), started by the
 * client's own functions: startJob, redriveBatch and sendEvent, so a bulk action starts exactly
 * what a person would. Each is idempotent for one bulk action: a repeat after a crash finds the run
 * it started (or, for a replayed event, the automation drops the repeat) and starts nothing.
 */
import { createHash } from 'node:crypto';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import type { AutomationActivities, PlanRunInput } from '../activities/automation';
import type { BulkRun, BulkRunActions, BulkRunOutcome } from '../activities/bulk';
import { ValidationError } from '../api/errors';
import { sendEvent } from '../client/automations';
import { redriveBatch } from '../client/batches';
import { startJob } from '../client/jobs';
import type { AutomationEvent } from '../contracts/automation-input';
import type { ReplayWindow } from '../contracts/bulk-action';
import type { JobWorkflowInput } from '../contracts/job-input';
import { automationKeyKey, automationNameKey, tagsKey } from '../contracts/search-attributes';
import { SIGNAL_NAMES } from '../contracts/signal-names';

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

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * A replayed event's id: new to the automation (its de-duplication would drop the original id), the
 * same for every attempt of one bulk action (so a page acted on twice replays nothing twice), and
 * within the 256 characters an id may have.
 */
export function replayEventId(eventId: string, bulkId: string): string {
  const suffix = `:replay:${shortHash(bulkId)}`;
  return eventId.length + suffix.length <= 256 ? `${eventId}${suffix}` : `${shortHash(eventId)}${suffix}`;
}

/** The automation's activity that plans a run: its input names the run and its events. */
const PLAN_ACTIVITY: keyof AutomationActivities = 'planAutomationRun';

/**
 * The events one run of an automation received in the window, in order, and the run each event
 * went into: the automation plans a group of events as run `runId` (its planAutomationRun
 * activity's input, in the history), and starts that run as a child workflow of that id.
 */
async function receivedEvents(
  client: Client,
  run: BulkRun,
  window: ReplayWindow,
): Promise<{ received: AutomationEvent[]; runOf: Map<string, string> }> {
  const from = Date.parse(window.from);
  const to = Date.parse(window.to);
  const received: AutomationEvent[] = [];
  const runOf = new Map<string, string>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId: run.workflowId, runId: run.runId },
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of page.history?.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === PLAN_ACTIVITY) {
        const payload = scheduled.input?.payloads?.[0];
        if (!payload) continue;
        const plan = defaultPayloadConverter.fromPayload(payload) as PlanRunInput;
        for (const planned of plan.events) runOf.set(planned.id, plan.runId);
        continue;
      }
      const signal = event.workflowExecutionSignaledEventAttributes;
      if (signal?.signalName !== SIGNAL_NAMES.automationEvent) continue;
      const at = tsToMs(event.eventTime);
      if (at < from || at >= to) continue;
      const payload = signal.input?.payloads?.[0];
      if (payload) received.push(defaultPayloadConverter.fromPayload(payload) as AutomationEvent);
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { received, runOf };
}

/** The ends of a run that count as failed. */
const FAILED_RUN_STATUSES = new Set(['FAILED', 'TIMED_OUT', 'TERMINATED']);

/**
 * Whether an automation's run (a child job or batch workflow) ended failed. An event with no run
 * here (still waiting, skipped by the definition, or planned after a continue-as-new) has none to
 * have failed, and a run still going has not failed yet.
 */
async function runFailed(client: Client, runWorkflowId: string | undefined): Promise<boolean> {
  if (!runWorkflowId) return false;
  try {
    const description = await client.workflow.getHandle(runWorkflowId).describe();
    return FAILED_RUN_STATUSES.has(description.status.name);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

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

    /**
     * Every event this run of the automation received in the window (its signals, as Temporal
     * stamped them), sent again to the automation of the same name and key, each under a new id;
     * with `onlyFailed`, only those whose run ended failed.
     */
    async replay(run: BulkRun, bulkId: string, window: ReplayWindow): Promise<BulkRunOutcome> {
      const description = await client.workflow.getHandle(run.workflowId, run.runId).describe();
      const name = description.typedSearchAttributes.get(automationNameKey);
      const key = description.typedSearchAttributes.get(automationKeyKey);
      if (!name || !key) return 'skipped';
      const { received, runOf } = await receivedEvents(client, run, window);
      let replayed = 0;
      for (const original of received) {
        if (window.onlyFailed && !(await runFailed(client, runOf.get(original.id)))) continue;
        await sendEvent(
          client,
          { ...original, id: replayEventId(original.id, bulkId) },
          { automation: name, key, taskQueue: description.taskQueue },
        );
        replayed += 1;
      }
      return replayed > 0 ? 'acted' : 'skipped';
    },
  };
}
