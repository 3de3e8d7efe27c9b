/** Moved to contracts/submit-lease.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/submit-lease';
