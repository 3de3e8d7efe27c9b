/**
 * The flow of a pipeline's items between its stages (engine/pipeline-flow.ts), alone: which
 * pieces enter which stage's window, the bounded buffers and the back-pressure they make, a
 * failure ending a piece at its stage, and a transform's split and drop. The driver
 * (test/support/pipeline-driver.ts) plays the workflow; no server, no clock.
 */
import { describe, expect, it } from 'vitest';
import { MAX_SPLIT_PARTS } from '../../contracts/pipeline-input';
import {
  admit,
  failed,
  finished,
  flowDone,
  stageRoom,
  takeTransforms,
  transformed,
} from '../../engine/pipeline-flow';
import { type EndedPiece, newFlow } from '../../engine/pipeline-state';
import { expectBounds, play, running, stage, three } from '../support/pipeline-driver';

describe('admitting pieces', () => {
  it("fills the first stage's window from the items, within the next buffer's places", () => {
    const flow = newFlow([stage('a', 10, 0), stage('b', 2, 3)], [{ total: 20 }]);
    const [start] = admit(flow);
    // The window has 10 places, but the next buffer only 3: a finished piece always has its place.
    expect(start).toEqual({ stage: 0, pieces: expect.any(Array) });
    expect(start?.pieces.map((piece) => [piece.seq, piece.origin, piece.place])).toEqual([
      [0, 0, 'running'],
      [1, 1, 'running'],
      [2, 2, 'running'],
    ]);
    expect(stageRoom(flow, 0)).toBe(0);
    expect(admit(flow)).toEqual([]);
  });

  it("keeps to each stage's budget and to a page", () => {
    const flow = newFlow([stage('a', 10, 0), stage('b', 10, 20)], [{ total: 20 }]);
    expect(admit(flow, { allowed: [3, 5] }).map((start) => start.pieces.length)).toEqual([3]);
    expect(admit(flow, { pageSize: 4 }).map((start) => start.pieces.length)).toEqual([4]);
    expect(flow.stages[0]?.counts.started).toBe(7);
  });
});

