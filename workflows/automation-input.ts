/** Moved to contracts/automation-input.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/automation-input';
