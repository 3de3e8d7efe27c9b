/**
 * The flow of a pipeline's items between its stages, the pure part: which pieces enter which
 * stage's window now, and where a piece goes when a stage is done with it. An item is a piece (a
 * transform may split it into several, each a piece of its own, or drop it). A piece is, at each
 * moment, in one stage's window (admitted: queued for its submit, in flight, or waiting for a
 * retry; the per-item engine runs it there) or waiting in the buffer before a stage (its
 * transform due or running, or ready). Each buffer is bounded, in pieces: a stage admits a piece
 * only while the next stage's buffer has a place for it and for every piece already in its window,
 * so a slow stage stops the stages before it instead of letting outputs pile up (back-pressure).
 *
 * The flow holds counters, and a record only per piece in a window or a buffer: never an output
 * (outputs are in the store, by the piece's id and stage). Its steps change it in place (a flow of
 * thousands of pieces is not copied at each event) and return what the driver must act on.
 * No clock, no Temporal.
 */
import { MAX_SPLIT_PARTS } from '../contracts/pipeline-input';
import {
  add,
  buffered,
  type EndedPiece,
  end,
  enter,
  leave,
  notStarted,
  type Piece,
  type PieceId,
  type PipelineFlow,
  park,
  pieceOf,
  type StageFlow,
} from './pipeline-state';

/** Pieces admitted to a stage's window now; `listed`: its list's entries to read and name. */
export interface StageStart {
  stage: number;
  pieces: Piece[];
  listed?: { from: number; count: number };
}

/**
 * Pieces a stage may admit now: room in its window, and (but for the last stage) a place in the
 * next buffer for each piece in its window, admitted ones included: a piece that finishes always
 * has its place.
 */
export function stageRoom(flow: PipelineFlow, at: number): number {
  const stage = flow.stages[at] as StageFlow;
  const window = stage.maxConcurrency - stage.running - stage.naming;
  const next = flow.stages[at + 1];
  const downstream =
    next === undefined
      ? Number.POSITIVE_INFINITY
      : next.buffer - buffered(next) - stage.running - stage.naming;
  return Math.max(0, Math.min(window, downstream));
}

export interface AdmitLimits {
  /** Per stage, pieces its budget lets start (absent: no bound). */
  allowed?: readonly number[];
  /** At most this many per stage at once (a page). */
  pageSize?: number;
}

/**
 * Admits what may start now, last stage first (a piece it takes from its buffer frees a place for
 * the stage before), each stage from its buffer first (oldest first), then from its source.
 */
export function admit(flow: PipelineFlow, limits: AdmitLimits = {}): StageStart[] {
  const starts: StageStart[] = [];
  for (let at = flow.stages.length - 1; at >= 0; at--) {
    const stage = flow.stages[at] as StageFlow;
    if (stage.stopped) continue;
    let room = Math.min(
      stageRoom(flow, at),
      limits.allowed?.[at] ?? Number.POSITIVE_INFINITY,
      limits.pageSize ?? Number.POSITIVE_INFINITY,
    );
    const pieces: Piece[] = [];
    while (room > 0 && stage.waiting.length > 0) {
      pieces.push(enter(flow, at, pieceOf(flow, stage.waiting.shift() as number)));
      room--;
    }
    const count = Math.min(room, stage.source.total - stage.source.next);
    const from = stage.source.next;
    stage.source.next += count;
    stage.counts.started += pieces.length + count;
    if (stage.source.listed) stage.naming += count;
    else
      for (let entry = from; entry < from + count; entry++)
        pieces.push(enter(flow, at, add(flow, { origin: entry })));
    if (pieces.length > 0 || count > 0)
      starts.push({
        stage: at,
        pieces,
        ...(stage.source.listed && count > 0 ? { listed: { from, count } } : {}),
      });
  }
  return starts;
}

/**
 * The pieces named by a stage's listed entries (a redrive's), admitted to its window. An entry
 * may carry its number: the redrive numbered it when it copied its input under that number.
 */
export function named(
  flow: PipelineFlow,
  at: number,
  ids: ReadonlyArray<PieceId & { seq?: number }>,
): Piece[] {
  const stage = flow.stages[at] as StageFlow;
  if (ids.length > stage.naming)
    throw new Error(`${ids.length} pieces named at stage ${at}; ${stage.naming} admitted`);
  stage.naming -= ids.length;
  return ids.map((id) => enter(flow, at, add(flow, id)));
}

