/**
 * Plumbing of the endpoint workflow tests: the shared workflow harness, with the endpoint
 * workflows (and the stand-in job workflow) bundled once per file.
 */
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { bundleWorkflows } from './workflow-harness';

export { failureOf, quietRuntime, withWorker } from './workflow-harness';

export function bundleEndpointWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(require.resolve('./endpoint-workflows.ts'));
}
