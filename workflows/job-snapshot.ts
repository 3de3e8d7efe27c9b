/** Moved to contracts/job-snapshot.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/job-snapshot';
