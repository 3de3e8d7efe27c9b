/** The current details a batch, a job and an automation show in the Temporal UI, rendered from their snapshots. */
import { describe, expect, it } from 'vitest';
import type { AutomationControls, AutomationState } from '../../contracts/automation-input';
import type { BatchProgress } from '../../contracts/batch-summary';
import {
  automationCurrentDetails,
  batchCurrentDetails,
  gateCurrentDetails,
  jobCurrentDetails,
  pipelineCurrentDetails,
} from '../../contracts/current-details';
import type { JobSnapshot } from '../../contracts/job-snapshot';
import type { PipelineProgress, PipelineStageProgress } from '../../contracts/pipeline-types';

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
  it('a pipeline shows a row per stage: completed, failed, in its window, buffered, dropped, parts, cost', () => {
    const stage = (name: string, extra: Partial<PipelineStageProgress>): PipelineStageProgress => ({
      name,
      endpointId: `ep-${name}`,
      counts: { started: 0, completed: 0, failed: 0, dropped: 0, split: 0, parts: 0, notStarted: 0 },
      running: 0,
      buffered: 0,
      maxConcurrency: 10,
      cost: { amount: 0, items: 0 },
      stopped: false,
      inFlight: 0,
      ...extra,
    });
    const progress: PipelineProgress = {
      total: 2_000,
      stages: [
        stage('transcribe', {
          counts: {
            started: 1_500,
            completed: 1_490,
            failed: 2,
            dropped: 0,
            split: 0,
            parts: 0,
            notStarted: 0,
          },
          running: 8,
          cost: { amount: 1.5, currency: 'USD', items: 1_492 },
        }),
        stage('speak', {
          counts: { started: 900, completed: 880, failed: 0, dropped: 4, split: 3, parts: 9, notStarted: 0 },
          running: 10,
          buffered: 20,
        }),
      ],
      cost: { amount: 1.5, currency: 'USD', items: 1_492 },
      paused: false,
      stopped: 'tolerance',
      runs: 1,
      events: 300,
    };
    const text = pipelineCurrentDetails(progress);
    expect(text).toContain('**2,000 items through 2 stages: stopping: failure tolerance exceeded**');
    expect(text).toContain('| transcribe | 1,490 | 2 | 8 | 0 | 0 | 0 |');
    expect(text).toContain('| speak | 880 | 0 | 10 | 20 | 4 | 9 |');
  });

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

  const controls: AutomationControls = {
    dedupeWindow: 86_400_000,
    debounce: 10_000,
    batch: { maxEvents: 50, maxWait: 60_000 },
    concurrency: 2,
    budget: 5,
    idleTimeout: 3_600_000,
  };
  const automation = (changes: Partial<AutomationState> = {}): AutomationState => ({
    name: 'resize',
    key: 'user-7',
    pending: 12,
    ready: 1,
    starting: 0,
    inFlight: 2,
    remembered: 40,
    counters: {
      received: 42,
      duplicates: 3,
      runsStarted: 9,
      runsCompleted: 6,
      runsFailed: 1,
      groupsSkipped: 0,
      invalid: 0,
      cost: 1.25,
    },
    ...changes,
  });

  it('an automation shows pending events, runs in flight, runs started, completed and failed, cost and its flow controls', () => {
    const text = automationCurrentDetails(automation(), controls);
    expect(text).toContain('**12 pending events, 1 group waiting, 2 runs in flight**');
    expect(text).toContain('| Pending events | 12 |');
    expect(text).toContain('| Groups waiting for a run | 1 |');
    expect(text).toContain('| Runs in flight | 2 |');
    expect(text).toContain('| Runs started | 9 |');
    expect(text).toContain('| Runs completed | 6 |');
    expect(text).toContain('| Runs failed | 1 |');
    expect(text).toContain('| Repeats dropped | 3 |');
    expect(text).toContain('| Cost so far | 1.25 |');
    expect(text).toContain('| Budget left | 3.75 |');
    expect(text).toContain(
      '| Flow controls | debounce 10 s, batches of up to 50 events or 1 min, 2 runs at once, repeats dropped for 1 d |',
    );
    expect(text).toContain('| State | at its concurrency: groups wait for a run to end |');
    // Rows with nothing to say are left out.
    expect(text).not.toContain('Groups skipped');
    expect(text).not.toContain('Runs starting');
  });

  it('an automation says when it is idle, and when its budget stops new runs', () => {
    const idle = automation({ pending: 0, ready: 0, inFlight: 0 });
    expect(automationCurrentDetails(idle, controls)).toContain('| State | idle: waiting for events |');
    expect(automationCurrentDetails(idle, controls)).toContain('**0 pending events, 0 runs in flight**');
    const spent = automation({ counters: { ...automation().counters, cost: 5 } });
    expect(automationCurrentDetails(spent, controls)).toContain(
      '| State | budget reached: no new runs, waiting for the runs in flight |',
    );
    expect(automationCurrentDetails(spent, controls)).toContain('| Budget left | 0.00 |');
  });

  it("an endpoint's gate shows its window, the service's queue as last read with the rate its workers take jobs, and each key", () => {
    const text = gateCurrentDetails({
      endpointId: 'ep-1',
      paused: false,
      runLimit: 1_000,
      runLimitOverride: undefined,
      inWindow: 240,
      keys: [{ fairnessKey: 'tenant-a', weight: 2, waiting: 100, granted: 900 }],
      waitingByPriority: { '5': 100 },
      serviceQueue: {
        inQueue: 12,
        running: 10,
        idle: 0,
        workersMax: 10,
        at: 0,
        room: 38,
        takenPerSecond: 49.6,
      },
    });
    expect(text).toContain('**Endpoint ep-1: granting submits**');
    expect(text).toContain(
      '| service queue | 12 waiting, 10 of 10 workers busy, 50 taken a second, held: room for 38 |',
    );
    expect(text).toContain('| key tenant-a | 100 waiting, 900 granted, weight 2 |');
  });
});
