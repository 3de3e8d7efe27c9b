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

// Where outputs and batch results live.
export { type BatchStore, createLocalBatchStore } from './activities/batch-store';
export { createLocalResultStore, type ResultStore } from './activities/result-store';
export { loadServiceConfig, type ServiceConfig, type ServiceConfigInput } from './api/config';
// The service's configuration, and errors.
export { ConfigError, ServiceError, type ServiceErrorKind, ValidationError } from './api/errors';

// Automations and events.
export {
  type AutomationDefinition,
  type AutomationEvent,
  type AutomationEventInput,
  type AutomationRunContext,
  type AutomationState,
  type AutomationTarget,
  automationWorkflowId,
  defineAutomation,
  type EmitOnEnd,
  getAutomationState,
  MAX_EVENT_BYTES,
  type RunPlan,
  type SendEventOptions,
  sendEvent,
} from './client/automations';
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
  batchFailureOf,
  cancelBatch,
  finishedSummary,
  getBatchProgress,
  MAX_BATCH_INPUT_BYTES,
  pauseBatch,
  readBatchResults,
  redriveBatch,
  resumeBatch,
  type StartBatchOptions,
  setBatchConcurrency,
  startBatch,
  validateBatchInput,
  type WriteBatchManifestOptions,
  writeBatchManifest,
} from './client/batches';
// Connecting to Temporal.
export {
  connectTemporalClient,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  loadTemporalConnection,
  parseTemporalConnection,
  TEMPORAL_CONNECTION_ENV,
  type TemporalConnectionConfig,
  type TemporalConnectionInput,
} from './client/connection';
// Costs.
export {
  type BatchCostReport,
  batchCost,
  type CostRange,
  type CostReport,
  type EndpointCost,
  endpointCost,
  type JobCost,
  jobCost,
  rangeCost,
} from './client/costs';
// Endpoints: provisioning, updates, teardown and ephemeral runs.
export {
  DEFAULT_TASK_QUEUE,
  EPHEMERAL_FAILURE,
  type EphemeralBatchFailure,
  type EphemeralEndpointHandle,
  ephemeralFailureOf,
  getLifecyclePhase,
  type LifecycleStartOptions,
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
export { type EventHeaders, eventHeaders, signEvent } from './client/event-signature';
// Jobs.
export {
  type AwaitJobOptions,
  awaitJob,
  cancelJob,
  extendJobTtl,
  findJobByJobId,
  getJobSnapshot,
  JOB_FAILURE,
  type JobFailure,
  type JobFailureDetails,
  type JobFailureType,
  type JobFilter,
  type JobHandle,
  type JobListing,
  type JobResult,
  type JobSnapshot,
  type JobWorkflowInput,
  jobFailureOf,
  jobListQuery,
  type LiveJobSnapshot,
  listJobs,
  MAX_JOB_INPUT_BYTES,
  runJob,
  type StartJobOptions,
  startJob,
  validateJobInput,
} from './client/jobs';
// Schedules.
export {
  type BackfillInput,
  type BackfillResult,
  backfillSchedule,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  OVERLAP_POLICIES,
  type OverlapPolicy,
  pauseSchedule,
  SCHEDULE_KINDS,
  type ScheduleDetails,
  type ScheduledRun,
  type ScheduleKind,
  type ScheduleListing,
  type ScheduleOptions,
  type SchedulePoliciesInput,
  type ScheduleSpecInput,
  type ScheduleUpdate,
  scheduleBatch,
  scheduledRunWorkflowId,
  scheduleEphemeralRun,
  scheduleJob,
  triggerSchedule,
  unpauseSchedule,
  updateSchedule,
} from './client/schedules';
export {
  type AutomationFilter,
  automationListQuery,
  type BatchFilter,
  batchListQuery,
  scheduleRunsQuery,
} from './client/visibility-queries';
// Following work as it runs, and finding it.
export { type WatchOptions, watchBatch, watchJob } from './client/watch';
// The worker and its configuration.
export {
  type GatewayConfig,
  loadWorkerConfig,
  type TemporalConfig,
  type WebhookConfig,
  type WorkerConfig,
  type WorkerHealthConfig,
} from './worker/config';
export { defineEventSource, type EventSource, type EventSourceInput } from './worker/event-sources';
export {
  type ActivityOptions,
  prebuiltWorkflowBundlePath,
  type RunWorkerOptions,
  runWorker,
  type WorkerReadyInfo,
} from './worker/run-worker';
