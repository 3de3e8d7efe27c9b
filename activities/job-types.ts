/** Moved to contracts/job-types.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/job-types';
