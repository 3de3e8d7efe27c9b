/** Moved to contracts/endpoint-input.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/endpoint-input';
