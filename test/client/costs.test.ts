/**
 * The cost sums over a time range (client/costs.ts) on a fake visibility listing: a child-mode
 * batch's item jobs are in its summary and are not added again, a child of a batch outside the
 * report still counts, each workflow id counts once, and the account-wide queries are the
 * endpoint's minus its clause.
 */
import { describe, expect, it } from 'vitest';
import {
  type CostSource,
  endpointCostQueries,
  type ListedWorkflow,
  rangeCostQueries,
  sumCosts,
} from '../../client/costs';
import type { BatchCost } from '../../contracts/batch-summary';
import type { CostEstimate } from '../../contracts/cost';

const estimate = (amount: number): CostEstimate => ({
  amount,
  currency: 'EUR',
  tier: 'AMPERE_16',
  seconds: 1,
});
const child = (batchId: string, index: number, parent = true): ListedWorkflow => ({
  workflowId: `${batchId}/item-${index}`,
  ...(parent ? { parentExecution: { workflowId: batchId, runId: 'r' } } : {}),
});

function fakeSource(
  listing: { jobs: ListedWorkflow[]; batches: ListedWorkflow[] },
  jobCosts: Record<string, number>,
  batchCosts: Record<string, number>,
): CostSource & { looked: string[] } {
  const looked: string[] = [];
  return {
    looked,
    async *list(query) {
      yield* query.includes('serverlessBatch') ? listing.batches : listing.jobs;
    },
    async jobCost(workflowId) {
      looked.push(workflowId);
      const amount = jobCosts[workflowId];
      return amount === undefined ? undefined : estimate(amount);
    },
    async batchCost(workflowId): Promise<BatchCost | undefined> {
      const amount = batchCosts[workflowId];
      return amount === undefined ? undefined : { amount, currency: 'EUR', items: 2 };
    },
  };
}

describe('sumCosts', () => {
  it("counts a child-mode batch's item jobs once, in its summary", async () => {
    const source = fakeSource(
      {
        batches: [{ workflowId: 'nightly' }],
        jobs: [child('nightly', 0), child('nightly', 1), { workflowId: 'single' }],
      },
      { 'nightly/item-0': 0.25, 'nightly/item-1': 0.5, single: 1 },
      { nightly: 0.75 },
    );
    const report = await sumCosts(source, endpointCostQueries('ep-1'), { endpointId: 'ep-1' });
    expect(report).toEqual({
      endpointId: 'ep-1',
      amount: 1.75,
      currency: 'EUR',
      jobs: { workflows: 3, withCost: 1, amount: 1, inBatches: 2 },
      batches: { workflows: 1, amount: 0.75 },
    });
    // The children's snapshots are not even read.
    expect(source.looked).toEqual(['single']);
  });

  it("counts a child as a job when its batch is not in the report, and a look-alike id that is not the batch's child", async () => {
    const source = fakeSource(
      {
        // 'running' is still open (not listed); 'other/item-3' names 'nightly' as its parent.
        batches: [{ workflowId: 'nightly' }],
        jobs: [
          child('running', 0),
          { workflowId: 'other/item-3', parentExecution: { workflowId: 'nightly', runId: 'r' } },
          // Visibility without parent information: the id alone ties it to the batch.
          child('nightly', 4, false),
        ],
      },
      { 'running/item-0': 0.5, 'other/item-3': 0.125, 'nightly/item-4': 9 },
      { nightly: 2 },
    );
    const report = await sumCosts(source, rangeCostQueries());
    expect(report.jobs).toEqual({ workflows: 3, withCost: 2, amount: 0.625, inBatches: 1 });
    expect(report.amount).toBe(2.625);
    expect(report).not.toHaveProperty('endpointId');
  });

  it('counts a workflow id listed twice once, and a batch without a summary as a workflow without cost', async () => {
    const source = fakeSource(
      {
        batches: [{ workflowId: 'b' }, { workflowId: 'b' }, { workflowId: 'terminated' }],
        jobs: [{ workflowId: 'j' }, { workflowId: 'j' }, child('terminated', 0)],
      },
      { j: 0.1, 'terminated/item-0': 0.2 },
      { b: 1 },
    );
    const report = await sumCosts(source, rangeCostQueries(), {
      range: { since: new Date('2026-11-01T00:00:00Z'), until: new Date('2026-12-01T00:00:00Z') },
    });
    expect(report).toEqual({
      since: '2026-11-01T00:00:00.000Z',
      until: '2026-12-01T00:00:00.000Z',
      amount: 1.3,
      currency: 'EUR',
      // The terminated batch has no summary, so its child's run is in none: it counts as a job.
      jobs: { workflows: 2, withCost: 2, amount: 0.3, inBatches: 0 },
      batches: { workflows: 2, amount: 1 },
    });
  });
});

describe('the range queries', () => {
  it("are the endpoint's queries without the endpoint clause, closed runs only, no continued-as-new", () => {
    const range = { since: new Date('2026-11-01T00:00:00Z'), until: new Date('2026-12-01T00:00:00Z') };
    const all = rangeCostQueries(range);
    const one = endpointCostQueries('ep-1', range);
    for (const kind of ['jobs', 'batches'] as const) {
      expect(all[kind]).not.toContain('ServerlessEndpointId');
      expect(one[kind]).toContain('ServerlessEndpointId = "ep-1"');
      expect(one[kind].replace(/ServerlessEndpointId = "ep-1" AND /, '')).toBe(all[kind]);
      expect(all[kind]).toContain('ExecutionStatus != "Running" AND ExecutionStatus != "ContinuedAsNew"');
      expect(all[kind]).toContain('CloseTime >= "2026-11-01T00:00:00.000Z"');
      expect(all[kind]).toContain('CloseTime <= "2026-12-01T00:00:00.000Z"');
    }
    expect(all.jobs).toContain('WorkflowType = "serverlessJob"');
    expect(all.batches).toContain('WorkflowType = "serverlessBatch"');
  });
});
