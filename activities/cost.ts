/** Moved to contracts/cost.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/cost';
