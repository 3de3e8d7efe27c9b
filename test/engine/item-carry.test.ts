/**
 * The compact form a batch's items take through continue-as-new: every phase round-trips to the
 * same item, and 10,000 items in flight (the largest window) stay well under Temporal's 2 MB
 * payload limit.
 */
import { describe, expect, it } from 'vitest';
import { decodeItems, encodeItems } from '../../engine/item-carry';
import { type ItemState, queuedItem, type RunningItem } from '../../engine/item-state';

const jobId = '9dec3478-2fcd-4697-b42c-dbd58174297f-u1';
const running = (index: number): RunningItem => ({
  phase: 'running',
  index,
  attempts: 1,
  submissions: 1,
  retries: 0,
  jobId,
  status: 'IN_QUEUE',
  submittedAt: 1_795_707_009_121,
  ttlMs: 86_400_000,
  adopted: false,
  aliveAt: 1_795_707_009_321,
});

describe('the items carried through continue-as-new', () => {
  const items: ItemState[] = [
    queuedItem(1),
    { ...queuedItem(2), rejectedTries: 2, notBefore: 5_000, cost: 0.25 },
    { ...queuedItem(7), rejectedTries: 0, notBefore: 65_000, noRoomTries: 9 },
    {
      phase: 'uncertain',
      index: 3,
      attempts: 0,
      submissions: 1,
      retries: 0,
      sentAt: 1_000,
      waitUntil: 91_000,
      webhookArmed: true,
      ttlMs: 3_600_000,
      lease: { ttlMs: 60_000, answeredAt: 1_200 },
    },
    running(4),
    { ...running(5), adopted: true, lease: { ttlMs: 60_000, answeredAt: 1_200, unsettled: true }, cost: 1.5 },
    {
      phase: 'retry-due',
      index: 6,
      attempts: 2,
      submissions: 1,
      retries: 1,
      jobId,
      status: 'TIMED_OUT',
      submittedAt: 1_000,
      ttlMs: 86_400_000,
      adopted: false,
      aliveAt: 2_000,
      finishedAt: 9_000,
      retryAt: 11_000,
    },
  ];

  it('decodes every phase to the item it was', () => {
    const carried = JSON.parse(JSON.stringify(encodeItems(items)));
    expect(decodeItems(carried)).toEqual(items);
  });

  it('carries no ended item', () => {
    const ended: ItemState = {
      ...queuedItem(9),
      phase: 'ended',
      outcome: 'completed',
      status: 'COMPLETED',
      endedAt: 1,
    };
    expect(encodeItems([ended, queuedItem(1)])).toHaveLength(1);
  });

  it('keeps 10,000 running items near 1 MB, under the 2 MB payload limit that named fields pass', () => {
    const window = Array.from({ length: 10_000 }, (_, index) => running(index));
    const compact = JSON.stringify(encodeItems(window)).length;
    const named = JSON.stringify(window).length;
    console.log(`10,000 running items carried: ${compact} bytes compact, ${named} bytes with named fields`);
    expect(compact).toBeLessThan(1_500_000);
    expect(named).toBeGreaterThan(2_000_000);
  });
});
