/**
 * The pipeline workflow: items flow through ordered stages, each usually on its own endpoint,
 * and move to the next stage as soon as they finish the one before (docs/architecture.md,
 * "Pipelines"). One workflow holds a batch window per stage and the flow between them:
 *
 * - The flow (engine/pipeline-flow.ts) decides which pieces enter which stage's window, with a
 *   bounded buffer between stages: a slow stage stops the stages before it.
 * - Each stage's window is a batch's (workflows/batch/batch-window.ts): the per-item engine,
 *   pages through the endpoint's gate, watchers, retries, leases, tolerance and budget share.
 *   Its submit makes each request in the activity (the map, or the input a transform wrote) and
 *   its watcher writes each result under the stage and the piece: outputs never enter history.
 * - A transform registered on the worker runs in an activity and may drop or split a piece.
 * - Each piece that ends gets a result line naming its item, its part and the stage it ended at.
 * - The run continues as new (every stage's window, buffers and counters in one carry) once its
 *   activities are done; pause, resume and cancel act on every stage.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { pipelineCurrentDetails } from '../../contracts/current-details';
import {
  type ParsedPipelineInput,
  parsePipelineInput,
  stageConcurrencyIssue,
} from '../../contracts/pipeline-input';
import { PIPELINE_FAILURE, type PipelineSummary } from '../../contracts/pipeline-types';
import type { ItemDue } from '../../engine/item-state';
import { carryFlow } from '../../engine/pipeline-carry';
import { flowDone, setStageConcurrency } from '../../engine/pipeline-flow';
import { stageActivities } from '../batch/batch-activities';
import { cancelInFlight } from '../batch/batch-cancel';
import { runIsFull } from '../batch/batch-continue';
import { batchWantsHintQuery, batchWebhooksSignal } from '../batch/batch-definitions';
import { type BatchRun, carriedState } from '../batch/batch-run';
import { idle } from '../batch/batch-run-counts';
import { readWorkers } from '../batch/batch-submit';
import { cancelWatchers, receiveHint, wantsHint } from '../batch/batch-watch';
import { settleWindow, startWindowWork, windowDue } from '../batch/batch-window';
import { emitOnEnd, failureData, isEnd } from '../shared/emit-on-end';
import { wakeAt } from '../shared/wake-timer';
import {
  pausePipelineSignal,
  pipelineProgressQuery,
  pipelineSummaryQuery,
  resumePipelineSignal,
  setPipelineConcurrencyUpdate,
} from './pipeline-definitions';
import {
  bumpPipeline,
  moved,
  newPipelineRun,
  type PipelineRun,
  type PipelineRunInput,
  type PipelineState,
  pipelineProgress,
  pipelineSummary,
  type RedriveStart,
} from './pipeline-run';
import { admitPieces, checkPipelineStops, startLines, startTransforms, stopStages } from './pipeline-work';

export type { PipelineRunInput } from './pipeline-run';

const MAX_HINTS_PER_SIGNAL = 1_000;

export async function serverlessPipeline(input: PipelineRunInput): Promise<PipelineSummary> {
  const { carried, ...caller } = input;
  const parsed = parsePipelineInput(caller);
  if (!parsed.ok) {
    throw ApplicationFailure.create({
      type: PIPELINE_FAILURE.badRequest,
      message: `invalid pipeline input: ${parsed.field}: ${parsed.rule}`,
      nonRetryable: true,
      details: [{ field: parsed.field, rule: parsed.rule }],
    });
  }
  const staged = carried ? undefined : await stageItems(parsed.value, caller.items);
  const state = carried?.state ?? (staged as StagedPipeline).state;
  const run = newPipelineRun(parsed.value, caller, state, carried, Date.now(), staged?.redrive);
  listen(run);
  // A stage over a route sizes each endpoint's window by its workers, as a batch's does.
  if (!carried)
    for (const window of run.windows) if (window.route.endpoints.length > 1) await readWorkers(window);
  const emitTo = parsed.value.emitOnEnd;
  try {
    const summary = await loop(run);
    await emitOnEnd(emitTo, 'pipeline.completed', { ...summary });
    return summary;
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) {
      run.cancelled = true;
      await CancellationScope.nonCancellable(() => cancelAll(run));
    } else if (isEnd(error)) await emitOnEnd(emitTo, 'pipeline.failed', failureData(error));
    throw error;
  }
}

interface StagedPipeline {
  state: PipelineState;
  redrive?: RedriveStart;
}

/**
 * The items as a manifest in the store: only its key enters history. A redrive's are the pieces
 * of the pipeline redriven that did not complete, each listed at the stage it ended at.
 */
