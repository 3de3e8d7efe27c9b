/**
 * The batch's budget rule, as both modes apply it: how many more items may start, counting the jobs
 * under way at the mean cost of the finished runs, and when the budget stops the batch.
 */
import { describe, expect, it } from 'vitest';
import { budgetRoom, budgetSpent } from '../../engine/batch-budget';

const cost = (amount: number, items: number) => ({ amount, items });

describe('batch budget', () => {
  it.each([
    { name: 'no budget: no limit', budget: undefined, spent: cost(5, 5), underWay: 9, room: Infinity },
    { name: 'no estimate yet: nothing to go by', budget: 1, spent: cost(0, 0), underWay: 9, room: Infinity },
    { name: 'room for what the mean cost leaves', budget: 1, spent: cost(0.25, 1), underWay: 0, room: 3 },
    { name: 'jobs under way take their share', budget: 1, spent: cost(0.25, 1), underWay: 2, room: 1 },
    { name: 'more under way than the budget holds', budget: 1, spent: cost(0.25, 1), underWay: 7, room: 0 },
    { name: 'reached', budget: 1, spent: cost(1, 4), underWay: 0, room: 0 },
  ])('$name', ({ budget, spent, underWay, room }) => {
    expect(budgetRoom({ budget, cost: spent, underWay })).toBe(room);
  });

  it('stops the batch once reached, or when no item fits and nothing is under way', () => {
    expect(budgetSpent({ budget: undefined, cost: cost(9, 1), underWay: 0 })).toBe(false);
    expect(budgetSpent({ budget: 1, cost: cost(1, 4), underWay: 3 })).toBe(true);
    // 0.6 spent on one run: the next would pass 1, and nothing under way can change that.
    expect(budgetSpent({ budget: 1, cost: cost(0.6, 1), underWay: 0 })).toBe(true);
    // Seven under way: no room now, but they may end cheaper; the batch waits for them.
    expect(budgetSpent({ budget: 1, cost: cost(0.25, 1), underWay: 7 })).toBe(false);
  });
});
