/** Moved to contracts/batch-input.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/batch-input';