async function stageItems(
  input: ParsedPipelineInput,
  items: PipelineRunInput['items'],
): Promise<StagedPipeline> {
  if ('redrive' in items) {
    const { pipelineKey, listed, reserved, parked, ...staged } = await stageActivities.stagePipelineRedrive({
      key: items.redrive.key,
      stages: input.stages.map((stage) => ({ name: stage.name, transform: stage.transform !== undefined })),
    });
    return {
      state: newPipelineState({ batchKey: pipelineKey, ...staged }),
      redrive: { listed, reserved, parked },
    };
  }
  return { state: newPipelineState(await stageActivities.stageBatchItems({ items })) };
}

function newPipelineState(staged: {
  batchKey: string;
  store?: string | undefined;
  manifestKey: string;
  total: number;
  runLimit?: PipelineState['runLimit'];
  statusLimit?: PipelineState['statusLimit'];
}): PipelineState {
  return {
    pipelineKey: staged.batchKey,
    ...(staged.store === undefined ? {} : { store: staged.store }),
    manifestKey: staged.manifestKey,
    total: staged.total,
    ...(staged.runLimit === undefined ? {} : { runLimit: staged.runLimit }),
    ...(staged.statusLimit === undefined ? {} : { statusLimit: staged.statusLimit }),
    paused: false,
    lines: [],
    parts: 0,
    ended: { completed: 0, failed: 0, dropped: 0, notStarted: 0 },
    startedAt: Date.now(),
    runs: 1,
    events: 0,
  };
}

function listen(run: PipelineRun): void {
  setHandler(pipelineProgressQuery, () => pipelineProgress(run));
  setHandler(pipelineSummaryQuery, () => pipelineSummary(run));
  const pause = (paused: boolean) => {
    run.state.paused = paused;
    for (const window of run.windows) window.state.paused = paused;
    bumpPipeline(run);
  };
  setHandler(
    setPipelineConcurrencyUpdate,
    ({ stage, maxConcurrency }) => {
      const at = run.flow.stages.findIndex((flowStage) => flowStage.name === stage);
      const window = run.windows[at] as BatchRun;
      const previous = window.state.maxConcurrency;
      setStageConcurrency(run.flow, at, maxConcurrency);
      window.state.maxConcurrency = maxConcurrency;
      bumpPipeline(run);
      return previous;
    },
    {
      validator: (change) => {
        const issue = stageConcurrencyIssue(change, run.flow.stages);
        if (issue) throw new Error(`${issue.field}: ${issue.rule}`);
      },
    },
  );
  setHandler(pausePipelineSignal, () => pause(true));
  setHandler(resumePipelineSignal, () => pause(false));
  // A piece's number names its item in the window of the stage it is at. A webhook names the stage
  // of its job too: a piece has had a job at each stage before, and a late webhook of one of those
  // is no orphan of the stage it is at now (adopted when a page cut by a dead worker times out, it
  // would be looked for at this stage's endpoint and found gone: under a lease, the piece would be
  // sent again while its real orphan runs).
  const windowOf = (seq: unknown, stage: unknown) => {
    const piece = typeof seq === 'number' ? run.flow.pieces.get(seq) : undefined;
    if (piece === undefined || run.flow.stages[piece.stage]?.name !== stage) return undefined;
    return run.windows[piece.stage];
  };
  setHandler(batchWantsHintQuery, ({ item, jobId, stage }) => {
    const window = windowOf(item, stage);
    return window === undefined ? false : wantsHint(window, item, jobId);
  });
  setHandler(batchWebhooksSignal, (payload) => {
    const hints: unknown = (payload as { hints?: unknown } | undefined)?.hints;
    if (!Array.isArray(hints)) return;
    for (const hint of hints.slice(0, MAX_HINTS_PER_SIGNAL)) {
      const { item, stage } = (hint ?? {}) as { item?: unknown; stage?: unknown };
      const window = windowOf(item, stage);
      if (window) receiveHint(window, hint);
    }
  });
}

