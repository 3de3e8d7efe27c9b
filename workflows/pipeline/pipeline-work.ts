/**
 * The pipeline's own work beside its windows': admitting pieces to the stages' windows, running
 * transforms, stopping stages (a tolerance passed, a budget spent) and writing result lines.
 */
import { CancellationScope, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import type { ParsedPipelineStage } from '../../contracts/pipeline-input';
import { type BudgetView, budgetRoom as budgetRoomOf, budgetSpent } from '../../engine/batch-budget';
import { queuedItem } from '../../engine/item-state';
import {
  admit,
  named,
  failed as pieceFailed,
  type StageStart,
  stopStarting,
  takeTransforms,
  transformed,
} from '../../engine/pipeline-flow';
import { buffered, leave, notStarted, type Piece } from '../../engine/pipeline-state';
import { shortActivities, watchActivities } from '../batch/batch-activities';
import { budgetRoom, checkStops } from '../batch/batch-controls';
import type { BatchRun } from '../batch/batch-run';
import { activityOutcome } from '../shared/job-failures';
import { bumpPipeline, endPieces, type PipelineRun, totalCost, wakeWindow } from './pipeline-run';

/** Transform calls under way at once (each an activity on up to a page of pieces). */
const MAX_TRANSFORM_CALLS = 4;
/**
 * Result lines per part. Every piece ends with a line (a completed one too, unlike a batch's whose
 * watchers write those): they wait in the workflow's state until a part is full or the run ends,
 * so a write costs a few history events for a thousand pieces, not for each.
 */
const LINES_PER_PART = 1_000;

/**
 * Pieces that may start enter their stage's window, queued for its next page. Each stage's budget
 * share bounds its own window (its submits plan within it, as a batch's do); the pipeline's budget
 * is one pool for every stage, handed out last stage first (a piece further on is closer to done).
 */
export function admitPieces(run: PipelineRun): void {
  let pool = budgetRoomOf(pipelineBudget(run));
  const stageRooms = run.windows.map((window) => budgetRoom(window));
  if (pool === Number.POSITIVE_INFINITY) {
    enterWindows(run, admit(run.flow, { allowed: stageRooms, pageSize: run.input.pageSize }));
    return;
  }
  for (let at = run.windows.length - 1; at >= 0 && pool > 0; at--) {
    const allowed = stageRooms.map((room, k) => (k === at ? Math.min(room, pool) : 0));
    pool -= enterWindows(run, admit(run.flow, { allowed, pageSize: run.input.pageSize }));
  }
}

/** The admitted pieces queued in their windows (a redrive's listed ones once read); returns how many. */
function enterWindows(run: PipelineRun, starts: StageStart[]): number {
  let count = 0;
  for (const start of starts) {
    queuePieces(run, start.stage, start.pieces);
    if (start.listed) readListed(run, start.stage, start.listed);
    count += start.pieces.length + (start.listed?.count ?? 0);
  }
  return count;
}

function queuePieces(run: PipelineRun, at: number, pieces: readonly Piece[]): void {
  const window = run.windows[at] as BatchRun;
  for (const piece of pieces) window.items.set(piece.seq, queuedItem(piece.seq));
  // A stage's failure percentage is of the pipeline's items (of the pieces it started, once
  // splits made more), as a batch's is of all its items. Its window reads no item of its own:
  // cursor and total kept equal.
  const started = run.flow.stages[at]?.counts.started ?? 0;
  window.state.total = Math.max(run.state.total, started);
  window.state.cursor = window.state.total;
  wakeWindow(window);
}

/**
 * A redrive's entries admitted at a stage hold their places while they are read from the store
 * (a read, harmless to repeat, retried until it answers), then are named and queued. The read is
 * not cancelled with the pipeline: a stopped stage's entries end as not started, each with its line.
 */
function readListed(run: PipelineRun, at: number, listed: { from: number; count: number }): void {
  const stage = run.input.stages[at] as ParsedPipelineStage;
  run.listing += 1;
  CancellationScope.nonCancellable(() =>
    watchActivities.readPipelineRedriveList.executeWithOptions(
      { summary: `read ${listed.count} redriven pieces of ${stage.name}` },
      [{ pipelineKey: run.state.pipelineKey, stage: stage.name, ...listed }],
    ),
  )
    .then(
      ({ pieces }) => {
        const admitted = named(run.flow, at, pieces);
        if (run.flow.stages[at]?.stopped)
          endPieces(
            run,
            admitted.map((piece) => notStarted(run.flow, leave(run.flow, piece.seq, 'running'))),
          );
        else queuePieces(run, at, admitted);
      },
      (error: unknown) =>
        log.error("reading a redrive's pieces failed", { error: activityOutcome(error)?.message }),
    )
    .finally(() => {
      run.listing -= 1;
      bumpPipeline(run);
    });
}

/**
 * Transforms due start: a call per stage for up to a page of its pieces, a few calls at once; each
 * answer splits, drops or passes its piece on.
 */
export function startTransforms(run: PipelineRun): void {
  const { state } = run;
  while (run.transforming < MAX_TRANSFORM_CALLS) {
    const taken = takeTransforms(run.flow, run.input.pageSize);
    if (taken.length === 0) return;
    for (const at of new Set(taken.map((piece) => piece.stage))) {
      const pieces = taken.filter((piece) => piece.stage === at);
      const stage = run.input.stages[at] as ParsedPipelineStage;
      const transform = stage.transform as NonNullable<ParsedPipelineStage['transform']>;
      const previous = run.input.stages[at - 1] as ParsedPipelineStage;
      const failAll = (error: unknown) => {
        const reason = activityOutcome(error)?.message ?? String(error);
        for (const piece of pieces)
          endPieces(
            run,
            // Cancelled with the pipeline: they end where they waited, not started.
            isCancellation(error)
              ? [notStarted(run.flow, leave(run.flow, piece.seq, 'transforming'))]
              : pieceFailed(run.flow, piece.seq, { status: 'TRANSFORM_FAILED', reason }),
          );
      };
      run.transforming += 1;
      shortActivities.transformPipelinePieces
        .executeWithOptions({ summary: `transform ${transform.name}: ${pieces.length} pieces` }, [
          {
            pipelineKey: state.pipelineKey,
            manifestKey: state.manifestKey,
            stage: stage.name,
            previous: previous.name,
            transform: {
              name: transform.name,
              ...(transform.options === undefined ? {} : { options: transform.options }),
            },
            pieces: pieces.map(({ seq, origin, part }) => ({ seq, origin, ...(part ? { part } : {}) })),
          },
        ])
        .then(
          ({ answers }) => {
            pieces.forEach((piece, k) => {
              const answer = answers[k] ?? { failed: 'the transform gave no answer for this piece' };
              if ('failed' in answer)
                endPieces(
                  run,
                  pieceFailed(run.flow, piece.seq, { status: 'TRANSFORM_FAILED', reason: answer.failed }),
                );
              else endPieces(run, transformed(run.flow, piece.seq, answer.parts).ended);
            });
          },
          (error: unknown) => failAll(error),
        )
        .finally(() => {
          run.transforming -= 1;
          bumpPipeline(run);
        });
    }
  }
}

/**
 * A stage's failures past its tolerance stop every stage; its budget share spent stops the
 * stages up to it (what they make could go no further) while the later ones drain; the
 * pipeline's budget reached stops every stage.
 */
export function checkPipelineStops(run: PipelineRun): void {
  run.windows.forEach((window, at) => {
    if (run.flow.stages[at]?.stopped) return;
    checkStops(window);
    if (!window.state.stopping) return;
    if (window.state.budgetExceeded) stopStages(run, at, 'budget');
    else stopStages(run, run.windows.length - 1, 'tolerance');
  });
  const waiting = run.flow.stages.some(
    (stage) => buffered(stage) > 0 || stage.source.next < stage.source.total,
  );
  if (run.state.stopped === undefined && waiting && budgetSpent(pipelineBudget(run))) {
    log.warn('the pipeline budget is reached: no more submissions; jobs in flight finish', {
      budget: run.input.budget,
    });
    stopStages(run, run.windows.length - 1, 'budget');
  }
}

/** The pipeline's budget against every stage's cost and jobs under way (engine/batch-budget.ts's rule). */
function pipelineBudget(run: PipelineRun): BudgetView {
  return {
    budget: run.input.budget,
    cost: totalCost(run),
    // Every piece in a window may cost: queued for its page too (admitted against this budget).
    underWay: run.windows.reduce((sum, window) => sum + window.items.size, 0),
  };
}

/** Stages 0..upTo start nothing more: their buffered pieces and queued ones end, not started. */
export function stopStages(run: PipelineRun, upTo: number, why: 'tolerance' | 'budget' | 'cancelled'): void {
  run.state.stopped ??= why;
  endPieces(run, stopStarting(run.flow, upTo).ended);
  run.windows.slice(0, upTo + 1).forEach((window) => {
    window.state.stopping = true;
    for (const item of [...window.items.values()]) {
      if (item.phase !== 'queued' || window.sending.has(item.index)) continue;
      window.items.delete(item.index);
      endPieces(run, [notStarted(run.flow, leave(run.flow, item.index, 'running'))]);
    }
  });
  bumpPipeline(run);
}

/**
 * Writes the lines waiting, a part at a time, once a part is full (or `now`: the run is ending).
 * A part's name is fixed before it is written, so a retried write replaces it.
 */
export function startLines(run: PipelineRun, now = false): void {
  const { state } = run;
  if (run.recording || state.lines.length === 0) return;
  if (!now && state.lines.length < LINES_PER_PART) return;
  const lines = state.lines.slice(0, LINES_PER_PART);
  const part = `${workflowInfo().runId}-${state.parts}`;
  run.recording = true;
  CancellationScope.nonCancellable(() =>
    shortActivities.recordPipelineLines.executeWithOptions(
      { summary: `record ${lines.length} result lines` },
      [{ pipelineKey: state.pipelineKey, part, lines }],
    ),
  )
    .then(
      () => {
        state.lines.splice(0, lines.length);
        state.parts += 1;
      },
      (error: unknown) =>
        log.error('recording result lines failed', { error: activityOutcome(error)?.message }),
    )
    .finally(() => {
      run.recording = false;
      bumpPipeline(run);
    });
}
