/**
 * A workload's Temporal task priority: its own priority, and its endpoint as the fairness key
 * (contracts/task-priority.ts); the tenant's fairness key and weight stay the gate's.
 */
import { describe, expect, it } from 'vitest';
import { endpointTaskKey, workloadTaskPriority } from '../../contracts/task-priority';

describe('workloadTaskPriority', () => {
  it("keys a job's tasks by its endpoint, with its priority and without its tenant", () => {
    expect(
      workloadTaskPriority({ endpointId: 'ep-a', priority: 1, fairnessKey: 'tenant-a', fairnessWeight: 3 }),
    ).toEqual({ priority: { priorityKey: 1, fairnessKey: 'ep-a' } });
    expect(workloadTaskPriority({ endpointId: 'ep-a' })).toEqual({ priority: { fairnessKey: 'ep-a' } });
  });

  it("keys a route's work by the endpoint work goes to first: the cheapest when priced", () => {
    const route = {
      endpoints: [
        { endpointId: 'ep-dear', pricePerSecond: 0.002 },
        { endpointId: 'ep-cheap', pricePerSecond: 0.001 },
      ],
    };
    expect(workloadTaskPriority({ route }).priority.fairnessKey).toBe('ep-cheap');
    expect(
      workloadTaskPriority({ route: { endpoints: [{ endpointId: 'ep-1' }, { endpointId: 'ep-2' }] } }),
    ).toEqual({ priority: { fairnessKey: 'ep-1' } });
  });

  it("keys a pipeline's tasks by its first stage's endpoint, or that stage's route's first", () => {
    expect(
      workloadTaskPriority({
        priority: 2,
        stages: [{ endpointId: 'ep-transcribe' }, { endpointId: 'ep-speak' }],
      }),
    ).toEqual({ priority: { priorityKey: 2, fairnessKey: 'ep-transcribe' } });
    expect(
      workloadTaskPriority({
        stages: [{ route: { endpoints: [{ endpointId: 'ep-1' }, { endpointId: 'ep-2' }] } }],
      }).priority.fairnessKey,
    ).toBe('ep-1');
  });

  it('tags an endpoint id longer than a key holds (64 bytes), the same each time', () => {
    const long = 'é'.repeat(40);
    const key = endpointTaskKey(long);
    expect(new TextEncoder().encode(key).length).toBeLessThanOrEqual(64);
    expect(key).toBe(endpointTaskKey(long));
    expect(key).not.toBe(endpointTaskKey('è'.repeat(40)));
    expect(endpointTaskKey('x'.repeat(64))).toBe('x'.repeat(64));
  });
});
