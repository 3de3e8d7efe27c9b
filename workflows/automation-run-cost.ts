/** Moved to contracts/automation-run-cost.ts; this path is kept for importers that have not moved yet. */
export * from '../contracts/automation-run-cost';
