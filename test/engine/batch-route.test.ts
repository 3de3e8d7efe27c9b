/**
 * A batch over a route, its pure part (engine/batch-route.ts) with no server: which endpoint
 * the next page goes to and which items it takes, each endpoint's room, and an endpoint's drain
 * and recovery.
 */
import { describe, expect, it } from 'vitest';
import { endpointWindows, routeSchema } from '../../contracts/route';
import {
  afterCapacityFailure,
  afterPageAnswer,
  CAPACITY_FAILURES_TO_DRAIN,
  choiceOf,
  drained,
  type EndpointTally,
  endpointRooms,
  holdEndsAt,
  isHeld,
  isOpen,
  newEndpointTallies,
  type PagePlanInput,
  planPage,
  queueChecksDue,
  recovered,
  usefulPage,
} from '../../engine/batch-route';

const route = routeSchema.parse({
  endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }, { endpointId: 'c' }],
  queueDelayLimit: '10 seconds',
  recheckAfter: '30 seconds',
});

const plan = (extra: Partial<PagePlanInput>): ReturnType<typeof planPage> =>
  planPage({
    windows: [160, 160, 160],
    rooms: [100, 100, 100],
    free: 100,
    sends: [0, 0, 0],
    maxSends: 2,
    queued: [],
    fresh: 0,
    pageSize: 50,
    busy: true,
    budget: Number.POSITIVE_INFINITY,
    ...extra,
  });

describe("each endpoint's room", () => {
  it('is its window less its load; none while drained; a page at most while probing', () => {
    const tallies: EndpointTally[] = newEndpointTallies(3);
    const windows = endpointWindows(route, 100);
    expect(endpointRooms(windows, tallies, [30, 0, 100], 20, 0)).toEqual([70, 100, 0]);
    tallies[1] = drained(tallies[1] as EndpointTally, 0, 30_000);
    expect(endpointRooms(windows, tallies, [0, 0, 0], 20, 29_999)).toEqual([100, 0, 100]);
    tallies[1] = recovered(tallies[1] as EndpointTally, 30_000);
    expect(tallies[1]).toMatchObject({ probing: true });
    expect(tallies[1]).not.toHaveProperty('drainedUntil');
    expect(endpointRooms(windows, tallies, [0, 5, 0], 20, 30_000)).toEqual([100, 15, 100]);
  });

  it("follows the route's weights", () => {
    const weighted = routeSchema.parse({
      endpoints: [{ endpointId: 'a', weight: 3 }, { endpointId: 'b' }],
    });
    expect(endpointRooms(endpointWindows(weighted, 100), newEndpointTallies(2), [0, 0], 50, 0)).toEqual([
      75, 25,
    ]);
  });
});

describe("a paused endpoint's hold", () => {
  const fresh = (): EndpointTally => ({ completed: 0, failed: 0, moved: 0 });
  const paused = { paused: true, granted: false };
  const granted = { paused: false, granted: true };

  it.each([
    // [paused answers in a row, the hold's length after the last]: a job's no-room waits
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [7, 60_000],
    [20, 60_000],
  ])('after %i paused answers in a row lasts %i ms', (answers, length) => {
    let tally = fresh();
    let now = 0;
    for (let answer = 0; answer < answers; answer++) {
      // Each page sent once the hold before it is over.
      now = (tally.pausedHold?.until ?? now) + 10;
      tally = afterPageAnswer(tally, paused, now, now + 5);
    }
    expect(tally.pausedHold).toEqual({ tries: answers, until: now + 5 + length });
  });

  it('leaves the endpoint no room until it ends, without draining it', () => {
    const tallies = [afterPageAnswer(fresh(), paused, 0, 100), fresh()];
    const windows = [100, 100];
    expect(endpointRooms(windows, tallies, [0, 0], 20, 1_099)).toEqual([0, 100]);
    expect(isHeld(tallies[0] as EndpointTally, 1_099)).toBe(true);
    expect(isOpen(tallies[0] as EndpointTally, 1_099)).toBe(true);
    expect(endpointRooms(windows, tallies, [0, 0], 20, 1_100)).toEqual([100, 100]);
  });

  it.each([
    // [now, when the hold ends as the batch's next wake sees it]
    [0, 1_100],
    [1_099, 1_100],
    [1_100, undefined],
    [5_000, undefined],
  ])('at %i ms ends at %s', (now, end) => {
    expect(holdEndsAt(afterPageAnswer(fresh(), paused, 0, 100), now)).toBe(end);
    expect(holdEndsAt(fresh(), now)).toBeUndefined();
  });

  it('is kept as it is by a paused answer to a page sent before it began', () => {
    const held = afterPageAnswer(fresh(), paused, 0, 100);
    expect(afterPageAnswer(held, paused, 50, 120)).toBe(held);
    // Sent once it was over: the hold grows.
    expect(afterPageAnswer(held, paused, 1_100, 1_150).pausedHold).toEqual({ tries: 2, until: 3_150 });
  });

  it('ends at the first page there that is granted; an answer with nothing granted keeps it', () => {
    const held = afterPageAnswer(fresh(), paused, 0, 100);
    expect(afterPageAnswer(held, { paused: false, granted: false }, 1_100, 1_200)).toBe(held);
    const resumed = afterPageAnswer(held, granted, 1_100, 1_200);
    expect(resumed).not.toHaveProperty('pausedHold');
    expect(afterPageAnswer(resumed, paused, 1_300, 1_400).pausedHold).toEqual({ tries: 1, until: 2_400 });
  });
});

