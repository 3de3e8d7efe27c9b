/**
 * Workflows bundled for the ephemeral endpoint's batch tests: the endpoint lifecycle workflows and
 * their stand-in job workflow, the real batch workflow (the ephemeral workflow's child), and the
 * stand-in registered as `serverlessJob` so that a `jobs` input of the library's job type runs
 * (the recorded pre-engine history, test/fixtures/endpoint-ephemeral-jobs.history.json).
 */
export { serverlessBatch } from '../../workflows/batch';
export * from '../support/endpoint-workflows';
export { stubJobWorkflow as serverlessJob } from '../support/endpoint-workflows';
