// Workflows that exist only for tests; a test worker bundles this file.
export { streamCollector } from './stream-collector';
export { webhookReceiver } from './webhook-receiver';
