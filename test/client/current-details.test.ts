/** The current details a batch and a job show in the Temporal UI, rendered from their snapshots. */
import { describe, expect, it } from 'vitest';
import type { BatchProgress } from '../../contracts/batch-input';
import { batchCurrentDetails, jobCurrentDetails } from '../../contracts/current-details';
import type { JobSnapshot } from '../../contracts/job-snapshot';

const counts = {
  completed: 2_000,
  failed: 3,
  timedOut: 1,
  expired: 0,
  cancelled: 2,
  uncertain: 0,
  rejected: 0,
};

describe('current details', () => {
  it('a batch shows counts, throughput, estimated end, cost, budget left and state', () => {
    const progress = {
      total: 5_000,
      cursor: 2_500,
      counts,
      done: 2_006,
      inFlight: 494,
      paused: true,
      ratePerSecond: 12.5,
      etaMs: 240_000,
      budget: 10,
      cost: { amount: 2.5, currency: 'USD', items: 2_006 },
      toleranceExceeded: false,
    } as BatchProgress;
    const text = batchCurrentDetails(progress, Date.UTC(2026, 0, 1, 12, 0, 0));
    expect(text).toContain('**2,006 of 5,000 items done**');
    expect(text).toContain('| Completed | 2,000 |');
    expect(text).toContain('| Failed | 4 |');
    expect(text).toContain('| In flight | 494 |');
    expect(text).toContain('| Queued | 2,500 |');
    expect(text).toContain('| Cancelled | 2 |');
    expect(text).toContain('| Throughput | 12.5 items/s |');
    expect(text).toContain('| Estimated end | 2026-01-01 12:04:00 UTC (in 4 min) |');
    expect(text).toContain('| Cost so far | 2.50 USD |');
    expect(text).toContain('| Budget left | 7.50 USD |');
    expect(text).toContain('| State | paused: no new submissions |');
  });

  it('a job shows its remote status, attempt, queue delay and cost', () => {
    const snapshot = {
      phase: 'waiting',
      status: 'IN_PROGRESS',
      jobId: 'job-1',
      attempts: 2,
      delayTime: 1_500,
      cost: { amount: 0.0021, currency: 'USD', tier: 'AMPERE_16', seconds: 3 },
    } as JobSnapshot;
    const text = jobCurrentDetails(snapshot);
    expect(text).toContain('| Remote status | IN_PROGRESS |');
    expect(text).toContain('| Attempt | 2 |');
    expect(text).toContain('| Queue delay | 1.5 s |');
    expect(text).toContain('| Cost | 0.0021 USD |');
  });
});
