// Every activity factory the worker registers.

export { type BatchStore, createLocalBatchStore } from '../stores/batch-store';
export { createLocalResultStore, type ResultStore } from '../stores/result-store';
export {
  type AutomationActivities,
  type AutomationActivityDeps,
  type AutomationDefinition,
  createAutomationActivities,
  defineAutomation,
  type RunPlan,
} from './automation';
export { type BatchActivities, type BatchActivityDeps, createBatchActivities } from './batch';
export { type BatchJobReports, createBatchJobReports } from './batch-job-reports';
export {
  type BulkActivities,
  type BulkActivityDeps,
  type BulkRun,
  type BulkRunActions,
  type BulkRunOutcome,
  createBulkActivities,
} from './bulk';
export { createEndpointActivities } from './endpoint';
export { createJobActivities, type JobActivities, type JobActivityDeps } from './job';
export { definePipelineTransform, type PipelineTransform, type TransformPiece } from './pipeline';
export { createRouteActivities, type RouteActivities } from './route';
export { createStackCheckActivities } from './stack-check';
export { createTaskLooks, type TaskLooks } from './task-looks';
