/**
 * A pipeline's flow stopped, redriven from the stage its items failed at, and carried through
 * continue-as-new (engine/pipeline-flow.ts, engine/pipeline-carry.ts). The driver
 * (test/support/pipeline-driver.ts) plays the workflow; no server, no clock.
 */
import { describe, expect, it } from 'vitest';
import { carryFlow, redriveFlow, redriveSources, resumeFlow } from '../../engine/pipeline-carry';
import {
  admit,
  failed,
  finished,
  flowDone,
  named,
  stopStarting,
  takeTransforms,
  transformed,
} from '../../engine/pipeline-flow';
import { buffered, type EndedPiece, newFlow, type PipelineFlow } from '../../engine/pipeline-state';
import { expectBounds, play, running, stage, three } from '../support/pipeline-driver';

describe('a stop', () => {
  it('ends the buffered pieces where they wait and gives back the items never started', () => {
    const flow = newFlow(three, [{ total: 10 }]);
    admit(flow);
    for (const seq of running(flow, 0)) finished(flow, seq);
    admit(flow);
    // Stage 1 admits two (the last buffer's places), two wait before it, and stage 0 admits the
    // two its next buffer still has places for.
    expect([flow.stages[0]?.running, flow.stages[1]?.running, buffered(flow.stages[1]!)]).toEqual([2, 2, 2]);
    const { ended, unstarted } = stopStarting(flow);
    expect(ended.map(({ origin, stageName, outcome }) => [origin, stageName, outcome])).toEqual([
      [2, 'translate', 'not-started'],
      [3, 'translate', 'not-started'],
    ]);
    expect(unstarted).toEqual([{ stage: 0, from: 6, count: 4 }]);
    expect(admit(flow)).toEqual([]);
    // A piece that finishes a stage now ends before the next one, not started there.
    expect(finished(flow, 4)).toMatchObject([
      { origin: 4, stage: 1, stageName: 'translate', outcome: 'not-started' },
    ]);
    // Pieces in a window end through the per-item engine.
    expect(failed(flow, 0, { status: 'CANCELLED' })).toMatchObject([
      { origin: 0, stage: 1, outcome: 'failed' },
    ]);
  });

  it('up to a stage (its budget share spent): the stages after it drain what they hold', () => {
    const flow = newFlow(three, [{ total: 10 }]);
    admit(flow);
    for (const seq of running(flow, 0).slice(0, 2)) finished(flow, seq);
    admit(flow);
    for (const seq of running(flow, 1)) finished(flow, seq);
    expect(buffered(flow.stages[2]!)).toBe(2);
    stopStarting(flow, 1);
    const starts = admit(flow);
    expect(starts.map((start) => start.stage)).toEqual([2]);
    expect(flow.stages.map((current) => current.stopped)).toEqual([true, true, false]);
  });
});

describe('a redrive', () => {
  it('starts each failed item at the stage it failed at, not from the beginning', () => {
    // The first run: item 3 fails at the second stage, the others complete.
    const first = newFlow(three, [{ total: 6 }]);
    const completed: EndedPiece[] = [];
    const failures: EndedPiece[] = [];
    for (let tick = 0; !flowDone(first) && tick < 100; tick++) {
      admit(first);
      for (const at of [2, 1, 0])
        for (const seq of running(first, at)) {
          if (at === 1 && first.pieces.get(seq)?.origin === 3)
            failures.push(...failed(first, seq, { status: 'FAILED', reason: 'boom' }));
          else completed.push(...finished(first, seq));
        }
    }
    expect(completed.map((piece) => piece.origin).sort()).toEqual([0, 1, 2, 4, 5]);
    expect(failures).toMatchObject([{ origin: 3, stageName: 'translate', outcome: 'failed' }]);

    const lines = failures.map(({ origin, part, stageName }) => ({
      origin,
      ...(part ? { part } : {}),
      stage: stageName,
    }));
    const sources = redriveSources(
      lines,
      three.map((setup) => setup.name),
    );
    if (!sources.ok) throw new Error(sources.rule);
    expect(sources.lists).toEqual([[], [{ origin: 3 }], []]);

    const redrive = newFlow(three, sources.sources);
    const [start] = admit(redrive);
    expect(start).toEqual({ stage: 1, pieces: [], listed: { from: 0, count: 1 } });
    const [piece] = named(redrive, 1, sources.lists[1] ?? []);
    expect(piece).toMatchObject({ origin: 3, stage: 1, place: 'running' });
    const rest = play(redrive, (_at, _tick, inWindow) => inWindow);
    expect(rest.ended).toMatchObject([{ origin: 3, stageName: 'speak', outcome: 'completed' }]);
    // The first stage never ran it again.
    expect(redrive.stages.map((current) => current.counts.started)).toEqual([0, 1, 1]);
  });

  it('numbers its pieces: listed ones by their entries, its transforms due waiting before their stage', () => {
    const withTransform = [stage('detect', 2, 0), stage('crop', 2, 2, true), stage('upscale', 2, 2)];
    const sources = redriveSources(
      [
        { origin: 4, stage: 'upscale', part: [1], seq: 17 },
        { origin: 2, stage: 'crop', seq: 9 },
      ],
      withTransform.map((setup) => setup.name),
    );
    if (!sources.ok) throw new Error(sources.rule);
    // Each entry keeps its number in the pipeline redriven: its previous stage's line is under it.
    expect(sources.lists).toEqual([[], [{ origin: 2, was: 9 }], [{ origin: 4, part: [1], was: 17 }]]);
    // The redrive numbered them 0 and 1; crop's transform failed, so item 2 waits for it again.
    const flow = redriveFlow(withTransform, [{ total: 0 }, { total: 0 }, { total: 1, listed: true }], 2, [
      { seq: 0, origin: 2, stage: 1 },
    ]);
    expect(takeTransforms(flow, 10)).toMatchObject([{ seq: 0, origin: 2, stage: 1, place: 'transforming' }]);
    const [start] = admit(flow);
    expect(start).toEqual({ stage: 2, pieces: [], listed: { from: 0, count: 1 } });
    expect(named(flow, 2, [{ seq: 1, origin: 4, part: [1] }])).toMatchObject([
      { seq: 1, origin: 4, part: [1], stage: 2, place: 'running' },
    ]);
    // A split made now numbers its parts after the redrive's.
    const { pieces } = transformed(flow, 0, 2);
    expect(pieces.map((piece) => piece.seq)).toEqual([2, 3]);
  });

  it('refuses a line naming no stage of the pipeline', () => {
    expect(redriveSources([{ origin: 1, stage: 'dub' }], ['transcribe'])).toEqual({
      ok: false,
      rule: 'a line of item 1 names stage "dub": not a stage of the pipeline',
    });
  });
});

