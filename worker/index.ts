// The worker's public surface: run the library's worker inside your own program, configured from
// the environment (loadWorkerConfig) or by hand, with the webhook gateway and the health endpoint.
export {
  acceptedSecrets,
  type GatewayConfig,
  loadGatewayConfig,
  loadWorkerConfig,
  secretValues,
  type TemporalConfig,
  type WebhookConfig,
  type WorkerConfig,
  type WorkerHealthConfig,
} from './config';
export { memoryReplayGuard, type ReplayGuard, type ReplayState } from './event-replay';
export {
  defineEventSource,
  type EventMappingInput,
  type EventSource,
  type EventSourceInput,
  type EventTransform,
  type EventTransformInput,
  type EventTransformOutput,
} from './event-sources';
export {
  buildWebhookGateway,
  startWebhookGateway,
  type WebhookGateway,
  type WebhookGatewayOptions,
} from './gateway';
export {
  type HealthServer,
  type HealthServerOptions,
  startHealthServer,
  type WorkerHealthProbe,
  type WorkerHealthState,
} from './health';
export { type CreateLoggerOptions, createLogger, type Logger } from './logger';
export {
  type ActivityOptions,
  prebuiltWorkflowBundlePath,
  type RunWorkerOptions,
  runWorker,
  type WorkerReadyInfo,
} from './run-worker';
export { webhookUrlFactory, webhookUrlFor } from './webhook-token';
