/**
 * A pipeline's flow (pipeline-flow.ts steps it): its pieces, where each is, each stage's window,
 * buffer, source and counters, and the moves of one piece between those places. Plain data but
 * for the map of pieces (engine/pipeline-carry.ts writes it compactly for continue-as-new).
 */
import type { ParsedPipelineInput } from '../contracts/pipeline-input';

/** Which item a piece is: its index in the pipeline's items and, once split, its part at each split. */
export interface PieceId {
  origin: number;
  part?: number[];
}

/** Where a piece is: in its stage's window, or in the buffer before it. */
export type PiecePlace = 'running' | 'transform-due' | 'transforming' | 'waiting';

export interface Piece extends PieceId {
  /** Its number in the pipeline (its index in the stage's window), never reused, across runs too. */
  seq: number;
  stage: number;
  place: PiecePlace;
}

export interface StageSetup {
  name: string;
  maxConcurrency: number;
  /** Pieces the buffer before this stage holds at most (0 before the first stage: it has none). */
  buffer: number;
  /** Its input is made by a transform (an activity), not by a map. */
  transform: boolean;
}

/**
 * Entries that start at a stage: the items at the first stage (entry n is item n); in a redrive,
 * the pieces that failed at a stage start there again (`listed`: the entries name their pieces,
 * read by the driver and given to `named`).
 */
export interface StageSource {
  total: number;
  listed?: boolean;
}

export interface StageCounts {
  /** Pieces admitted to the stage's window. */
  started: number;
  completed: number;
  failed: number;
  /** Pieces its transform dropped, split into several, and the pieces those splits made. */
  dropped: number;
  split: number;
  parts: number;
  /** Pieces that ended waiting for it when the pipeline stopped starting work. */
  notStarted: number;
}

export interface StageFlow extends StageSetup {
  /** It starts nothing more; pieces that reach its buffer end there, not started. */
  stopped: boolean;
  source: { next: number; total: number; listed: boolean };
  /** Listed entries admitted and not yet named by the driver (they hold places in the window). */
  naming: number;
  running: number;
  /** The buffer before the stage, in arrival order: ready, and their transform due. */
  waiting: number[];
  transformDue: number[];
  transforming: number;
  counts: StageCounts;
}

export interface PipelineFlow {
  stages: StageFlow[];
  /** Every piece in a window or a buffer, by seq. */
  pieces: Map<number, Piece>;
  nextSeq: number;
}

export type PieceOutcome = 'completed' | 'failed' | 'dropped' | 'not-started';

/** A piece that ended, for its result line: where (the stage named) and how. */
export interface EndedPiece extends PieceId {
  seq: number;
  stage: number;
  stageName: string;
  outcome: PieceOutcome;
  /** The job's status, or the driver's word for a failure (a map or transform failure). */
  status?: string;
  reason?: string;
}

export function stageSetups(input: Pick<ParsedPipelineInput, 'stages'>): StageSetup[] {
  return input.stages.map((stage) => ({
    name: stage.name,
    maxConcurrency: stage.maxConcurrency,
    buffer: stage.buffer,
    transform: stage.transform !== undefined,
  }));
}

export function newFlow(setups: readonly StageSetup[], sources: readonly StageSource[]): PipelineFlow {
  return {
    stages: setups.map((setup, at) => ({
      ...setup,
      stopped: false,
      source: { next: 0, total: sources[at]?.total ?? 0, listed: sources[at]?.listed ?? false },
      naming: 0,
      running: 0,
      waiting: [],
      transformDue: [],
      transforming: 0,
      counts: { started: 0, completed: 0, failed: 0, dropped: 0, split: 0, parts: 0, notStarted: 0 },
    })),
    pieces: new Map(),
    nextSeq: 0,
  };
}

/** Pieces in the buffer before a stage (ready, or waiting for their transform). */
export function buffered(stage: StageFlow): number {
  return stage.waiting.length + stage.transformDue.length + stage.transforming;
}

// --- moves of one piece (pipeline-flow.ts steps with them)

export function pieceOf(flow: PipelineFlow, seq: number): Piece {
  const piece = flow.pieces.get(seq);
  if (!piece) throw new Error(`no piece ${seq} in the pipeline's flow`);
  return piece;
}

/** A new piece, numbered next, or by `id.seq` (a redrive's listed pieces are numbered by it). */
export function add(flow: PipelineFlow, id: PieceId & { seq?: number }, stage = 0): Piece {
  const piece: Piece = {
    seq: id.seq ?? flow.nextSeq++,
    origin: id.origin,
    ...(id.part ? { part: id.part } : {}),
    stage,
    place: 'waiting',
  };
  flow.pieces.set(piece.seq, piece);
  return piece;
}

export function enter(flow: PipelineFlow, at: number, piece: Piece): Piece {
  piece.stage = at;
  piece.place = 'running';
  (flow.stages[at] as StageFlow).running++;
  return piece;
}

export function park(flow: PipelineFlow, piece: Piece, place: 'transform-due' | 'waiting'): Piece {
  const stage = flow.stages[piece.stage] as StageFlow;
  piece.place = place;
  (place === 'waiting' ? stage.waiting : stage.transformDue).push(piece.seq);
  return piece;
}

/** The piece taken out of its place (checked against `expected` when given). */
export function leave(flow: PipelineFlow, seq: number, expected?: PiecePlace): Piece {
  const piece = pieceOf(flow, seq);
  if (expected !== undefined && piece.place !== expected)
    throw new Error(`piece ${seq} is ${piece.place} at stage ${piece.stage}, not ${expected}`);
  const stage = flow.stages[piece.stage] as StageFlow;
  if (piece.place === 'running') stage.running--;
  else if (piece.place === 'transforming') stage.transforming--;
  else {
    const list = piece.place === 'waiting' ? stage.waiting : stage.transformDue;
    list.splice(list.indexOf(seq), 1);
  }
  return piece;
}

export function notStarted(flow: PipelineFlow, piece: Piece): EndedPiece {
  (flow.stages[piece.stage] as StageFlow).counts.notStarted++;
  return end(flow, piece, 'not-started');
}

export function end(
  flow: PipelineFlow,
  piece: Piece,
  outcome: PieceOutcome,
  why: { status?: string; reason?: string } = {},
): EndedPiece {
  flow.pieces.delete(piece.seq);
  const { place: _place, ...id } = piece;
  return { ...id, stageName: (flow.stages[piece.stage] as StageFlow).name, outcome, ...why };
}
