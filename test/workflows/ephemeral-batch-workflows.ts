/**
 * Workflows bundled for the ephemeral endpoint's batch tests: the endpoint lifecycle workflows and
 * their stand-in job workflow, the real batch workflow (the ephemeral workflow's child), and the
 * stand-in registered as `serverlessJob` so that a `jobs` input of the library's job type runs
 * (the recorded pre-engine history, test/fixtures/endpoint-ephemeral-jobs.history.json).
 */
export { serverlessBatch } from '../../workflows/batch/batch';
export * from '../support/endpoint-workflows';

import { type StubJobInput, stubJobWorkflow } from '../support/endpoint-workflows';

/**
 * The stand-in as `serverlessJob`, running 1 s of workflow time instead of its default 60 s: the
 * test then never depends on the test server skipping time (a CI run once saw those 60 s pass in
 * real time, and the test time out).
 */
export async function serverlessJob(input: StubJobInput): Promise<unknown> {
  return stubJobWorkflow({ runMs: 1_000, ...input });
}
