/**
 * A pipeline run's state: the flow (engine/pipeline-flow.ts) and a batch window per stage
 * (workflows/batch/: the per-item engine, pages through the endpoint's gate, watchers, retries,
 * tolerance, budget), joined by the window's stage hooks: a page's requests are made from its
 * pieces, and an item that ends is the flow's to move on. What continues as new is PipelineCarry.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { BatchInput, ParsedBatchInput } from '../../contracts/batch-input';
import type { BatchCost } from '../../contracts/batch-summary';
import type { EndpointLimit } from '../../contracts/batch-types';
import { roundCost } from '../../contracts/cost';
import type { ParsedPipelineInput, ParsedPipelineStage, PipelineInput } from '../../contracts/pipeline-input';
import {
  type PipelineProgress,
  type PipelineResultLine,
  type PipelineSummary,
  type StagePageSource,
  stageKeyOf,
} from '../../contracts/pipeline-types';
import type { EndedItem } from '../../engine/item-state';
import { type FlowCarry, type RedriveParked, redriveFlow, resumeFlow } from '../../engine/pipeline-carry';
import { failed, finished } from '../../engine/pipeline-flow';
import {
  buffered,
  type EndedPiece,
  newFlow,
  type PipelineFlow,
  pieceOf,
  stageSetups,
} from '../../engine/pipeline-state';
import { type BatchRun, type BatchState, bump } from '../batch/batch-run';
import { inFlight } from '../batch/batch-run-counts';
import { newBatchRun } from '../batch/batch-run-start';
import type { WakeTimer } from '../shared/wake-timer';

/** Everything a run hands to the next one. */
export interface PipelineState {
  pipelineKey: string;
  store?: string;
  manifestKey: string;
  total: number;
  runLimit?: EndpointLimit;
  statusLimit?: EndpointLimit;
  paused: boolean;
  stopped?: 'tolerance' | 'budget' | 'cancelled';
  /** Result lines not yet written, and the parts written so far (each part's name counts on). */
  lines: PipelineResultLine[];
  parts: number;
  ended: PipelineSummary['ended'];
  startedAt: number;
  runs: number;
  events: number;
}

export interface PipelineCarry {
  state: PipelineState;
  flow: FlowCarry;
  windows: BatchState[];
}

/**
 * A redrive's start (activities/pipeline-redrive.ts): each stage's listed pieces, the numbers the
 * redrive gave its pieces, and the pieces whose transform runs again.
 */
export interface RedriveStart {
  listed: number[];
  reserved: number;
  parked: RedriveParked[];
}

/** The workflow's one argument: the caller's input and, from the second run on, what it carried. */
export type PipelineRunInput = PipelineInput & { carried?: PipelineCarry };

export interface PipelineRun extends WakeTimer {
  readonly input: ParsedPipelineInput;
  readonly caller: PipelineInput;
  readonly state: PipelineState;
  readonly flow: PipelineFlow;
  /** A batch window per stage, in stage order. */
  readonly windows: BatchRun[];
  transforming: number;
  /** Reads of a redrive's lists under way (their entries hold places in their windows). */
  listing: number;
  recording: boolean;
  draining: boolean;
  cancelled: boolean;
  /** Bumped by the pipeline's own work (transforms, lines, signals); the windows bump their own. */
  dirty: number;
}

export function bumpPipeline(run: PipelineRun): void {
  run.dirty += 1;
}

/** What anything in the run has moved: the loop waits for it to change. */
export function moved(run: PipelineRun): number {
  return run.windows.reduce((sum, window) => sum + window.dirty, run.dirty);
}

/** A stage as a batch's parsed input: the batch's own options, so a stage runs its jobs as a batch does. */
function windowInput(
  input: ParsedPipelineInput,
  stage: ParsedPipelineStage,
  manifestKey: string,
): ParsedBatchInput {
  const { priority, fairnessKey, fairnessWeight } = stage;
  return {
    endpointId: stage.endpointId,
    ...(stage.route === undefined ? {} : { route: stage.route }),
    items: { manifest: { key: manifestKey } },
    mode: 'activities',
    job: stage.job,
    maxConcurrency: stage.maxConcurrency,
    ...(priority === undefined ? {} : { priority }),
    ...(fairnessKey === undefined ? {} : { fairnessKey }),
    ...(fairnessWeight === undefined ? {} : { fairnessWeight }),
    failureTolerance: stage.failureTolerance,
    pageSize: input.pageSize,
    maxEventsPerRun: input.maxEventsPerRun,
    ...(stage.budget === undefined ? {} : { budget: stage.budget }),
  };
}

