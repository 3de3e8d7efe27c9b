/**
 * What a pipeline's workflow, its activities and its client share: where its data lives in the
 * batch store (keys made from the pipeline, the stage and the piece), what a stage's submit is
 * told about its page, a transform's call and answer, the result line of a piece, the progress
 * and the summary. Bundled into workflow code: types and pure functions only.
 */
import type { JobRequestInput } from '../api/schemas/job';
import type { BatchCost } from './batch-summary';
import type { StageMap } from './pipeline-input';

/** A stage's keys: its window's own (errors, per-piece result lines) under the pipeline's. */
export function stageKeyOf(pipelineKey: string, stage: string): string {
  return `${pipelineKey}/stages/${stage}`;
}

/** The result line (with its output) of the job a stage ran for the piece numbered `seq`. */
export function stageLineKey(stageKey: string, seq: number): string {
  return `${stageKey}/lines/${seq}`;
}

/** A piece's input for a stage whose input a transform made: by the piece's origin and part. */
export function stageInputKey(stageKey: string, origin: number, part: readonly number[] | undefined): string {
  return `${stageKey}/inputs/${[origin, ...(part ?? [])].join('.')}`;
}

/** Where the pipeline's result lines are written, a part per write. */
export function pipelineResultsKey(pipelineKey: string): string {
  return `${pipelineKey}/results`;
}

/** A redrive's list of the pieces it starts again at a stage, one line per piece (all under `${pipelineKey}/redrive`). */
export function redriveListKey(pipelineKey: string, stage: string): string {
  return `${pipelineKey}/redrive/${stage}.jsonl`;
}

/** A piece as a submit or a result names it: [origin, ...part]. */
export type PieceRef = number[];

/**
 * How a stage's submit makes each request of its page (instead of reading manifest lines): the
 * map evaluated on the item and the previous stage's result, the input a transform wrote, or the
 * item as it is (the first stage without a map). `pieces[k]` is the piece of the page's index k.
 */
export interface StagePageSource {
  pipelineKey: string;
  /** The pipeline's items (a manifest): `$.item` of a piece is its origin's line. */
  manifestKey: string;
  stage: string;
  /** The previous stage's name (absent at the first stage). */
  previous?: string;
  map?: StageMap;
  /** Its input was made by a transform (written under stageInputKey). */
  transformed?: boolean;
  pieces: PieceRef[];
}

/**
 * A transform's call for pieces of one stage (a page of them: one activity, a few history events,
 * for many pieces); it reads each item and previous result from the store.
 */
export interface TransformCall {
  pipelineKey: string;
  manifestKey: string;
  stage: string;
  previous: string;
  transform: { name: string; options?: unknown };
  /** Each piece: its number (the previous stage's line is under it), origin and part. */
  pieces: Array<{ seq: number; origin: number; part?: number[] }>;
}

/** A transform's answer for one piece: how many parts it made (0 drops it), or why it failed. */
export type TransformAnswer = { parts: number } | { failed: string };

/** What a stage's result gives the next stage's map as `$.previous`. */
export interface PreviousResult {
  output: unknown;
  jobId?: string;
  stage: string;
}

/** One result line per piece: where it came from, where it ended, and how. */
export interface PipelineResultLine {
  /** The item it came from (its index in the items) and, once split, its part at each split. */
  origin: number;
  part?: number[];
  /** The stage it ended at, by name (the last one when it completed). */
  stage: string;
  outcome: 'completed' | 'failed' | 'dropped' | 'not-started';
  /** The job's status, or the pipeline's word for a map or transform failure. */
  status?: string;
  reason?: string;
  /** A failed job's error text, in the store under this key (the handler's words stay out of history). */
  errorRef?: string;
  jobId?: string;
  /** A completed piece's output (read from the last stage's line by readPipelineResults). */
  output?: unknown;
  outputRef?: unknown;
  /** Its number in the pipeline, under which each stage's line of it is kept. */
  seq: number;
}

export interface PipelineStageCounts {
  started: number;
  completed: number;
  failed: number;
  dropped: number;
  split: number;
  parts: number;
  notStarted: number;
}

export interface PipelineStageProgress {
  name: string;
  endpointId: string;
  counts: PipelineStageCounts;
  /** Pieces in its window (queued, in flight, waiting for a retry) and in the buffer before it. */
  running: number;
  buffered: number;
  maxConcurrency: number;
  /** Its jobs' estimated cost so far. */
  cost: BatchCost;
  stopped: boolean;
  /** Its jobs in flight (submitted, uncertain, or waiting for a retry). */
  inFlight: number;
}

export interface PipelineProgress {
  /** The items read so far, of `total`. */
  total: number;
  stages: PipelineStageProgress[];
  cost: BatchCost;
  paused: boolean;
  /** Why new work stopped: a stage's failures past its tolerance, or the budget. */
  stopped?: 'tolerance' | 'budget' | 'cancelled';
  runs: number;
  /** History events of every run so far (this one's included). */
  events: number;
}

export interface PipelineSummary extends PipelineProgress {
  /**
   * Where its data is: the store's name and the pipeline's key in it (result lines under
   * pipelineResultsKey, each stage's under stageKeyOf).
   */
  results: { store?: string; key: string };
  /** Pieces that ended, by outcome (completed: through the last stage). */
  ended: { completed: number; failed: number; dropped: number; notStarted: number };
}

export const PIPELINE_FAILURE = {
  /** A stage's failures passed its tolerance; details: the pipeline's summary. */
  toleranceExceeded: 'PipelineToleranceExceeded',
  /** The estimated cost reached the budget; details: the pipeline's summary. */
  budgetExceeded: 'PipelineBudgetExceeded',
  badRequest: 'BadRequest',
} as const;

/** What a transform is given for one piece. */
export interface TransformPiece {
  /** The original item's request (a piece of a split item: its origin's). */
  item: JobRequestInput;
  /** The previous stage's result for this piece. */
  previous: PreviousResult;
  /** The stage's `transform.options`, as given. */
  options?: unknown;
  origin: number;
  part?: number[];
}

/**
 * A transform: from a piece, the requests of its stage. None drops the piece; one sends it on;
 * several split it (each part flows on as a piece of its own, its result line naming its origin).
 * A thrown error fails the piece at its stage, with the error's message.
 */
export interface PipelineTransform {
  name: string;
  run(piece: TransformPiece): JobRequestInput[] | Promise<JobRequestInput[]>;
}