describe('items flow as soon as they are ready', () => {
  it('the second stage starts an item while the first still runs the others', () => {
    const flow = newFlow([stage('a', 4, 0), stage('b', 4, 8)], [{ total: 12 }]);
    admit(flow);
    finished(flow, 0);
    const starts = admit(flow);
    expect(starts.find((start) => start.stage === 1)?.pieces.map((piece) => piece.origin)).toEqual([0]);
    expect(flow.stages[0]?.counts.completed).toBe(1);
    expect(flow.stages[0]?.source.next).toBeLessThan(12);
  });

  it('three stages overlap: the last completes items before the first has started them all', () => {
    const flow = newFlow(three, [{ total: 12 }]);
    const { ended, ticks } = play(flow, (_at, _tick, inWindow) => inWindow);
    const firstLast = ticks.findIndex((tick) => (tick.starts[2] ?? 0) > 0);
    const lastFirst = ticks.findLastIndex((tick) => (tick.starts[0] ?? 0) > 0);
    expect(firstLast).toBeLessThan(lastFirst);
    expect(ended.map((piece) => piece.origin).sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
    expect(ended.every((piece) => piece.outcome === 'completed' && piece.stageName === 'speak')).toBe(true);
  });
});

describe('back-pressure', () => {
  it('a slow last stage stops the stages before it: no buffer passes its bound', () => {
    const flow = newFlow(three, [{ total: 20 }]);
    // The first stage finishes all it holds each tick, the second one piece, the last one piece
    // every third tick.
    const { ended, ticks } = play(
      flow,
      (at, tick, inWindow) => [inWindow, 1, tick % 3 === 2 ? 1 : 0][at] ?? 0,
    );
    expect(ended).toHaveLength(20);
    // The last stage's buffer filled (the bound was reached, never passed: expectBounds).
    expect(Math.max(...ticks.map((tick) => tick.buffered[2] ?? 0))).toBe(2);
    // While it had no place left (its pieces and those the stage before holds) and the last stage
    // took none out, that stage started nothing; and it did start pieces at other times.
    const full = ticks.filter(
      (tick) => (tick.before.buffered[2] ?? 0) + (tick.before.running[1] ?? 0) >= 2 && tick.starts[2] === 0,
    );
    expect(full.length).toBeGreaterThan(0);
    for (const tick of full) expect(tick.starts[1]).toBe(0);
    expect(ticks.some((tick) => (tick.starts[1] ?? 0) > 0)).toBe(true);
    // And the first stage never ran ahead by more than the two buffers and windows hold.
    for (const tick of ticks) {
      const started =
        (tick.running[0] ?? 0) + (tick.buffered[1] ?? 0) + (tick.running[1] ?? 0) + (tick.buffered[2] ?? 0);
      expect(started).toBeLessThanOrEqual(4 + 2 + 1);
    }
  });
});

describe('a failure ends the item at its stage', () => {
  it('names the stage, and the item goes no further', () => {
    const flow = newFlow(three, [{ total: 3 }]);
    admit(flow);
    for (const seq of running(flow, 0)) finished(flow, seq);
    admit(flow);
    const ended = failed(flow, 1, { status: 'FAILED', reason: 'out of memory' });
    expect(ended).toEqual([
      {
        seq: 1,
        origin: 1,
        stage: 1,
        stageName: 'translate',
        outcome: 'failed',
        status: 'FAILED',
        reason: 'out of memory',
      },
    ]);
    // Two admitted, not three: the last stage's buffer has places for two.
    expect(flow.stages[1]?.counts).toMatchObject({ started: 2, failed: 1 });
    const rest = play(flow, (_at, _tick, inWindow) => inWindow).ended;
    expect(rest.map((piece) => piece.origin).sort()).toEqual([0, 2]);
  });
});

describe('a transform splits and drops', () => {
  const setups = [stage('detect', 4, 0), stage('crop', 4, 8, true), stage('upscale', 8, 16, true)];

  it('splits an item into pieces that carry their origin and part, and drops another', () => {
    const flow = newFlow(setups, [{ total: 3 }]);
    admit(flow);
    for (const seq of running(flow, 0)) finished(flow, seq);
    expect(admit(flow)).toEqual([]);
    const due = takeTransforms(flow, 10);
    expect(due.map((piece) => [piece.origin, piece.stage, piece.place])).toEqual([
      [0, 1, 'transforming'],
      [1, 1, 'transforming'],
      [2, 1, 'transforming'],
    ]);
    expect(transformed(flow, 0, 1).pieces.map((piece) => piece.seq)).toEqual([0]);
    const split = transformed(flow, 1, 3);
    expect(split.pieces.map(({ seq, origin, part }) => ({ seq, origin, part }))).toEqual([
      { seq: 3, origin: 1, part: [0] },
      { seq: 4, origin: 1, part: [1] },
      { seq: 5, origin: 1, part: [2] },
    ]);
    expect(transformed(flow, 2, 0).ended).toEqual([
      { seq: 2, origin: 2, stage: 1, stageName: 'crop', outcome: 'dropped' },
    ]);
    expect(flow.stages[1]?.counts).toMatchObject({ dropped: 1, split: 1, parts: 3 });
    expect(flow.pieces.has(1)).toBe(false);

    // A piece of a split is split again at the next stage: its part path grows.
    const ended: EndedPiece[] = [];
    for (let tick = 0; !flowDone(flow) && tick < 50; tick++) {
      admit(flow);
      for (const piece of takeTransforms(flow, 10))
        ended.push(
          ...transformed(flow, piece.seq, piece.origin === 1 && piece.part?.[0] === 1 ? 2 : 1).ended,
        );
      for (const at of [2, 1]) for (const seq of running(flow, at)) ended.push(...finished(flow, seq));
      expectBounds(flow);
    }
    expect(ended.map(({ origin, part, outcome }) => ({ origin, part, outcome }))).toEqual(
      expect.arrayContaining([
        { origin: 0, part: undefined, outcome: 'completed' },
        { origin: 1, part: [0], outcome: 'completed' },
        { origin: 1, part: [1, 0], outcome: 'completed' },
        { origin: 1, part: [1, 1], outcome: 'completed' },
        { origin: 1, part: [2], outcome: 'completed' },
      ]),
    );
    expect(ended).toHaveLength(5);
  });

  it('fails an item whose transform made too many parts', () => {
    const flow = newFlow(setups, [{ total: 1 }]);
    admit(flow);
    finished(flow, 0);
    takeTransforms(flow, 1);
    const { ended } = transformed(flow, 0, MAX_SPLIT_PARTS + 1);
    expect(ended).toMatchObject([
      { origin: 0, stage: 1, stageName: 'crop', outcome: 'failed', status: 'TRANSFORM_FAILED' },
    ]);
    expect(flowDone(flow)).toBe(true);
  });
});
