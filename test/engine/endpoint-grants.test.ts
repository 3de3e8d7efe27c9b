import { describe, expect, it } from 'vitest';
import { ASK_WAIT_MS, type ServiceQueue } from '../../contracts/endpoint-gate';
import {
  answerAsk,
  carriedGrants,
  type GrantsState,
  grantNow,
  initialGrants,
  joinKey,
  SPARE_MAX,
  SPARE_MS,
  takeSpare,
  tidy,
  type WaitingAsk,
} from '../../engine/endpoint-grants';
import { RUN_WINDOW_MS, SEND_SLACK_MS } from '../../engine/send-window';
import { waitingAsk } from '../support/waiting-ask';

const SPAN = RUN_WINDOW_MS + SEND_SLACK_MS;

const ask = waitingAsk;

/** Joins each ask as the gate does when it takes it, then grants at `now`. */
function take(state: GrantsState, waiting: WaitingAsk[], asks: WaitingAsk[]): void {
  for (const next of asks) {
    joinKey(state, next.fairnessKey, waiting, next.arrivedAt);
    waiting.push(next);
  }
}

describe('grantNow', () => {
  it('grants at once what the window holds, and the rest of an ask as a smaller grant', () => {
    const state = initialGrants();
    const waiting = [ask('a', { count: 30 }), ask('b', { count: 30, arrivedAt: 1 })];
    const { answers, nextAt } = grantNow(state, waiting, 1_000, 40);
    expect(answers).toEqual([
      { id: 'a', count: 30, at: 1_000, sendBy: 1_000 + SEND_SLACK_MS },
      { id: 'b', count: 10, at: 1_000, sendBy: 1_000 + SEND_SLACK_MS },
    ]);
    expect(waiting).toEqual([]);
    expect(nextAt).toBeUndefined();
    expect(state.log).toEqual([[1_000, 40]]);
  });

  it('holds an ask while the window is full and looks again when its oldest grant leaves', () => {
    const state = initialGrants();
    grantNow(state, [ask('first', { count: 40 })], 1_000, 40);
    const waiting = [ask('second')];
    const held = grantNow(state, waiting, 2_000, 40);
    expect(held).toEqual({ answers: [], nextAt: 1_000 + SPAN });
    expect(grantNow(state, waiting, 1_000 + SPAN, 40).answers).toEqual([
      { id: 'second', count: 10, at: 1_000 + SPAN, sendBy: 1_000 + SPAN + SEND_SLACK_MS },
    ]);
  });

  it('serves a higher priority first, whatever came before it', () => {
    const state = initialGrants();
    const waiting = [
      ask('backfill', { priority: 5, arrivedAt: 0 }),
      ask('default', { priority: 3, arrivedAt: 1 }),
      ask('interactive', { priority: 1, arrivedAt: 2, count: 1 }),
    ];
    const { answers } = grantNow(state, waiting, 5, 11);
    expect(answers.map(({ id, count }) => [id, count])).toEqual([
      ['interactive', 1],
      ['default', 10],
    ]);
    expect(waiting.map(({ id }) => id)).toEqual(['backfill']);
  });

  it('shares the window between fairness keys by weight', () => {
    const state = initialGrants();
    const waiting: WaitingAsk[] = [];
    let now = 0;
    const got: Record<string, number> = { light: 0, heavy: 0 };
    // Each key always has asks waiting; the window holds 30 requests, asked 10 at a time.
    for (let round = 0; round < 60; round++) {
      for (const [key, weight] of [
        ['light', 1],
        ['heavy', 2],
      ] as const) {
        while (waiting.filter((waiter) => waiter.fairnessKey === key).length < 3) {
          take(state, waiting, [
            ask(`${key}-${round}-${waiting.length}`, { fairnessKey: key, weight, arrivedAt: now }),
          ]);
        }
      }
      const { answers } = grantNow(state, waiting, now, 30);
      for (const answer of answers) {
        const key = answer.id.split('-')[0] as string;
        got[key] = (got[key] ?? 0) + answer.count;
      }
      now += SPAN;
    }
    const share = (got.heavy ?? 0) / ((got.heavy ?? 0) + (got.light ?? 0));
    expect(share).toBeGreaterThan(0.6);
    expect(share).toBeLessThan(0.73);
  });

  it('starts a key that was idle level with the keys waiting, not with what it did not use', () => {
    const state = initialGrants();
    const waiting: WaitingAsk[] = [];
    take(state, waiting, [ask('a1', { fairnessKey: 'a', count: 30 })]);
    grantNow(state, waiting, 0, 30);
    take(state, waiting, [ask('a2', { fairnessKey: 'a', count: 30 })]);
    state.served.a = 300;
    // b comes late: it starts at a's level, so the two alternate instead of b taking 10 windows.
    take(state, waiting, [ask('b1', { fairnessKey: 'b', count: 30, arrivedAt: 1 })]);
    expect(state.served.b).toBe(300);
  });

  it('answers an ask that waited its time with nothing, and grants nothing while paused', () => {
    const state = { ...initialGrants(), paused: true };
    const waiting = [ask('a', { giveUpAt: 5_000 })];
    expect(grantNow(state, waiting, 1_000, 40)).toEqual({ answers: [], nextAt: 5_000 });
    expect(grantNow(state, waiting, 5_000, 40).answers).toEqual([
      { id: 'a', count: 0, at: 5_000, sendBy: 5_000 + SEND_SLACK_MS },
    ]);
  });

  it("keeps to the operator's limit over the workloads' own", () => {
    const state = { ...initialGrants(), limitOverride: 5 };
    const { answers } = grantNow(state, [ask('a')], 0, 40);
    expect(answers[0]?.count).toBe(5);
  });
});

