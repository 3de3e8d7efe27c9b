/** Moved to contracts/job-wait-policy.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/job-wait-policy';
