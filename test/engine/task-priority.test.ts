/**
 * A workload's Temporal task priority: its own priority, and its endpoint as the fairness key
 * (contracts/task-priority.ts); the tenant's fairness key and weight stay the gate's.
 */
import { describe, expect, it } from 'vitest';
import {
  endpointTaskKey,
  LOOK_WEIGHT,
  lookTaskKey,
  lookTaskPriority,
  workloadTaskPriority,
} from '../../contracts/task-priority';

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

  it("keys an endpoint's looks apart from its other tasks and from every other endpoint's, within 64 bytes", () => {
    expect(lookTaskKey('ep-a')).toBe('look~ep-a');
    expect(lookTaskKey('ep-a')).not.toBe(endpointTaskKey('ep-a'));
    expect(lookTaskKey('ep-a')).not.toBe(lookTaskKey('ep-b'));
    // A key that would pass 64 bytes with its prefix is a tag of the id, stable and apart.
    const long = 'x'.repeat(60);
    expect(new TextEncoder().encode(lookTaskKey(long)).length).toBeLessThanOrEqual(64);
    expect(lookTaskKey(long)).toBe(lookTaskKey(long));
    expect(lookTaskKey(long)).not.toBe(lookTaskKey('y'.repeat(60)));
    // No priority of its own: a look keeps its workflow's.
    expect(lookTaskPriority('ep-a')).toEqual({ fairnessKey: 'look~ep-a', fairnessWeight: LOOK_WEIGHT });
  });
});