describe('carriedGrants', () => {
  it('keeps the window and the differences between the shares only', () => {
    const state: GrantsState = {
      ...initialGrants(),
      log: [[5, 10]],
      served: { a: 100, b: 130, c: 100 },
    };
    expect(carriedGrants(state)).toMatchObject({ log: [[5, 10]], served: { b: 30 } });
  });
});

describe('answerAsk', () => {
  const asked = (id: string, fields: Partial<WaitingAsk> = {}) => {
    const { arrivedAt: _arrived, giveUpAt: _giveUp, ...rest } = ask(id, fields);
    return rest;
  };

  it('grants at once while there is room, and says when to ask again while there is none', () => {
    const state = initialGrants();
    expect(answerAsk(state, asked('a', { count: 40 }), 1_000, 40)).toEqual({
      grant: { id: 'a', count: 40, at: 1_000, sendBy: 1_000 + SEND_SLACK_MS },
    });
    expect(answerAsk(state, asked('b'), 2_000, 40)).toEqual({ retryAt: 1_000 + SPAN });
    expect(state.waiting.map(({ id }) => id)).toEqual(['b']);
    // Asked again when room came back: granted, and no longer waiting.
    expect(answerAsk(state, asked('b'), 1_000 + SPAN, 40)).toMatchObject({ grant: { id: 'b', count: 10 } });
    expect(state.waiting).toEqual([]);
  });

  it('earmarks room for the ask first in order, whoever asks, and counts it from its claim', () => {
    const state = initialGrants();
    answerAsk(state, asked('fill', { count: 40 }), 0, 40);
    answerAsk(state, asked('urgent', { priority: 1, count: 5 }), 100, 40);
    // The backfill asks first once room is back: the urgent ask gets the room, earmarked for it.
    expect(answerAsk(state, asked('backfill', { priority: 5, count: 40 }), SPAN, 40)).toMatchObject({
      grant: { id: 'backfill', count: 35 },
    });
    expect(state.earmarks.urgent).toEqual({ id: 'urgent', count: 5, at: SPAN, sendBy: SPAN + SEND_SLACK_MS });
    expect(answerAsk(state, asked('urgent', { priority: 1, count: 5 }), SPAN + 100, 40)).toEqual({
      grant: { id: 'urgent', count: 5, at: SPAN + 100, sendBy: SPAN + 100 + SEND_SLACK_MS },
    });
    // Its 5 count in the window from the claim: 35 at SPAN, 5 at SPAN + 100.
    expect(state.log).toEqual([
      [SPAN, 35],
      [SPAN + 100, 5],
    ]);
  });

  it('takes an earmark its caller never claimed out of the window: it was never sent', () => {
    const state = initialGrants();
    answerAsk(state, asked('fill', { count: 40 }), 0, 40);
    answerAsk(state, asked('gone', { count: 10 }), 100, 40);
    answerAsk(state, asked('other', { count: 10 }), 200, 40);
    // Room back: both earmarked (gone first), each for 10.
    answerAsk(state, asked('other', { count: 10 }), SPAN, 40);
    expect(Object.keys(state.earmarks)).toEqual(['gone']);
    // Unclaimed for 2 s, gone's 10 leave the window: 10 held.
    tidy(state, SPAN + 2_001);
    expect(state.earmarks).toEqual({});
    expect(state.log).toEqual([[SPAN, 10]]);
  });

  it('drops an ask whose caller gave up, and asks again within 2 s while paused, saying so', () => {
    const state = { ...initialGrants(), paused: true };
    expect(answerAsk(state, asked('a'), 0, 40)).toEqual({ retryAt: 2_000, paused: true });
    tidy(state, ASK_WAIT_MS);
    expect(state.waiting).toEqual([]);
  });
});

