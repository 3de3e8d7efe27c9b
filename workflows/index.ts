// Every workflow the worker registers. The worker bundles this file.

export { automationWorkflow } from './automation';
export { serverlessBatch } from './batch';
export {
  ephemeralEndpointWorkflow,
  provisionEndpointWorkflow,
  teardownEndpointWorkflow,
  updateEndpointWorkflow,
} from './endpoint-lifecycle';
export { serverlessJob } from './job';
export { stackCheck } from './stack-check';
