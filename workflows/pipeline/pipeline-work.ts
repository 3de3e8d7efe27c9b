/**
 * The pipeline's own work beside its windows': admitting pieces to the stages' windows, running
 * transforms, stopping stages (a tolerance passed, a budget spent) and writing result lines.
 */
import { CancellationScope, log, workflowInfo } from '@temporalio/workflow';
import type { ParsedPipelineStage } from '../../contracts/pipeline-input';
import { queuedItem } from '../../engine/item-state';
import {
  admit,
  failed as pieceFailed,
  stopStarting,
  takeTransforms,
  transformed,
} from '../../engine/pipeline-flow';
import { leave, notStarted } from '../../engine/pipeline-state';
import { shortActivities } from '../batch/batch-activities';
import { budgetRoom, checkStops } from '../batch/batch-controls';
import type { BatchRun } from '../batch/batch-run';
import { activityOutcome } from '../shared/job-failures';
import { bumpPipeline, endPieces, type PipelineRun, totalCost, wakeWindow } from './pipeline-run';

/** Transform calls under way at once (each an activity on up to a page of pieces). */
const MAX_TRANSFORM_CALLS = 4;
const LINES_PER_PART = 2_000;

/** Pieces that may start enter their stage's window, queued for its next page. */
export function admitPieces(run: PipelineRun): void {
  const allowed = run.windows.map((window) => budgetRoom(window));
  for (const start of admit(run.flow, { allowed, pageSize: run.input.pageSize })) {
    const window = run.windows[start.stage] as BatchRun;
    for (const piece of start.pieces) window.items.set(piece.seq, queuedItem(piece.seq));
    // The window's cursor is its count of pieces admitted: its tolerance's rate counts them, and
    // it reads no item of its own (cursor and total kept equal).
    window.state.total += start.pieces.length;
    window.state.cursor = window.state.total;
    wakeWindow(window);
  }
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
      const failAll = (reason: string) => {
        for (const piece of pieces)
          endPieces(run, pieceFailed(run.flow, piece.seq, { status: 'TRANSFORM_FAILED', reason }));
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
          (error: unknown) => failAll(activityOutcome(error)?.message ?? String(error)),
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
  const { budget } = run.input;
  if (budget !== undefined && run.state.stopped === undefined && totalCost(run).amount >= budget) {
    log.warn('the pipeline budget is reached: no more submissions; jobs in flight finish', { budget });
    stopStages(run, run.windows.length - 1, 'budget');
  }
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

/** Writes the lines waiting, a part at a time (a part's name is fixed before it is written). */
export function startLines(run: PipelineRun): void {
  const { state } = run;
  if (run.recording || state.lines.length === 0) return;
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