describe('answerAsk, asked again', () => {
  it('keeps what a key has served when it asks again right after a grant (one ask at a time per key)', () => {
    const state = initialGrants();
    const of = (id: string, key: string, weight: number) => ({
      id,
      count: 20,
      priority: 3,
      fairnessKey: key,
      weight,
    });
    const got: Record<string, number> = { light: 0, heavy: 0 };
    const ids: Record<string, number> = { light: 0, heavy: 0 };
    // Each key has one ask at a time, asked again at once when granted, as one lane of a worker does.
    for (let now = 0; now < 8 * SPAN; now += SPAN) {
      for (let turn = 0; turn < 3; turn++) {
        for (const [key, weight] of [
          ['light', 1],
          ['heavy', 3],
        ] as const) {
          const answer = answerAsk(state, of(`${key}-${ids[key]}`, key, weight), now + turn, 20);
          if ('grant' in answer) {
            got[key] = (got[key] ?? 0) + answer.grant.count;
            ids[key] = (ids[key] ?? 0) + 1;
          }
        }
      }
    }
    const share = (got.heavy ?? 0) / ((got.heavy ?? 0) + (got.light ?? 0));
    expect(share).toBeGreaterThanOrEqual(0.675);
    expect(share).toBeLessThanOrEqual(0.825);
  });

  it('keeps an ask its caller keeps asking in its place: it is not overtaken at the next window', () => {
    const state = initialGrants();
    const of = (id: string, key: string, weight: number) => ({
      id,
      count: 20,
      priority: 3,
      fairnessKey: key,
      weight,
    });
    expect(answerAsk(state, of('light', 'light', 1), 0, 20)).toMatchObject({ grant: { count: 20 } });
    // heavy asks while the window is full, light asks again for more.
    expect(answerAsk(state, of('heavy', 'heavy', 3), 0, 20)).toEqual({ retryAt: SPAN });
    expect(answerAsk(state, of('light-2', 'light', 1), 0, 20)).toEqual({ retryAt: SPAN });
    // Both ask again as room comes back (past the first asks' giveUpAt): heavy, served least for
    // its weight and first in place, gets the window whoever asks first.
    expect(answerAsk(state, of('light-2', 'light', 1), SPAN + 1, 20)).toMatchObject({
      retryAt: expect.any(Number),
    });
    expect(answerAsk(state, of('heavy', 'heavy', 3), SPAN + 2, 20)).toMatchObject({ grant: { count: 20 } });
  });
});

