/**
 * What a pipeline's flow carries through continue-as-new, compactly (as engine/item-carry.ts does
 * for the items in the windows): per stage its live window, its stop, its source's cursor and its
 * counters; per piece in a window or a buffer an array of values in a fixed order. The stages'
 * names, buffers and transforms come from the input again. And a redrive's sources: the pieces
 * that failed (or never started) at a stage start at that stage.
 */
import {
  add,
  newFlow,
  type PieceId,
  type PiecePlace,
  type PipelineFlow,
  park,
  type StageSetup,
  type StageSource,
} from './pipeline-state';

/** The counters' order in the compact form: a new counter goes at the end. */
const COUNTS = ['started', 'completed', 'failed', 'dropped', 'split', 'parts', 'notStarted'] as const;
/** A piece's place by number; a transform under way is carried as due (it runs again: by key). */
const PLACES: readonly PiecePlace[] = ['running', 'transform-due', 'waiting'];

/** One piece: [seq, origin, stage, place, ...part]. */
export type CarriedPiece = number[];

export interface CarriedStage {
  maxConcurrency: number;
  stopped: boolean;
  /** [next, total, listed (1) or not (0)]. */
  source: [number, number, number];
  counts: number[];
}

export interface FlowCarry {
  nextSeq: number;
  stages: CarriedStage[];
  /** Pieces in windows, then each stage's buffer in its order (transforms first). */
  pieces: CarriedPiece[];
}

/**
 * The flow as the next run takes it. Listed entries being read and not yet named cannot cross:
 * the driver continues as new once those reads have answered.
 */
export function carryFlow(flow: PipelineFlow): FlowCarry {
  const pieces: CarriedPiece[] = [];
  const put = (seq: number, place: PiecePlace) => {
    const piece = flow.pieces.get(seq);
    if (!piece) throw new Error(`no piece ${seq} in the pipeline's flow`);
    pieces.push([seq, piece.origin, piece.stage, PLACES.indexOf(place), ...(piece.part ?? [])]);
  };
  for (const piece of flow.pieces.values()) {
    if (piece.place === 'running') put(piece.seq, 'running');
    else if (piece.place === 'transforming') put(piece.seq, 'transform-due');
  }
  for (const stage of flow.stages) {
    for (const seq of stage.transformDue) put(seq, 'transform-due');
    for (const seq of stage.waiting) put(seq, 'waiting');
  }
  const stages = flow.stages.map((stage, at): CarriedStage => {
    if (stage.naming > 0)
      throw new Error(`stage ${at} has ${stage.naming} listed entries not yet named: it cannot be carried`);
    return {
      maxConcurrency: stage.maxConcurrency,
      stopped: stage.stopped,
      source: [stage.source.next, stage.source.total, stage.source.listed ? 1 : 0],
      counts: COUNTS.map((count) => stage.counts[count]),
    };
  });
  return { nextSeq: flow.nextSeq, stages, pieces };
}

export function resumeFlow(setups: readonly StageSetup[], carry: FlowCarry): PipelineFlow {
  const flow = newFlow(setups, []);
  flow.nextSeq = carry.nextSeq;
  carry.stages.forEach((carried, at) => {
    const stage = flow.stages[at];
    if (!stage)
      throw new Error(`the carried flow has ${carry.stages.length} stages; the input ${setups.length}`);
    const [next, total, listed] = carried.source;
    stage.maxConcurrency = carried.maxConcurrency;
    stage.stopped = carried.stopped;
    stage.source = { next, total, listed: listed === 1 };
    for (const [i, count] of COUNTS.entries()) stage.counts[count] = carried.counts[i] ?? 0;
  });
  for (const [seq, origin, at, code, ...part] of carry.pieces) {
    const place = PLACES[code as number];
    const stage = flow.stages[at as number];
    if (seq === undefined || origin === undefined || !place || !stage)
      throw new Error(
        `a carried piece that names no known place: ${JSON.stringify([seq, origin, at, code])}`,
      );
    flow.pieces.set(seq, { seq, origin, ...(part.length > 0 ? { part } : {}), stage: at as number, place });
    if (place === 'running') stage.running++;
    else (place === 'waiting' ? stage.waiting : stage.transformDue).push(seq);
  }
  return flow;
}

/** A result line of a piece that did not complete, as a redrive reads it. */
export interface RedriveLine extends PieceId {
  /** The stage it ended at, by name. */
  stage: string;
  /** Its number in the pipeline redriven (its previous stage's line is under it). */
  seq?: number;
}

/** A piece to start again at its stage, and its number in the pipeline redriven (`was`). */
export type RedrivePiece = PieceId & { was?: number };

/**
 * A redrive's sources: each stage's list of the pieces to start there again (in the lines' order)
 * and the sources for newFlow. A piece redriven at a stage gets its input made again from the
 * previous stage's output (or from the item, at the first stage), which the store still holds.
 */
export function redriveSources(
  lines: readonly RedriveLine[],
  stageNames: readonly string[],
): { ok: true; lists: RedrivePiece[][]; sources: StageSource[] } | { ok: false; rule: string } {
  const lists: RedrivePiece[][] = stageNames.map(() => []);
  for (const line of lines) {
    const at = stageNames.indexOf(line.stage);
    if (at < 0)
      return {
        ok: false,
        rule: `a line of item ${line.origin} names stage "${line.stage}": not a stage of the pipeline`,
      };
    lists[at]?.push({
      origin: line.origin,
      ...(line.part ? { part: line.part } : {}),
      ...(line.seq === undefined ? {} : { was: line.seq }),
    });
  }
  return { ok: true, lists, sources: lists.map((list) => ({ total: list.length, listed: true })) };
}

/** A piece whose stage's transform runs again in a redrive (it failed or never ran): its number and stage. */
export interface RedriveParked extends PieceId {
  seq: number;
  stage: number;
}

/**
 * A redrive's flow: each stage's list as its source (redriveSources), the numbers below `reserved`
 * kept for the pieces the redrive numbered as it copied their inputs, and the pieces whose
 * transform runs again waiting in their stage's buffer, transform due.
 */
export function redriveFlow(
  setups: readonly StageSetup[],
  sources: readonly StageSource[],
  reserved: number,
  parked: readonly RedriveParked[],
): PipelineFlow {
  const flow = newFlow(setups, sources);
  flow.nextSeq = reserved;
  for (const { seq, origin, part, stage } of parked)
    park(flow, add(flow, { seq, origin, ...(part ? { part } : {}) }, stage), 'transform-due');
  return flow;
}
