/** Moved to contracts/job-input.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/job-input';
