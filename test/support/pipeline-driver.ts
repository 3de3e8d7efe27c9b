/**
 * A small driver of a pipeline's flow (engine/pipeline-flow.ts) for its tables: it plays the
 * workflow, admitting what may start each tick and ending what the stages are done with, and
 * checks after each step the bounds every flow keeps. No server, no clock.
 */
import { expect } from 'vitest';
import { admit, finished, flowDone } from '../../engine/pipeline-flow';
import { buffered, type EndedPiece, type PipelineFlow, type StageSetup } from '../../engine/pipeline-state';

export const stage = (
  name: string,
  maxConcurrency: number,
  buffer: number,
  transform = false,
): StageSetup => ({
  name,
  maxConcurrency,
  buffer,
  transform,
});
/** Three stages: fast, fast, and a slow last one with a small buffer. */
export const three = [stage('transcribe', 4, 0), stage('translate', 4, 4), stage('speak', 1, 2)];

/** The seqs of the pieces in a stage's window, oldest first. */
export const running = (flow: PipelineFlow, at: number): number[] =>
  [...flow.pieces.values()]
    .filter((piece) => piece.stage === at && piece.place === 'running')
    .map((piece) => piece.seq)
    .sort((a, b) => a - b);

/** The rules every state of a flow keeps, checked after each step. */
export function expectBounds(flow: PipelineFlow): void {
  flow.stages.forEach((current, at) => {
    expect(current.running, `stage ${at}'s window`).toBeLessThanOrEqual(current.maxConcurrency);
    const next = flow.stages[at + 1];
    if (next) {
      expect(buffered(next), `the buffer before stage ${at + 1}`).toBeLessThanOrEqual(next.buffer);
      expect(current.running + buffered(next), `stage ${at}'s places in the next buffer`).toBeLessThanOrEqual(
        next.buffer,
      );
    }
  });
}

/** A tick of play: each stage's window and buffer before and after admitting, and its starts. */
export interface Tick {
  before: { running: number[]; buffered: number[] };
  starts: number[];
  running: number[];
  buffered: number[];
}

/**
 * Plays the flow to its end: each tick admits (last stage first) and then, for each stage, ends
 * the pieces `done(stage, tick)` says it finished this tick (oldest first). Returns every ended
 * piece and, per tick, each stage's window and buffer.
 */
export function play(
  flow: PipelineFlow,
  done: (at: number, tick: number, inWindow: number) => number,
  limit = 1_000,
): { ended: EndedPiece[]; ticks: Tick[] } {
  const ended: EndedPiece[] = [];
  const ticks: Tick[] = [];
  for (let tick = 0; tick < limit && !flowDone(flow); tick++) {
    const before = { running: flow.stages.map((s) => s.running), buffered: flow.stages.map(buffered) };
    const starts = flow.stages.map(() => 0);
    for (const start of admit(flow)) starts[start.stage] = start.pieces.length;
    expectBounds(flow);
    ticks.push({
      before,
      starts,
      running: flow.stages.map((s) => s.running),
      buffered: flow.stages.map(buffered),
    });
    for (let at = flow.stages.length - 1; at >= 0; at--) {
      const window = running(flow, at);
      for (const seq of window.slice(0, done(at, tick, window.length))) ended.push(...finished(flow, seq));
      expectBounds(flow);
    }
  }
  expect(flowDone(flow)).toBe(true);
  return { ended, ticks };
}
