/**
 * An automation fed over HTTP: orders arrive as signed events at the gateway's
 * `POST /events/orders` (Standard Webhooks signatures, with the secret of EVENT_SIGNING_SECRETS);
 * the automation groups each shop's events, up to 5 or 2 seconds after the first, and runs each
 * group as one batch of jobs. A resent event counts once; a forged one is refused with 401.
 */
import { randomBytes } from 'node:crypto';
import {
  connectTemporalClient,
  defineAutomation,
  eventHeaders,
  getAutomationState,
  loadWorkerConfig,
  runWorker,
} from 'durable-serverless';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const endpointId = process.env.ENDPOINT_ID ?? 'my-endpoint';
  const secret = process.env.EVENT_SIGNING_SECRETS?.split(',')[0];
  if (!secret) throw new Error('EVENT_SIGNING_SECRETS is not set: the gateway takes no events without it');

  // What to run for a group of events: code registered on the worker, called in an activity.
  const orders = defineAutomation({
    name: 'orders',
    batch: { maxEvents: 5, maxWait: '2 seconds' },
    run: (events) => ({
      kind: 'batch',
      input: {
        endpointId,
        items: { inline: events.map((event) => ({ input: { order: event.id, paid: event.data } })) },
      },
    }),
  });

  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();
  let gatewayUrl = '';
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const worker = runWorker(config, {
    signal: stop.signal,
    automations: [orders],
    onReady: (info) => {
      gatewayUrl = info.gatewayUrl ?? '';
      markReady();
    },
  });
  await Promise.race([ready, worker]);
  if (!gatewayUrl) throw new Error('the worker runs no gateway: set WEBHOOK_PORT and WEBHOOK_SECRET');
  const client = await connectTemporalClient();
  try {
    const post = async (id: string, signingSecret = secret) => {
      const body = JSON.stringify({ key: 'shop-1', type: 'order.paid', data: { amount: 42 } });
      const answer = await fetch(`${gatewayUrl}/events/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...eventHeaders(signingSecret, id, body) },
        body,
      });
      return answer.status;
    };
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) answers.push(await post(`order-${i}`));
    answers.push(await post('order-3'));
    answers.push(await post('order-99', `whsec_${randomBytes(32).toString('base64')}`));
    console.log(`[automation] 14 events posted, answers: ${answers.join(' ')}`);

    // The automation's own account of what it did, asked until every group has run.
    for (;;) {
      // Until the automation's workflow has run its first task, it answers no query yet.
      const state = await getAutomationState(client, { automation: 'orders', key: 'shop-1' }).catch(
        () => undefined,
      );
      if (!state) {
        await sleep(200);
        continue;
      }
      const { received, runsStarted, runsCompleted } = state.counters;
      const settled =
        state.pending === 0 && state.ready === 0 && state.starting === 0 && state.inFlight === 0;
      if (received >= 12 && settled && runsCompleted === runsStarted) {
        console.log(`[automation] ${received} distinct events ran as ${runsCompleted} batches of up to 5`);
        break;
      }
      await sleep(200);
    }
  } finally {
    await client.connection.close();
    stop.abort();
    await worker;
  }
}

main().catch((error: unknown) => {
  console.error('[automation] failed:', error);
  process.exit(1);
});