/** A piece done with its stage: into the next buffer (its transform due, or ready), or ended. */
export function finished(flow: PipelineFlow, seq: number): EndedPiece[] {
  const piece = leave(flow, seq, 'running');
  const stage = flow.stages[piece.stage] as StageFlow;
  stage.counts.completed++;
  const next = flow.stages[piece.stage + 1];
  if (next === undefined) return [end(flow, piece, 'completed')];
  piece.stage++;
  if (next.stopped) return [notStarted(flow, piece)];
  park(flow, piece, next.transform ? 'transform-due' : 'waiting');
  return [];
}

/** A piece failed at its stage (its job after its retries, its map, its transform): it ends there. */
export function failed(
  flow: PipelineFlow,
  seq: number,
  why: { status: string; reason?: string },
): EndedPiece[] {
  const piece = leave(flow, seq);
  (flow.stages[piece.stage] as StageFlow).counts.failed++;
  return [end(flow, piece, 'failed', why)];
}

/** Pieces whose transform is due, at most `max`, handed to the driver to run (oldest first). */
export function takeTransforms(flow: PipelineFlow, max: number): Piece[] {
  const taken: Piece[] = [];
  for (const stage of flow.stages) {
    while (taken.length < max && stage.transformDue.length > 0) {
      const piece = pieceOf(flow, stage.transformDue.shift() as number);
      piece.place = 'transforming';
      stage.transforming++;
      taken.push(piece);
    }
  }
  return taken;
}

/**
 * A transform's answer for a piece: `parts` inputs made for its stage. None drops it; one sends
 * it on as it is; more split it, each part a piece of its own (its id's part path one longer).
 * Parts beyond the buffer's bound are let in (they exist): the stage before waits until it drains.
 */
export function transformed(
  flow: PipelineFlow,
  seq: number,
  parts: number,
): { ended: EndedPiece[]; pieces: Piece[] } {
  const piece = pieceOf(flow, seq);
  const stage = flow.stages[piece.stage] as StageFlow;
  if (!Number.isInteger(parts) || parts < 0 || parts > MAX_SPLIT_PARTS) {
    const reason = `the transform made ${parts} parts; it may make 0 to ${MAX_SPLIT_PARTS}`;
    return { ended: failed(flow, seq, { status: 'TRANSFORM_FAILED', reason }), pieces: [] };
  }
  leave(flow, seq, 'transforming');
  // Stopped meanwhile: its parts would never start; a redrive makes them again from its input.
  if (stage.stopped) return { ended: [notStarted(flow, piece)], pieces: [] };
  if (parts === 0) {
    stage.counts.dropped++;
    return { ended: [end(flow, piece, 'dropped')], pieces: [] };
  }
  if (parts === 1) return { ended: [], pieces: [park(flow, piece, 'waiting')] };
  flow.pieces.delete(piece.seq);
  stage.counts.split++;
  stage.counts.parts += parts;
  const pieces = Array.from({ length: parts }, (_, part) => {
    const made = add(flow, { origin: piece.origin, part: [...(piece.part ?? []), part] }, piece.stage);
    return park(flow, made, 'waiting');
  });
  return { ended: [], pieces };
}

/** Source entries of a stage never admitted (a stop): what a redrive starts there. */
export interface Unstarted {
  stage: number;
  from: number;
  count: number;
}

/**
 * Stages `0..upTo` start nothing more (all of them: the pipeline is cancelled, over budget or
 * over a tolerance; up to a stage whose budget share is spent: what the stages before it make
 * could go no further). Pieces in their buffers end there, not started, and so do pieces that
 * reach them later; the source entries left are given back, for a redrive. Pieces in a window
 * end through the per-item engine (`finished`, `failed`); later stages drain what they hold.
 */
export function stopStarting(
  flow: PipelineFlow,
  upTo = flow.stages.length - 1,
): { ended: EndedPiece[]; unstarted: Unstarted[] } {
  const ended: EndedPiece[] = [];
  const unstarted: Unstarted[] = [];
  flow.stages.slice(0, upTo + 1).forEach((stage, at) => {
    stage.stopped = true;
    for (const seq of [...stage.waiting, ...stage.transformDue])
      ended.push(notStarted(flow, leave(flow, seq)));
    const left = stage.source.total - stage.source.next;
    if (left > 0) unstarted.push({ stage: at, from: stage.source.next, count: left });
    stage.source.next = stage.source.total;
  });
  return { ended, unstarted };
}

/** Nothing left anywhere: every source read, every piece ended. */
export function flowDone(flow: PipelineFlow): boolean {
  return (
    flow.pieces.size === 0 &&
    flow.stages.every((stage) => stage.naming === 0 && stage.source.next >= stage.source.total)
  );
}

/** A live change of a stage's window (the buffers keep their bounds). */
export function setStageConcurrency(flow: PipelineFlow, at: number, maxConcurrency: number): void {
  (flow.stages[at] as StageFlow).maxConcurrency = maxConcurrency;
}
