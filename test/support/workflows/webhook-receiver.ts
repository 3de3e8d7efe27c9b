/**
 * A stand-in for the job workflow on the gateway's side of the contract: it collects every
 * jobWebhookSignal it gets, shows them through a query, and returns them once it has `count`.
 */
import { condition, defineQuery, setHandler } from '@temporalio/workflow';
import { jobWebhookSignal } from '../../../workflows/job/job-definitions';

export type ReceivedWebhook = { jobId: string; status: string };

export const receivedWebhooksQuery = defineQuery<ReceivedWebhook[]>('receivedWebhooks');

export async function webhookReceiver(input: { count: number }): Promise<ReceivedWebhook[]> {
  const received: ReceivedWebhook[] = [];
  // Kept as delivered: a test can see that nothing but jobId and status crossed over.
  setHandler(jobWebhookSignal, (hint) => {
    received.push(hint);
  });
  setHandler(receivedWebhooksQuery, () => received);
  await condition(() => received.length >= input.count);
  return received;
}
