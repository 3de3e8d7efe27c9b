/** Moved to contracts/input-rules.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/input-rules';
