/**
 * durable-serverless: jobs on a serverless GPU compute service, run as durable Temporal workflows.
 *
 * Everything a program needs to start, await, schedule and steer jobs, batches, endpoint runs and
 * automations, and to run the worker that executes them. Advanced uses have their own entry points:
 * `durable-serverless/api` (the service client alone), `durable-serverless/emulator` (the service
 * emulator), `durable-serverless/worker` (the gateway and health servers), and
 * `durable-serverless/workflows` (the workflow code, for a `Worker.create` of your own).
 *
 * The list below is the public API: a name not listed here is internal and may change in any
 * release.
 *
 * @packageDocumentation
 * @module durable-serverless
 */

export type { EstimateCost } from './activities/cost-estimator';
export type { JobActivityDeps } from './activities/job';
export type { StreamSinkFunction } from './activities/stream-sink';
export type { TaskLooks } from './activities/task-looks';
// The service client's shapes, as the worker's options name them (the client is durable-serverless/api).
export type { ServiceClient } from './api/client';
export {
  loadServiceConfig,
  type ServiceConfig,
  type ServiceConfigInput,
  serviceConfigSchema,
} from './api/config';
// The service's configuration, and errors.
export {
  ConfigError,
  ServiceError,
  type ServiceErrorInit,
  type ServiceErrorKind,
  ValidationError,
} from './api/errors';
export type { CallOptions } from './api/jobs';
export {
  BATCH_ITEM_OUTCOMES,
  type BatchItemOutcome,
  type CallOutcome,
  type LibraryMetrics,
  type RouteHopReason,
  type RouteWithdrawalOutcome,
  type SubmitOutcome,
  type WebhookVerdict,
} from './api/metrics';
export { type RateLimits, rateLimitsSchema } from './api/rate-limit';
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
} from './api/schemas/endpoint';
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
} from './api/schemas/job';
// Automations and events.
export {
  type AutomationDefinition,
  type AutomationEvent,
  type AutomationEventInput,
  type AutomationRunContext,
  type AutomationState,
  type AutomationTarget,
  automationTargetSchema,
  automationWorkflowId,
  defineAutomation,
  type EmitOnEnd,
  getAutomationState,
  MAX_EVENT_BYTES,
  type RunPlan,
  type SendEventOptions,
  sendEvent,
  sendEventOptionsSchema,
} from './client/automations';
export type { TimeRange } from './client/backfill-window';
// Batches.
export {
  awaitBatch,
  BATCH_FAILURE,
  type BatchCounts,
  type BatchFailure,
  type BatchHandle,
  type BatchInput,
  type BatchProgress,
  type BatchResultLine,
  type BatchResultsRef,
  type BatchStoreOption,
  type BatchSummary,
  type BatchTarget,
  type BatchWorkflow,
  batchFailureOf,
  cancelBatch,
  finishedSummary,
  getBatchProgress,
  MAX_BATCH_INPUT_BYTES,
  pauseBatch,
  type ReadBatchResultsOptions,
  type RedriveBatchOptions,
  readBatchResults,
  redriveBatch,
  resumeBatch,
  type SetBatchConcurrencyOptions,
  type StartBatchOptions,
  setBatchConcurrency,
  startBatch,
  startBatchOptionsSchema,
  validateBatchInput,
  type WriteBatchManifestOptions,
  writeBatchManifest,
} from './client/batches';
// Bulk actions over a selection of runs.
export {
  awaitBulkAction,
  type BulkActionHandle,
  type BulkActionName,
  type BulkDryRun,
  type BulkProgress,
  type BulkSampleRun,
  type BulkSelection,
  bulkActionQuery,
  bulkActions,
  bulkSelectionSchema,
  dryRunBulkAction,
  getBulkProgress,
  type StartBulkActionOptions,
  startBulkAction,
} from './client/bulk';
// Connecting to Temporal.
export {
  connectTemporalClient,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  loadTemporalConnection,
  loadTemporalConnectionWithOrigin,
  type Pem,
  parseTemporalConnection,
  TEMPORAL_CONNECTION_ENV,
  type TemporalConnectionConfig,
  type TemporalConnectionInput,
  type TemporalConnectionOrigin,
} from './client/connection';
// Costs.
export {
  type BatchCostReport,
  batchCost,
  type CostRange,
  type CostReport,
  type EndpointCost,
  type EndpointCostOptions,
  endpointCost,
  type JobCost,
  jobCost,
  rangeCost,
} from './client/costs';
// Checking a deployment.
export {
  type DoctorCheck,
  type DoctorOptions,
  type DoctorReport,
  type DoctorVerdict,
  formatDoctorReport,
  runDoctor,
} from './client/doctor';
export {
  type GateControls,
  type GateView,
  getEndpointLimits,
  setEndpointLimits,
} from './client/endpoint-limits';
// Endpoints: provisioning, updates, teardown and ephemeral runs.
export {
  DEFAULT_TASK_QUEUE,
  EPHEMERAL_FAILURE,
  type EphemeralBatchFailure,
  type EphemeralEndpointHandle,
  ephemeralFailureOf,
  getLifecyclePhase,
  type LifecycleStartOptions,
  lifecycleStartOptionsSchema,
  MAX_EPHEMERAL_INPUT_BYTES,
  type ProvisionEndpointHandle,
  provisionEndpoint,
  runOnEphemeralEndpoint,
  startEphemeralEndpoint,
  startProvisionEndpoint,
  startTeardownEndpoint,
  startUpdateEndpoint,
  type TeardownEndpointHandle,
  teardownEndpoint,
  type UpdateEndpointHandle,
  updateEndpoint,
} from './client/endpoints';
export {
  type EventHeaders,
  type EventScheme,
  eventHeaders,
  eventSchemeSchema,
  type HmacSpec,
  hmacSpecSchema,
  signEvent,
} from './client/event-signature';
// Jobs.
export {
  type AwaitJobOptions,
  awaitJob,
  awaitJobOptionsSchema,
  cancelJob,
  type ExtendJobTtlOptions,
  extendJobTtl,
  extendJobTtlOptionsSchema,
  type FindJobOptions,
  findJobByJobId,
  type GetJobSnapshotOptions,
  getJobSnapshot,
  JOB_FAILURE,
  type JobFailure,
  type JobFailureDetails,
  type JobFailureType,
  type JobFilter,
  type JobHandle,
  type JobListing,
  type JobResult,
  type JobResultStoreOptions,
  type JobSnapshot,
  type JobWorkflowInput,
  jobFailureOf,
  jobFilterSchema,
  jobListQuery,
  type LiveJobSnapshot,
  listJobs,
  MAX_JOB_INPUT_BYTES,
  runJob,
  type StartJobOptions,
  startJob,
  startJobOptionsSchema,
  validateJobInput,
} from './client/jobs';
// Pipelines: items through ordered stages, each on its own endpoint.
export {
  awaitPipeline,
  cancelPipeline,
  definePipelineTransform,
  finishedPipelineSummary,
  getPipelineProgress,
  PIPELINE_FAILURE,
  type PipelineFailure,
  type PipelineHandle,
  type PipelineInput,
  type PipelineProgress,
  type PipelineResultLine,
  type PipelineStageInput,
  type PipelineStageProgress,
  type PipelineSummary,
  type PipelineTarget,
  type PipelineTransform,
  type PipelineWorkflow,
  pausePipeline,
  pipelineFailureOf,
  type ReadPipelineResultsOptions,
  type RedrivePipelineTarget,
  readPipelineResults,
  redrivePipeline,
  resumePipeline,
  type SetPipelineConcurrencyOptions,
  type StartPipelineOptions,
  setPipelineConcurrency,
  startPipeline,
  startPipelineOptionsSchema,
  type TransformPiece,
  validatePipelineInput,
} from './client/pipelines';
export { overlapSchema, schedulePoliciesSchema, scheduleSpecSchema } from './client/schedule-spec';
// Schedules.
export {
  type BackfillInput,
  type BackfillResult,
  type BackfillScheduleOptions,
  backfillInputSchema,
  backfillSchedule,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  OVERLAP_POLICIES,
  type OverlapPolicy,
  type PauseScheduleOptions,
  pauseSchedule,
  SCHEDULE_KINDS,
  type ScheduleDetails,
  type ScheduledRun,
  type ScheduleKind,
  type ScheduleListing,
  type ScheduleOptions,
  type SchedulePoliciesInput,
  type ScheduleSpecInput,
  type ScheduleTarget,
  type ScheduleUpdate,
  scheduleBatch,
  scheduledRunWorkflowId,
  scheduleEphemeralRun,
  scheduleJob,
  scheduleOptionsSchema,
  schedulePipeline,
  scheduleUpdateSchema,
  type TriggerScheduleOptions,
  triggerSchedule,
  type UpdateScheduleOptions,
  unpauseSchedule,
  updateSchedule,
} from './client/schedules';
export {
  type AutomationFilter,
  automationFilterSchema,
  automationListQuery,
  type BatchFilter,
  batchFilterSchema,
  batchListQuery,
  scheduleRunsQuery,
} from './client/visibility-queries';
// Following work as it runs, and finding it.
export {
  type WatchBatchOptions,
  type WatchJobOptions,
  type WatchOptions,
  type WatchPipelineOptions,
  watchBatch,
  watchJob,
  watchPipeline,
} from './client/watch';
export type { WorkflowTarget } from './client/workflow-target';
// The schemas every input is checked against, and the types they give.
export {
  type AutomationControlsInput,
  type AutomationCounters,
  automationControlsSchema,
  automationEventSchema,
  emitOnEndSchema,
} from './contracts/automation-input';
export { batchInputSchema } from './contracts/batch-input';
export type { BatchCost, BatchEndpointSplit, BatchLeaseCounts } from './contracts/batch-summary';
export { type CostEstimate, costEstimateSchema, type Pricing, pricingSchema } from './contracts/cost';
export { type Scheduling, schedulingSchema } from './contracts/endpoint-gate';
export {
  type EphemeralBatch,
  type EphemeralEndpointInput,
  ephemeralEndpointInputSchema,
  type ProvisionEndpointInput,
  provisionEndpointInputSchema,
  type TeardownEndpointInput,
  teardownEndpointInputSchema,
  type UpdateEndpointInput,
  updateEndpointInputSchema,
} from './contracts/endpoint-input';
// The workflows' signatures (their handles' types); the code is in durable-serverless/workflows.
export type {
  EphemeralResult,
  LifecyclePhase,
  LifecycleStatus,
  ProvisionResult,
  TeardownResult,
} from './contracts/endpoint-results';
export { jobWorkflowInputSchema, type PollingInput, pollingInputSchema } from './contracts/job-input';
export { jobResultSchema, jobSnapshotSchema } from './contracts/job-snapshot';
export { type ResultRef, resultRefSchema } from './contracts/job-types';
export { type RouteHop, type RouteInput, routeSchema } from './contracts/route';
export type { JobStreamBatch } from './contracts/signal-names';
// Where outputs and batch results live.
export { type BatchStore, createLocalBatchStore } from './stores/batch-store';
export { createLocalResultStore, type ResultStore } from './stores/result-store';
export type { S3StoreOptions } from './stores/s3-client';
export { type S3Location, s3LocationSchema } from './stores/s3-location';
// A store by its URL (a directory, file:///dir, s3://bucket/prefix): the AWS SDK loads only for a bucket.
export {
  type OpenedStores,
  openStores,
  type StoreLocation,
  storeLocationFromUrl,
} from './stores/store-location';
export type { StreamStore } from './stores/stream-store';
// The worker and its configuration.
export {
  type AutomationsModuleConfig,
  type EventIngressConfig,
  type GatewayConfig,
  loadWorkerConfig,
  logLevels,
  type ObservabilityConfig,
  type TemporalConfig,
  type WebhookConfig,
  type WorkerConfig,
  type WorkerHealthConfig,
  type WorkerPackageConfig,
  type WorkerSlots,
} from './worker/config';
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
} from './worker/event-sources';
export {
  type ActivityOptions,
  prebuiltWorkflowBundlePath,
  type RunWorkerOptions,
  runWorker,
  type WorkerReadyInfo,
} from './worker/run-worker';
export type { TracingOptions } from './worker/tracing';
export type {
  ephemeralEndpointWorkflow,
  provisionEndpointWorkflow,
  teardownEndpointWorkflow,
  updateEndpointWorkflow,
} from './workflows/endpoint/endpoint-lifecycle';
export type { serverlessJob } from './workflows/job/job';
