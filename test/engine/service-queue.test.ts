import { describe, expect, it } from 'vitest';
import { RUN_WINDOW_MS, type ServiceQueue } from '../../contracts/endpoint-gate';
import { answerAsk, grantNow, initialGrants, takeReading } from '../../engine/endpoint-grants';
import { SEND_SLACK_MS } from '../../engine/send-window';
import {
  holdsQueue,
  newerReading,
  outranks,
  QUEUE_COVER_MS,
  QUEUE_READING_FRESH_MS,
  QUEUE_RETRY_MS,
  queueRoom,
  TAKEN_SPAN_MS,
  takenPerSecond,
} from '../../engine/service-queue';
import { waitingAsk } from '../support/waiting-ask';

/** An endpoint of 10 workers, all busy, 4 jobs waiting, read at time 1,000. */
function reading(fields: Partial<ServiceQueue> = {}): ServiceQueue {
  return { inQueue: 4, running: 10, idle: 0, workersMax: 10, at: 1_000, ...fields };
}

const ask = waitingAsk;

describe('holdsQueue', () => {
  it.each([
    ['every worker busy, read just now', reading(), 1_000, true],
    ['read as long ago as still counts', reading(), 1_000 + QUEUE_READING_FRESH_MS, true],
    ['read too long ago: its readers stopped asking', reading(), 1_001 + QUEUE_READING_FRESH_MS, false],
    ['every worker up, one idle', reading({ idle: 1, running: 9 }), 1_000, true],
    ['workers still starting (fewer up than the most it may have)', reading({ running: 6 }), 1_000, false],
    ['scaling up, some idle', reading({ idle: 3, running: 4 }), 1_000, false],
    ['workersMax unknown', reading({ workersMax: undefined }), 1_000, false],
    ['workersMax 0', reading({ workersMax: 0, running: 0 }), 1_000, false],
    ['no reading', undefined, 1_000, false],
  ])('%s: %s', (_, read, now, holds) => {
    expect(holdsQueue(read, now)).toBe(holds);
  });
});

