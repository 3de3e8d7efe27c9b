/** Moved to contracts/endpoint-failures.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/endpoint-failures';