/** A new run, or the next one from what the run before carried. */
export function newPipelineRun(
  input: ParsedPipelineInput,
  caller: PipelineInput,
  state: PipelineState,
  carried: PipelineCarry | undefined,
  now: number,
  redrive?: RedriveStart,
): PipelineRun {
  const setups = stageSetups(input);
  const flow = carried
    ? resumeFlow(setups, carried.flow)
    : redrive
      ? redriveFlow(
          setups,
          redrive.listed.map((total) => ({ total, listed: true })),
          redrive.reserved,
          redrive.parked,
        )
      : newFlow(setups, [{ total: state.total }]);
  const run: PipelineRun = {
    input,
    caller,
    state,
    flow,
    windows: [],
    transforming: 0,
    listing: 0,
    recording: false,
    draining: false,
    cancelled: false,
    dirty: 0,
  };
  input.stages.forEach((stage, at) => {
    const batchInput = windowInput(input, stage, state.manifestKey);
    const batchCaller: BatchInput = { endpointId: stage.endpointId, items: batchInput.items };
    const window = newBatchRun(batchInput, batchCaller, carried?.windows[at], now);
    if (!carried) {
      window.state.batchKey = stageKeyOf(state.pipelineKey, stage.name);
      window.state.manifestKey = state.manifestKey;
      if (state.store !== undefined) window.state.store = state.store;
      if (state.runLimit !== undefined) window.state.runLimit = state.runLimit;
      if (state.statusLimit !== undefined) window.state.statusLimit = state.statusLimit;
    }
    window.stage = {
      pageSource: (indexes) => pageSource(run, at, indexes),
      ended: (item, line) => pieceEnded(run, at, item, line.errorRef),
      waiting: () => {
        const flowStage = run.flow.stages[at];
        return (
          flowStage !== undefined &&
          (buffered(flowStage) > 0 || flowStage.source.next < flowStage.source.total)
        );
      },
    };
    run.windows.push(window);
  });
  return run;
}

function pageSource(run: PipelineRun, at: number, indexes: readonly number[]): StagePageSource {
  const stage = run.input.stages[at] as ParsedPipelineStage;
  const previous = run.input.stages[at - 1]?.name;
  return {
    pipelineKey: run.state.pipelineKey,
    manifestKey: run.state.manifestKey,
    stage: stage.name,
    ...(previous === undefined ? {} : { previous }),
    ...(stage.map === undefined ? {} : { map: stage.map }),
    ...(stage.transform === undefined ? {} : { transformed: true }),
    pieces: indexes.map((seq) => {
      const piece = pieceOf(run.flow, seq);
      return [piece.origin, ...(piece.part ?? [])];
    }),
  };
}

/** A stage's window ended an item: the piece moves on (into the next buffer) or ends. */
function pieceEnded(run: PipelineRun, at: number, item: EndedItem, errorRef: string | undefined): void {
  const ended =
    item.outcome === 'completed'
      ? finished(run.flow, item.index)
      : failed(run.flow, item.index, {
          status: item.status,
          ...(item.reason === undefined ? {} : { reason: item.reason }),
        });
  // The job is the piece's own where it ended: at the last stage, or where it failed.
  const ranHere = at === run.flow.stages.length - 1 || item.outcome !== 'completed';
  endPieces(run, ended, ranHere ? { jobId: item.jobId, errorRef } : {});
  bumpPipeline(run);
}

/** Pieces that ended: their lines queued for the results, counted by outcome. */
export function endPieces(
  run: PipelineRun,
  ended: readonly EndedPiece[],
  job: { jobId?: string | undefined; errorRef?: string | undefined } = {},
): void {
  const { jobId, errorRef } = job;
  for (const piece of ended) {
    const key = piece.outcome === 'not-started' ? 'notStarted' : piece.outcome;
    run.state.ended[key] += 1;
    run.state.lines.push({
      origin: piece.origin,
      ...(piece.part ? { part: piece.part } : {}),
      stage: piece.stageName,
      outcome: piece.outcome,
      ...(piece.status === undefined ? {} : { status: piece.status }),
      ...(piece.reason === undefined ? {} : { reason: piece.reason }),
      ...(jobId === undefined ? {} : { jobId }),
      ...(errorRef === undefined ? {} : { errorRef }),
      seq: piece.seq,
    });
  }
}

/** The stages' and the pipeline's cost so far. */
export function totalCost(run: PipelineRun): BatchCost {
  let amount = 0;
  let items = 0;
  let currency: string | undefined;
  for (const window of run.windows) {
    amount += window.state.cost.amount;
    items += window.state.cost.items;
    currency ??= window.state.cost.currency;
  }
  return { amount: roundCost(amount), items, ...(currency === undefined ? {} : { currency }) };
}

export function pipelineProgress(run: PipelineRun): PipelineProgress {
  const { state, flow } = run;
  return {
    total: state.total,
    stages: flow.stages.map((stage, at) => {
      const window = run.windows[at] as BatchRun;
      return {
        name: stage.name,
        endpointId: (run.input.stages[at] as ParsedPipelineStage).endpointId,
        counts: { ...stage.counts },
        running: stage.running,
        buffered: buffered(stage),
        maxConcurrency: stage.maxConcurrency,
        cost: { ...window.state.cost },
        stopped: stage.stopped,
        inFlight: inFlight(window),
      };
    }),
    cost: totalCost(run),
    paused: state.paused,
    ...(state.stopped === undefined ? {} : { stopped: state.stopped }),
    runs: state.runs,
    events: state.events + workflowInfo().historyLength,
  };
}

export function pipelineSummary(run: PipelineRun): PipelineSummary {
  const { state } = run;
  return {
    ...pipelineProgress(run),
    results: {
      ...(state.store === undefined ? {} : { store: state.store }),
      key: state.pipelineKey,
    },
    ended: { ...state.ended },
  };
}

/** Wakes a window's loop turn from the pipeline's side (a piece admitted to it). */
export function wakeWindow(window: BatchRun): void {
  bump(window);
}
