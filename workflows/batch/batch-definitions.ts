/**
 * The batch workflow's signals, updates and query, apart from its code so that the client facade
 * imports definitions only. Webhooks reach a batch gathered in batchWebhooksSignal (or one by one
 * by the job workflow's jobWebhookSignal).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BatchProgress, BatchSummary } from '../../contracts/batch-summary';

/**
 * Asked by the gateway before it signals a batch: only the webhook of a job that may be an orphan
 * of an uncertain submit is worth a signal (an event in history); the watcher sees the others.
 * 'wait': the item's page has not answered yet, so it cannot tell; ask again shortly (a gateway
 * that does not know 'wait' signals, as it did for `true`).
 */
export const batchWantsHintQuery = defineQuery<BatchHintAnswer, [BatchHintAsk]>('serverlessBatchWantsHint');
/** A webhook's job and the item its URL names (a pipeline's: the piece, and the stage of the job). */
export interface BatchHintAsk {
  item: number;
  jobId: string;
  stage?: string;
}
export type BatchHintAnswer = boolean | 'wait';
/**
 * The gateway's webhooks for one batch gathered into one signal (one history event for many jobs);
 * each a hint like jobWebhookSignal's, which the batch confirms before it adopts anything.
 */
export const batchWebhooksSignal =
  defineSignal<[{ hints: Array<BatchHintAsk & { status: string }> }]>('serverlessBatchWebhooks');
export const batchProgressQuery = defineQuery<BatchProgress>('serverlessBatchProgress');
/**
 * The summary as it stands: how a cancelled batch (whose result is its cancellation) still gives
 * its counts and results reference, for readBatchResults and redriveBatch.
 */
export const batchSummaryQuery = defineQuery<BatchSummary>('serverlessBatchSummary');
/** Stops submitting new items; jobs in flight carry on. */
export const pauseBatchSignal = defineSignal('serverlessBatchPause');
export const resumeBatchSignal = defineSignal('serverlessBatchResume');
/** Sets maxConcurrency (1 to 10,000); refused by the validator otherwise. Returns the previous value. */
export const setBatchConcurrencyUpdate = defineUpdate<number, [number]>('serverlessBatchSetConcurrency');
