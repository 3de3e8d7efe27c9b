// The worker's public surface: run the library's worker inside your own program, configured from
// the environment (loadWorkerConfig) or by hand, with the webhook gateway and the health endpoint.

// The types and schemas the worker's options name, from the layers that define them.
export type { AutomationDefinition, AutomationRunContext, RunPlan } from '../activities/automation';
export type { BatchJobReports } from '../activities/batch-job-reports';
export type { EstimateCost } from '../activities/cost-estimator';
export type { JobActivityDeps } from '../activities/job';
export type { StreamSinkFunction } from '../activities/stream-sink';
export type { TaskLooks } from '../activities/task-looks';
export type { ServiceClient } from '../api/client';
export { type ServiceConfig, serviceConfigSchema } from '../api/config';
export type { CallOptions } from '../api/jobs';
export {
  BATCH_ITEM_OUTCOMES,
  type BatchItemOutcome,
  type CallOutcome,
  type LibraryMetrics,
  type RouteHopReason,
  type RouteWithdrawalOutcome,
  type SubmitOutcome,
  type WebhookVerdict,
} from '../api/metrics';
export { type RateLimits, rateLimitsSchema } from '../api/rate-limit';
export {
  type Account,
  accountSchema,
  type Endpoint,
  endpointSchema,
  type RestCreateEndpointInput,
  type RestEndpoint,
  restCreateEndpointSchema,
  restEndpointSchema,
  type SaveEndpointInput,
  saveEndpointInputSchema,
} from '../api/schemas/endpoint';
export {
  type HealthResponse,
  healthResponseSchema,
  type JobRequestInput,
  type JobStatus,
  type JobStatusValue,
  type JobSubmitted,
  jobRequestSchema,
  jobStatusSchema,
  jobStatusValueSchema,
  jobSubmittedSchema,
  type PurgeResponse,
  purgeResponseSchema,
  type StreamChunk,
  type StreamResponse,
  streamChunkSchema,
  streamResponseSchema,
} from '../api/schemas/job';
export type { TemporalConnectionConfig } from '../client/connection';
export {
  type EventScheme,
  eventSchemeSchema,
  type HmacSpec,
  hmacSpecSchema,
} from '../client/event-signature';
export {
  type AutomationControlsInput,
  type AutomationEvent,
  automationControlsSchema,
  automationEventSchema,
  type EmitOnEnd,
  emitOnEndSchema,
} from '../contracts/automation-input';
export { type BatchInput, batchInputSchema } from '../contracts/batch-input';
export { type CostEstimate, costEstimateSchema, type Pricing, pricingSchema } from '../contracts/cost';
export { type JobWorkflowInput, jobWorkflowInputSchema } from '../contracts/job-input';
export { type ResultRef, resultRefSchema } from '../contracts/job-types';
export type { JobStreamBatch } from '../contracts/signal-names';
export type { BatchStore } from '../stores/batch-store';
export type { ResultStore } from '../stores/result-store';
export { type S3Location, s3LocationSchema } from '../stores/s3-location';
export type { StoreLocation } from '../stores/store-location';
export type { StreamStore } from '../stores/stream-store';
export {
  type AutomationsModuleConfig,
  acceptedSecrets,
  type EventIngressConfig,
  type GatewayConfig,
  loadGatewayConfig,
  loadWorkerConfig,
  logLevels,
  type ObservabilityConfig,
  secretValues,
  type TemporalConfig,
  type WebhookConfig,
  type WorkerConfig,
  type WorkerHealthConfig,
  type WorkerPackageConfig,
  type WorkerSlots,
} from './config';
export type {
  EventIngressOptions,
  EventMetrics,
  EventRefusal,
  EventSink,
  EventVerdict,
  IngressEvent,
} from './event-ingress';
export { memoryReplayGuard, type ReplayGuard, type ReplayState } from './event-replay';
export {
  defineEventSource,
  type EventMappingInput,
  type EventPaths,
  type EventSource,
  type EventSourceInput,
  type EventTransform,
  type EventTransformInput,
  type EventTransformOutput,
  eventMappingSchema,
  eventSourceSchema,
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
export type { TracingOptions } from './tracing';
export {
  type WebhookBinding,
  type WebhookUrlOptions,
  webhookUrlFactory,
  webhookUrlFor,
} from './webhook-token';
export { workflowBundlerOptions } from './workflow-bundler-options';
