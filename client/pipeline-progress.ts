/**
 * A pipeline's progress as text, one line per stage: a bar of the pieces that ended there of
 * those that may reach it, then its counts, window, buffer and cost. The CLI prints it once
 * (`pipeline status`) or redraws it on each change (`--watch`: in place on a terminal, else a
 * block per change, so a log keeps the pipeline's course).
 */
import type { PipelineProgress, PipelineStageProgress } from '../contracts/pipeline-types';

const BAR_SIZE = 24;

/** Pieces that ended at the stage, of those that reached or may reach it (the items, or more once split). */
function stageShare(stage: PipelineStageProgress, total: number): { ended: number; of: number } {
  const { completed, failed, dropped, notStarted } = stage.counts;
  const ended = completed + failed + dropped + notStarted;
  return { ended, of: Math.max(total, stage.counts.started + stage.buffered + notStarted, ended) };
}

function stageLine(stage: PipelineStageProgress, total: number, width: number, paused: boolean): string {
  const { ended, of } = stageShare(stage, total);
  const filled = of === 0 ? 0 : Math.round((ended / of) * BAR_SIZE);
  const { counts, cost } = stage;
  const parts = [
    `${counts.completed} completed`,
    `${counts.failed} failed`,
    ...(counts.dropped > 0 ? [`${counts.dropped} dropped`] : []),
    ...(counts.split > 0 ? [`${counts.split} split into ${counts.parts}`] : []),
    ...(counts.notStarted > 0 ? [`${counts.notStarted} not started`] : []),
    `${stage.inFlight} in flight`,
    `${stage.buffered} buffered`,
    ...(cost.amount > 0 ? [`cost ${cost.amount}${cost.currency ? ` ${cost.currency}` : ''}`] : []),
  ];
  const state = stage.stopped ? ' (stopped)' : paused ? ' (paused)' : '';
  return `${stage.name.padEnd(width)} [${'#'.repeat(filled)}${'.'.repeat(BAR_SIZE - filled)}] ${ended}/${of} ended: ${parts.join(', ')}${state}`;
}

/** One line per stage. */
export function pipelineProgressLines(progress: PipelineProgress): string[] {
  const width = Math.max(...progress.stages.map((stage) => stage.name.length));
  return progress.stages.map((stage) => stageLine(stage, progress.total, width, progress.paused));
}

export interface PipelineProgressBars {
  update(progress: PipelineProgress): void;
}

/**
 * Draws each change: on a terminal the stages' lines are redrawn in place (the cursor moved up
 * over the last drawing); elsewhere each change is a block of lines, an unchanged one skipped.
 */
export function createPipelineProgressBars(
  write: (text: string) => void,
  options: { isTTY?: boolean } = {},
): PipelineProgressBars {
  let last: string[] = [];
  return {
    update(progress) {
      const lines = pipelineProgressLines(progress);
      if (lines.join('\n') === last.join('\n')) return;
      const up = options.isTTY === true && last.length > 0 ? `\x1b[${last.length}A` : '';
      const clear = options.isTTY === true ? '\x1b[2K' : '';
      write(`${up}${lines.map((line) => `${clear}${line}\n`).join('')}`);
      last = lines;
    },
  };
}
