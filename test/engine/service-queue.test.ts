import { describe, expect, it } from 'vitest';
import type { ServiceQueue } from '../../contracts/endpoint-gate';
import { answerAsk, grantNow, initialGrants } from '../../engine/endpoint-grants';
import { SEND_SLACK_MS } from '../../engine/send-window';
import {
  holdsQueue,
  newerReading,
  QUEUE_READING_FRESH_MS,
  QUEUE_RETRY_MS,
  queueRoom,
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
      1_600,
      1_000,
      reading({ inQueue: 4, at: 1_550 }),
    );
    expect(granted).toEqual({ grant: { id: 'page', count: 6, at: 1_600, sendBy: 1_600 + SEND_SLACK_MS } });
  });

  it('holds nothing back once the readings stop coming', () => {
    const state = initialGrants();
    state.queue = reading({ inQueue: 50 });
    const { answers } = grantNow(state, [ask('page', { count: 20 })], 1_001 + QUEUE_READING_FRESH_MS, 1_000);
    expect(answers.map((answer) => answer.count)).toEqual([20]);
  });
});
