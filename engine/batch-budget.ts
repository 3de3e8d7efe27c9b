/**
 * A batch's budget, one rule for both of its modes: no item starts that would take the estimated
 * cost past the budget, counting every job under way at the mean cost of the runs finished so far
 * ("would pass", not "has passed": a window of jobs in flight cannot overshoot it). Before any run
 * has an estimate there is nothing to go by.
 */
import type { BatchCost } from '../contracts/batch-summary';

export interface BudgetView {
  budget: number | undefined;
  /** The estimated cost of the runs finished so far. */
  cost: BatchCost;
  /** Jobs that may still cost: in flight (retries waiting included), uncertain, being started. */
  underWay: number;
}

/** How many more items the budget lets start. */
export function budgetRoom({ budget, cost, underWay }: BudgetView): number {
  if (budget === undefined) return Number.POSITIVE_INFINITY;
  if (cost.amount >= budget) return 0;
  if (cost.items === 0) return Number.POSITIVE_INFINITY;
  const mean = cost.amount / cost.items;
  return Math.max(0, Math.floor((budget - cost.amount) / mean) - underWay);
}

/** The budget stops the batch: reached, or the next item would pass it with nothing under way. */
export function budgetSpent(view: BudgetView): boolean {
  if (view.budget === undefined) return false;
  return view.cost.amount >= view.budget || (budgetRoom(view) === 0 && view.underWay === 0);
}
