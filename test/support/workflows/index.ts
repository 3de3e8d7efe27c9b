// Workflows that exist only for tests; a test worker bundles this file.
export { webhookReceiver } from './webhook-receiver';