describe('the endpoint an item goes to', () => {
  it('is its own when that has room, else the first with room', () => {
    expect(choiceOf({ index: 1, endpoint: 1 }, [true, true, true])).toBe(1);
    expect(choiceOf({ index: 1 }, [false, true, true])).toBe(1);
    expect(choiceOf({ index: 1, endpoint: 2 }, [true, false, false])).toBe(0);
    expect(choiceOf({ index: 1 }, [false, false, false])).toBeUndefined();
  });

  it('for an item that moved, one after the endpoint it moved to before any earlier one', () => {
    // Moved from a (0) to b (1); b is full: c, not a again.
    expect(choiceOf({ index: 1, endpoint: 1, hops: 1 }, [true, false, true])).toBe(2);
    // Nothing after it has room: back to the first that has.
    expect(choiceOf({ index: 1, endpoint: 2, hops: 2 }, [true, true, false])).toBe(0);
  });
});

describe('the next page', () => {
  it('fills the first endpoint in route order before the next one', () => {
    expect(plan({ fresh: 500 })).toEqual({ endpoint: 0, queued: [], fresh: 50 });
    expect(plan({ fresh: 500, rooms: [0, 100, 100] })).toEqual({ endpoint: 1, queued: [], fresh: 50 });
  });

  it('sends queued items first, each to its own endpoint, then new ones', () => {
    const queued = [{ index: 7, endpoint: 1, hops: 1 }, { index: 3 }, { index: 9, endpoint: 1, hops: 1 }];
    expect(plan({ queued, fresh: 100 })).toEqual({ endpoint: 0, queued: [3], fresh: 49 });
    expect(plan({ queued, fresh: 100, sends: [2, 0, 0] })).toEqual({ endpoint: 1, queued: [7, 9], fresh: 0 });
  });

  it('sends no new item past an endpoint with room whose submits are all under way', () => {
    expect(plan({ fresh: 100, sends: [2, 0, 0] })).toBeUndefined();
  });

  it('bounds the page by the window, the page size and the budget', () => {
    expect(plan({ fresh: 500, free: 20 })).toEqual({ endpoint: 0, queued: [], fresh: 20 });
    expect(plan({ fresh: 500, rooms: [12, 100, 100] })).toEqual({ endpoint: 0, queued: [], fresh: 12 });
    expect(plan({ fresh: 500, budget: 3 })).toEqual({ endpoint: 0, queued: [], fresh: 3 });
    expect(plan({ fresh: 500, budget: 0 })).toBeUndefined();
    expect(plan({ fresh: 500, free: 0 })).toBeUndefined();
  });

  it('waits for a useful page (a sixteenth of its window) while something is under way, not when nothing is', () => {
    expect(plan({ fresh: 500, rooms: [5, 0, 0] })).toBeUndefined();
    expect(plan({ fresh: 500, rooms: [5, 0, 0], busy: false })).toEqual({
      endpoint: 0,
      queued: [],
      fresh: 5,
    });
    // Fewer waiting than a useful page: they go.
    expect(plan({ fresh: 3, rooms: [5, 0, 0] })).toEqual({ endpoint: 0, queued: [], fresh: 3 });
    // A small window's useful page is small too.
    expect(plan({ fresh: 500, rooms: [0, 0, 5], windows: [160, 160, 80] })).toEqual({
      endpoint: 2,
      queued: [],
      fresh: 5,
    });
    expect(usefulPage(160, 50)).toBe(10);
    expect(usefulPage(8, 50)).toBe(1);
  });

  it('sends an item whose endpoint is drained to another one', () => {
    const queued = [{ index: 4, endpoint: 0 }];
    expect(plan({ queued, rooms: [0, 100, 100] })).toEqual({ endpoint: 1, queued: [4], fresh: 0 });
  });
});

describe("an endpoint's drain", () => {
  it('after CAPACITY_FAILURES_TO_DRAIN capacity failures within recheckAfter', () => {
    let tally: EndpointTally = newEndpointTallies(1)[0] as EndpointTally;
    const times = [1_000, 40_000, 50_000, 60_000];
    const drains = times.map((at) => {
      const next = afterCapacityFailure(tally, at, 30_000);
      tally = next.tally;
      return next.drain;
    });
    // The first failure is over 30 s older than the third: not yet; the fourth drains it.
    expect(drains).toEqual([false, false, false, true]);
    expect(CAPACITY_FAILURES_TO_DRAIN).toBe(3);
    expect(tally).toEqual({ completed: 0, failed: 0, moved: 0, drainedUntil: 90_000 });
    expect(isOpen(tally, 89_999)).toBe(false);
    expect(isOpen(tally, 90_000)).toBe(true);
  });

  it('ends only when its time has come', () => {
    const tally = drained({ completed: 4, failed: 0, moved: 2, probing: true }, 10_000, 30_000);
    expect(tally).toEqual({ completed: 4, failed: 0, moved: 2, drainedUntil: 40_000 });
    expect(recovered(tally, 39_999)).toBe(tally);
    expect(recovered(tally, 40_000)).toEqual({ completed: 4, failed: 0, moved: 2, probing: true });
  });
});

describe("a queue's look at /health", () => {
  it("falls due when an endpoint's oldest job not seen started has waited queueDelayLimit", () => {
    const jobs = [
      { endpoint: 0, submittedAt: 5_000, queued: true },
      { endpoint: 0, submittedAt: 2_000, queued: false },
      { endpoint: 0, submittedAt: 3_000, queued: true },
      { endpoint: 2, submittedAt: 8_000, queued: true },
    ];
    expect(queueChecksDue(jobs, 3, 10_000, [])).toEqual([13_000, undefined, 18_000]);
  });

  it('no sooner than half the limit after the last look', () => {
    const jobs = [{ endpoint: 0, submittedAt: 1_000, queued: true }];
    expect(queueChecksDue(jobs, 1, 10_000, [12_000])).toEqual([17_000]);
  });
});