async function loop(run: PipelineRun): Promise<PipelineSummary> {
  for (;;) {
    const now = Date.now();
    for (const window of run.windows) settleWindow(window, now);
    checkPipelineStops(run);
    if (!run.draining && runIsFull(run.input.maxEventsPerRun)) run.draining = true;
    if (run.draining) {
      for (const window of run.windows) cancelWatchers(window);
      if (allIdle(run)) await continueWithNewRun(run);
    } else {
      if (!run.state.paused) admitPieces(run);
      startTransforms(run);
      for (const window of run.windows) startWindowWork(window, now);
    }
    // Lines are written a full part at a time, and all of them once nothing is left to do or
    // the run is about to continue as new.
    startLines(run, run.draining || flowDone(run.flow));
    // The UI's current details: no history event, so every turn may refresh them.
    setCurrentDetails(pipelineCurrentDetails(pipelineProgress(run)));
    if (finished(run)) return end(run);
    const seen = moved(run);
    wakeAt(run, nextDue(run, now), () => bumpPipeline(run));
    await condition(() => moved(run) !== seen);
  }
}

function nextDue(run: PipelineRun, now: number): ItemDue | undefined {
  let next: ItemDue | undefined;
  for (const window of run.windows) {
    const due = windowDue(window, now);
    if (due !== undefined && (next === undefined || due.at < next.at)) next = due;
  }
  return next;
}

/** No activity of the pipeline or of a window under way. */
function allIdle(run: PipelineRun): boolean {
  return run.transforming === 0 && run.listing === 0 && !run.recording && run.windows.every(idle);
}

function finished(run: PipelineRun): boolean {
  return (
    flowDone(run.flow) &&
    run.state.lines.length === 0 &&
    allIdle(run) &&
    run.windows.every((window) => window.items.size === 0 && window.state.toCancel.length === 0)
  );
}

function end(run: PipelineRun): PipelineSummary {
  const summary = pipelineSummary(run);
  const { stopped } = run.state;
  if (stopped === 'tolerance' || stopped === 'budget') {
    throw ApplicationFailure.create({
      type: stopped === 'tolerance' ? PIPELINE_FAILURE.toleranceExceeded : PIPELINE_FAILURE.budgetExceeded,
      message:
        stopped === 'tolerance'
          ? "a stage's failures passed its tolerance: the pipeline stopped"
          : 'the budget was reached: the pipeline stopped',
      nonRetryable: true,
      details: [summary],
    });
  }
  return summary;
}

/** Every stage's window, buffers and counters cross in one carry, once nothing is under way. */
async function continueWithNewRun(run: PipelineRun): Promise<never> {
  await condition(allHandlersFinished);
  const { items: _items, ...rest } = run.caller;
  const state: PipelineState = {
    ...run.state,
    runs: run.state.runs + 1,
    events: run.state.events + workflowInfo().historyLength,
  };
  const next: PipelineRunInput = {
    ...rest,
    items: { manifest: { key: run.state.manifestKey } },
    carried: { state, flow: carryFlow(run.flow), windows: run.windows.map(carriedState) },
  };
  return continueAsNew<typeof serverlessPipeline>(next);
}

/** A cancelled pipeline: every stage's jobs in flight cancelled, every piece's line written. */
async function cancelAll(run: PipelineRun): Promise<void> {
  stopStages(run, run.windows.length - 1, 'cancelled');
  for (const window of run.windows) await cancelInFlight(window);
  await condition(() => run.transforming === 0 && run.listing === 0);
  // Pieces a transform answered for meanwhile wait in a stopped buffer: they end there too.
  stopStages(run, run.windows.length - 1, 'cancelled');
  await condition(() => !run.recording);
  while (run.state.lines.length > 0) {
    startLines(run, true);
    await condition(() => !run.recording);
  }
}