describe('queueRoom', () => {
  it('is one job per worker, less what waits and what was granted since the reading', () => {
    // 10 - 4 waiting - 3 granted after the reading (the 5 granted before it are in inQueue).
    expect(
      queueRoom(
        reading(),
        [
          [900, 5],
          [1_100, 3],
        ],
        1_200,
      ),
    ).toBe(3);
    expect(queueRoom(reading({ inQueue: 30 }), [], 1_200)).toBe(0);
  });

  it('counts a job for each idle worker on top of the queue', () => {
    // A warm endpoint of 10 idle workers takes 10 jobs now and 10 to wait: the first window of a
    // backfill cannot fill the queue ahead of the jobs sent after it.
    expect(queueRoom(reading({ inQueue: 0, idle: 10, running: 0 }), [], 1_200)).toBe(20);
  });

  it('is unbounded while the queue is not held', () => {
    expect(queueRoom(reading({ idle: 2, running: 5 }), [], 1_200)).toBe(Number.POSITIVE_INFINITY);
    expect(queueRoom(undefined, [], 1_200)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('takenPerSecond', () => {
  it.each([
    // 4 waiting, 6 granted between, 2 waiting two seconds later: 8 taken in 2 s.
    ['queue and grants', reading({ inQueue: 4 }), reading({ inQueue: 2, at: 3_000 }), [[1_200, 6]], 4],
    ['grants before the first reading are in its count', reading(), reading({ at: 3_000 }), [[900, 5]], 0],
    ['grants after the second reading are not taken yet', reading(), reading({ at: 3_000 }), [[3_100, 5]], 0],
    [
      'a queue that grew by more than was granted',
      reading({ inQueue: 0 }),
      reading({ inQueue: 9, at: 3_000 }),
      [[1_100, 3]],
      0,
    ],
    ['readings too close together', reading(), reading({ at: 1_000 + TAKEN_SPAN_MS - 1 }), [], undefined],
  ] as const)('%s', (_, older, newer, log, perSecond) => {
    const taken = takenPerSecond(
      older,
      newer,
      log.map(([at, count]) => [at, count]),
    );
    if (perSecond === undefined) expect(taken).toBeUndefined();
    else expect(taken).toBeCloseTo(perSecond);
  });
});

describe('takeReading', () => {
  it('measures from the reading it last measured from, past readings that came too close', () => {
    const state = initialGrants();
    takeReading(state, reading({ inQueue: 40, at: 1_000 }));
    expect(state.takenPerSecond).toBeUndefined();
    // Another reading half a second later: kept as the newest, too close to measure from.
    takeReading(state, reading({ inQueue: 36, at: 1_500 }));
    expect(state.queue?.at).toBe(1_500);
    expect(state.takenPerSecond).toBeUndefined();
    // Two seconds after the first: 40 - 20 taken.
    takeReading(state, reading({ inQueue: 20, at: 3_000 }));
    expect(state.takenPerSecond).toBeCloseTo(10);
    expect(state.takenFrom?.at).toBe(3_000);
    // An older reading changes nothing.
    takeReading(state, reading({ inQueue: 0, at: 2_500 }));
    expect(state.queue?.at).toBe(3_000);
    expect(state.takenPerSecond).toBeCloseTo(10);
  });

  it('starts a new measure after a pause in the readings', () => {
    const state = initialGrants();
    takeReading(state, reading({ at: 1_000 }));
    takeReading(state, reading({ at: 3_000, inQueue: 0 }));
    expect(state.takenPerSecond).toBeCloseTo(2);
    // Past what the grants' log holds: the queue's change would say nothing of the grants.
    takeReading(state, reading({ at: 3_001 + RUN_WINDOW_MS }));
    expect(state.takenPerSecond).toBeUndefined();
  });
});

describe('queueRoom for short jobs', () => {
  it('holds what the workers take in QUEUE_COVER_MS when that is more than one per worker', () => {
    // 10 workers taking 50 jobs a second (jobs of 200 ms): a queue of 10 would run dry between two
    // readings; it holds 50, less the 4 waiting.
    const perSecond = 50;
    expect(QUEUE_COVER_MS).toBe(1_000);
    expect(queueRoom(reading(), [], 1_200, perSecond)).toBe(46);
    // Long jobs: one per worker is more.
    expect(queueRoom(reading(), [], 1_200, 2)).toBe(6);
  });
});

describe('newerReading', () => {
  it('keeps the newest of the readings that reach the gate from several processes', () => {
    const older = reading({ at: 500, inQueue: 9 });
    const newer = reading({ at: 900, inQueue: 1 });
    expect(newerReading(older, newer)).toBe(newer);
    expect(newerReading(newer, older)).toBe(newer);
    expect(newerReading(newer, undefined)).toBe(newer);
    expect(newerReading(undefined, older)).toBe(older);
  });
});

describe('the gate with the service queue held', () => {
  it('grants the room the queue has, highest priority first, and looks again soon for more', () => {
    const state = initialGrants();
    state.queue = reading({ inQueue: 7 });
    const waiting = [
      ask('backfill', { priority: 5, count: 50 }),
      ask('interactive', { priority: 1, count: 1, arrivedAt: 5 }),
      ask('backfill-next-page', { priority: 5, count: 50, arrivedAt: 10 }),
    ];
    const { answers, nextAt } = grantNow(state, waiting, 1_100, 1_000);
    // 3 places in the queue: the interactive job's 1, then 2 of the backfill's first page.
    expect(answers).toEqual([
      { id: 'interactive', count: 1, at: 1_100, sendBy: 1_100 + SEND_SLACK_MS },
      { id: 'backfill', count: 2, at: 1_100, sendBy: 1_100 + SEND_SLACK_MS },
    ]);
    expect(waiting.map((waiter) => waiter.id)).toEqual(['backfill-next-page']);
    // The window has room: the queue, read again in a moment, is what the next page waits for.
    expect(nextAt).toBe(1_100 + QUEUE_RETRY_MS);
  });

  it('lets an ask above every other waiting go a tenth of the workers past a full queue, and no further', () => {
    const state = initialGrants();
    // 100 workers, all busy, 100 waiting: the queue is full.
    state.queue = reading({ inQueue: 100, running: 100, workersMax: 100 });
    const waiting = [
      ask('backfill', { priority: 5, count: 50 }),
      ...Array.from({ length: 12 }, (_, k) =>
        ask(`interactive-${k}`, { priority: 1, count: 1, arrivedAt: 5 + k }),
      ),
    ];
    const { answers, nextAt } = grantNow(state, waiting, 1_100, 1_000);
    // Ten of the interactive jobs go at once (a tenth of 100 workers); two wait with the backfill.
    expect(answers.map((answer) => answer.id)).toEqual(
      Array.from({ length: 10 }, (_, k) => `interactive-${k}`),
    );
    expect(waiting.map((waiter) => waiter.id)).toEqual(['backfill', 'interactive-10', 'interactive-11']);
    expect(nextAt).toBe(1_100 + QUEUE_RETRY_MS);
    // The next reading finds them in the queue: the backfill waits until the workers take them.
    takeReading(state, reading({ inQueue: 110, running: 100, workersMax: 100, at: 1_200 }));
    expect(queueRoom(state.queue, state.log, 1_300)).toBe(0);
  });

  it('keeps an ask to the queue size when it is alone or among asks of its own priority', () => {
    expect(outranks({ priority: 1 }, [{ priority: 1 }])).toBe(false);
    expect(outranks({ priority: 3 }, [{ priority: 3 }, { priority: 3 }])).toBe(false);
    expect(outranks({ priority: 3 }, [{ priority: 3 }, { priority: 5 }])).toBe(true);
    expect(outranks({ priority: 3 }, [{ priority: 1 }, { priority: 5 }])).toBe(false);
    const state = initialGrants();
    state.queue = reading({ inQueue: 10 });
    const { answers } = grantNow(state, [ask('page', { priority: 1, count: 5 })], 1_100, 1_000);
    expect(answers).toEqual([]);
  });

  it('grants the window as before while the endpoint scales up', () => {
    const state = initialGrants();
    state.queue = reading({ inQueue: 7, idle: 1, running: 5 });
    const { answers } = grantNow(state, [ask('backfill', { count: 50 })], 1_100, 1_000);
    expect(answers.map((answer) => answer.count)).toEqual([50]);
  });

  it('takes the reading an ask brings and answers with when to ask again while the queue is full', () => {
    const state = initialGrants();
    const full = answerAsk(
      state,
      { id: 'page', count: 20, priority: 3, fairnessKey: '', weight: 1 },
      1_100,
      1_000,
      reading({ inQueue: 10 }),
    );
    expect(full).toEqual({ retryAt: 1_100 + QUEUE_RETRY_MS });
    // The workers took 6 jobs: the next reading, brought by the same ask asked again, has room.
    const granted = answerAsk(
      state,
      { id: 'page', count: 20, priority: 3, fairnessKey: '', weight: 1 },
      1_700,
      1_000,
      reading({ inQueue: 4, at: 1_600 }),
    );
    expect(granted).toEqual({ grant: { id: 'page', count: 6, at: 1_700, sendBy: 1_700 + SEND_SLACK_MS } });
  });

  it('holds nothing back once the readings stop coming', () => {
    const state = initialGrants();
    state.queue = reading({ inQueue: 50 });
    const { answers } = grantNow(state, [ask('page', { count: 20 })], 1_001 + QUEUE_READING_FRESH_MS, 1_000);
    expect(answers.map((answer) => answer.count)).toEqual([20]);
  });
});
