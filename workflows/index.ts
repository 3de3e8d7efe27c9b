// Every workflow the worker registers. The worker bundles this file.
import type { BatchInput } from '../contracts/batch-input';
import type { BatchSummary } from '../contracts/batch-summary';
import type { PipelineInput } from '../contracts/pipeline-input';
import type { PipelineSummary } from '../contracts/pipeline-types';
import { serverlessBatch as batchWorkflow } from './batch/batch';
import { serverlessPipeline as pipelineWorkflow } from './pipeline/pipeline';

export { automationWorkflow } from './automation/automation';
export { bulkAction } from './bulk/bulk-action';
export { endpointGate } from './endpoint/endpoint-gate';
export {
  ephemeralEndpointWorkflow,
  provisionEndpointWorkflow,
  teardownEndpointWorkflow,
  updateEndpointWorkflow,
} from './endpoint/endpoint-lifecycle';
export { serverlessJob } from './job/job';
export { stackCheck } from './shared/stack-check';

/**
 * The batch workflow as a caller starts it: a BatchInput in, its summary out (what it carries
 * through continue-as-new is its own).
 */
export const serverlessBatch: (input: BatchInput) => Promise<BatchSummary> = batchWorkflow;

/** The pipeline workflow as a caller starts it: a PipelineInput in, its summary out. */
export const serverlessPipeline: (input: PipelineInput) => Promise<PipelineSummary> = pipelineWorkflow;

// The inputs and results of the workflows, and the schemas they are checked with.
export { type Endpoint, endpointSchema } from '../api/schemas/endpoint';
export {
  type AutomationCarry,
  type AutomationCounters,
  type AutomationEvent,
  type AutomationWorkflowInput,
  automationEventSchema,
  type InFlightRun,
} from '../contracts/automation-input';
export { type BatchInput, batchInputSchema } from '../contracts/batch-input';
export type {
  BatchCost,
  BatchCounts,
  BatchEndpointSplit,
  BatchLeaseCounts,
  BatchResultsRef,
  BatchSummary,
} from '../contracts/batch-summary';
export type { BulkActionInput, BulkProgress } from '../contracts/bulk-action';
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
} from '../contracts/endpoint-input';
export type { EphemeralResult, ProvisionResult, TeardownResult } from '../contracts/endpoint-results';
export { type JobWorkflowInput, jobWorkflowInputSchema } from '../contracts/job-input';
export { type JobResult, jobResultSchema } from '../contracts/job-snapshot';
export type { StackCheckInput } from './shared/stack-check';