describe('continue-as-new', () => {
  it('carries the flow mid-way, and the next run goes on as this one would have', () => {
    const setups = [stage('detect', 4, 0), stage('crop', 4, 8, true), stage('upscale', 2, 4)];
    const flow = newFlow(setups, [{ total: 9 }]);
    admit(flow);
    for (const seq of running(flow, 0)) finished(flow, seq);
    admit(flow);
    const [first, second] = takeTransforms(flow, 2);
    transformed(flow, first!.seq, 2);
    admit(flow);
    expect(second?.place).toBe('transforming');

    const carry = JSON.parse(JSON.stringify(carryFlow(flow)));
    const resumed = resumeFlow(setups, carry);
    // A transform under way crosses as due: it runs again in the next run (it writes by key).
    expect(resumed.pieces.get(second!.seq)?.place).toBe('transform-due');
    expect(resumed.stages.map((current) => [current.running, current.waiting, current.counts])).toEqual(
      flow.stages.map((current) => [current.running, current.waiting, current.counts]),
    );
    expect(resumed.nextSeq).toBe(flow.nextSeq);

    const finish = (current: PipelineFlow) => {
      const ended: EndedPiece[] = [];
      for (let tick = 0; !flowDone(current) && tick < 100; tick++) {
        admit(current);
        for (const piece of takeTransforms(current, 10))
          ended.push(...transformed(current, piece.seq, 1).ended);
        for (const at of [2, 1, 0])
          for (const seq of running(current, at)) ended.push(...finished(current, seq));
        expectBounds(current);
      }
      return ended.map(({ seq, origin, part, outcome }) => ({ seq, origin, part, outcome }));
    };
    const original = flow;
    original.pieces.get(second!.seq)!.place = 'transform-due';
    original.stages[1]!.transforming--;
    original.stages[1]!.transformDue.unshift(second!.seq);
    expect(finish(resumed)).toEqual(finish(original));
  });

  it('stays small: the largest flow crosses in well under the payload limit', () => {
    const flow = newFlow(
      [stage('a', 5_000, 0), stage('b', 5_000, 10_000), stage('c', 1, 10_000)],
      [{ total: 1_000_000 }],
    );
    for (let tick = 0; tick < 10; tick++) {
      admit(flow);
      for (const seq of running(flow, 0)) finished(flow, seq);
      for (const seq of running(flow, 1)) finished(flow, seq);
    }
    admit(flow);
    expect(flow.pieces.size).toBeGreaterThan(19_000);
    const bytes = JSON.stringify(carryFlow(flow)).length;
    // 20,000 pieces at about 25 bytes: beside the windows' own items (about 1 MB at most).
    expect(bytes).toBeLessThan(600_000);
  });

  it('cannot carry listed entries not yet named', () => {
    const flow = newFlow(three, [{ total: 0 }, { total: 2, listed: true }]);
    admit(flow);
    expect(() => carryFlow(flow)).toThrow('stage 1 has 2 listed entries not yet named');
  });
});