describe('spare room', () => {
  const asked = (id: string, fields: Partial<WaitingAsk> = {}) => {
    const { arrivedAt: _arrived, giveUpAt: _giveUp, ...rest } = ask(id, fields);
    return rest;
  };
  /** Every worker of 100 busy, so the gate holds the service's queue (room: 100 queued, less what waits). */
  const held = (inQueue: number): ServiceQueue => ({
    inQueue,
    running: 100,
    idle: 0,
    workersMax: 100,
    at: 0,
  });

  it('goes with an ask granted at once on an idle endpoint, counted now and held past the log', () => {
    const state = initialGrants();
    expect(answerAsk(state, asked('single', { count: 1 }), 0, 1_000)).toEqual({
      grant: {
        id: 'single',
        count: 1,
        at: 0,
        sendBy: SEND_SLACK_MS,
        spare: { count: SPARE_MAX, until: SPARE_MS },
      },
    });
    expect(state.log).toEqual([[0, 1 + SPARE_MAX]]);
    expect(state.granted['']).toBe(1 + SPARE_MAX);
    // Once the grant leaves the log, the spare is still held: its requests may go out until
    // SPARE_MS and count for a window and slack after that.
    const waiting = [ask('page', { count: 1_000 })];
    expect(grantNow(state, waiting, SPAN, 1_000).answers).toMatchObject([
      { id: 'page', count: 1_000 - SPARE_MAX },
    ]);
    const later = [ask('next', { count: 1_000 })];
    expect(grantNow(state, later, SPAN + 1, 1_000).nextAt).toBe(SPARE_MS + SPAN);
    tidy(state, SPARE_MS + SPAN);
    expect(state.spares).toEqual([]);
  });

  it.each<[string, (state: GrantsState) => void, number, ServiceQueue | undefined]>([
    [
      'a lower priority waits for the queue (the ask goes past it)',
      (state) => void answerAsk(state, asked('backfill', { priority: 5 }), 0, 1_000, held(100)),
      1_000,
      held(100),
    ],
    ['the gate is paused', (state) => void Object.assign(state, { paused: true }), 1_000, undefined],
    ['the window is small (a tenth of its room is under one request)', () => undefined, 9, undefined],
    [
      'the window holds a tenth of its limit already (a workload keeps asking)',
      (state) => void answerAsk(state, asked('page', { count: 99 }), 0, 1_000),
      1_000,
      undefined,
    ],
    ["the service's queue is nearly full", () => undefined, 1_000, held(95)],
  ])('is none while %s', (_case, before, limit, reading) => {
    const state = initialGrants();
    before(state);
    const answer = answerAsk(state, asked('single', { count: 1, priority: 1 }), 10, limit, reading);
    expect(answer).toMatchObject(state.paused ? { retryAt: expect.any(Number) } : { grant: { count: 1 } });
    expect('grant' in answer ? answer.grant.spare : undefined).toBeUndefined();
    expect(state.spares).toEqual([]);
  });

  it('is none for an ask of more than a few requests (a page), and none again while the window holds spares', () => {
    const state = initialGrants();
    const page = answerAsk(state, asked('page', { count: SPARE_MAX + 1 }), 0, 1_000);
    expect('grant' in page && page.grant.spare).toBeFalsy();
    // Small asks one after another: each takes a spare until the window holds a tenth of its limit.
    let spares = 0;
    for (let k = 0; k < 20; k++) {
      const answer = answerAsk(state, asked(`single-${k}`, { count: 1 }), 1 + k, 1_000);
      if ('grant' in answer && answer.grant.spare) spares += 1;
    }
    expect(spares).toBeGreaterThan(0);
    // At most a tenth of the window, then one more ask and its spare.
    expect(state.log.reduce((sum, [, count]) => sum + count, 0)).toBeLessThanOrEqual(100 + 1 + SPARE_MAX);
  });

  it('is none for an ask that had to wait: it found the endpoint busy', () => {
    const state = initialGrants();
    answerAsk(state, asked('fill', { count: 1_000 }), 0, 1_000);
    expect(answerAsk(state, asked('single', { count: 1 }), 100, 1_000)).toEqual({ retryAt: SPAN });
    const granted = answerAsk(state, asked('single', { count: 1 }), SPAN, 1_000);
    expect(granted).toMatchObject({ grant: { count: 1 } });
    expect('grant' in granted && granted.grant.spare).toBeFalsy();
  });

  it.each<[string, { count: number; until: number } | undefined, number, number, number | undefined]>([
    ['none held', undefined, 1, 0, undefined],
    ['holds the request', { count: 3, until: 5_000 }, 1, 4_999, 2],
    ['holds a page whole', { count: 3, until: 5_000 }, 3, 0, 0],
    ['a page larger than it holds is not cut', { count: 3, until: 5_000 }, 4, 0, 3],
    ['past its time', { count: 3, until: 5_000 }, 1, 5_000, 3],
  ])('is taken by the asking process when it %s', (_case, spare, count, now, left) => {
    const held = spare === undefined ? undefined : { ...spare };
    const taken = takeSpare(held, count, now);
    const expected = left !== undefined && held !== undefined && left < spare!.count;
    expect(taken).toEqual(expected ? { count, at: now, sendBy: now + SEND_SLACK_MS } : undefined);
    expect(held?.count).toBe(left);
  });
});
