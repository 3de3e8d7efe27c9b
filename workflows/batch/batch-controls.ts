/**
 * The activities mode's side of what steers a batch and what it tells (batch-report.ts has the one
 * copy both modes use): its view for the summary and the progress, its webhook signals, and the
 * failure tolerance and the budget that stop its submissions.
 */
import { log, setHandler } from '@temporalio/workflow';
import type { BatchEndpointSplit, BatchProgress, BatchSummary } from '../../contracts/batch-summary';
import { jobWebhookSignal } from '../job/job-definitions';
import { batchWebhooksSignal } from './batch-definitions';
import { failureCount } from './batch-outcomes';
import {
  type BatchView,
  batchProgress,
  batchSummary,
  exceeded,
  listenToControls,
  overBudget,
  roomInBudget,
} from './batch-report';
import { type BatchRun, bump, endpointIdAt } from './batch-run';
import { inFlight, submitting, withJobs } from './batch-run-counts';
import { receiveHint, wantsHint } from './batch-watch';

/** A gathered signal's hints taken at most (the gateway sends far fewer). */
const MAX_HINTS_PER_SIGNAL = 1_000;

export function listen(run: BatchRun): void {
  listenToControls({
    mode: 'activities',
    state: run.state,
    view: () => viewOf(run),
    wantsHint: ({ item, jobId }) => wantsHint(run, item, jobId),
    wake: () => bump(run),
  });
  setHandler(jobWebhookSignal, (hint) => receiveHint(run, hint));
  setHandler(batchWebhooksSignal, (payload) => {
    const hints: unknown = (payload as { hints?: unknown } | undefined)?.hints;
    if (!Array.isArray(hints)) return;
    for (const hint of hints.slice(0, MAX_HINTS_PER_SIGNAL)) receiveHint(run, hint);
  });
}

/** The run as the summary, the progress and the stop rules see it. */
function viewOf(run: BatchRun): BatchView {
  return {
    input: run.input,
    state: run.state,
    cancelled: run.cancelled,
    underWay: underWay(run),
    withJobs: withJobs(run),
    endpoints: endpointSplit(run),
  };
}

/** Stops the submissions once the failures pass the tolerance or the budget is reached. */
export function checkStops(run: BatchRun): void {
  const { state } = run;
  if (state.stopping) return;
  const view = viewOf(run);
  if (exceeded(view)) {
    state.stopping = true;
    log.warn('failure tolerance exceeded: no more submissions; jobs in flight finish', {
      failures: failureCount(state.counts),
    });
    return;
  }
  if (overBudget(view) && waiting(run)) {
    state.stopping = true;
    state.budgetExceeded = true;
    log.warn('budget reached: no more submissions; jobs in flight finish', {
      estimate: state.cost.amount,
      budget: run.input.budget,
    });
  }
}

/** Items still to submit (a budget reached after the last submit stops nothing). */
function waiting(run: BatchRun): boolean {
  const { state } = run;
  if (state.cursor < state.total || run.stage?.waiting()) return true;
  for (const item of run.items.values())
    if (item.phase === 'queued' || item.phase === 'uncertain') return true;
  return false;
}

/** Jobs that may still cost: in flight (retries waiting included), uncertain, being submitted. */
function underWay(run: BatchRun): number {
  return inFlight(run) + submitting(run);
}

/** How many more items the budget lets start (engine/batch-budget.ts). */
export function budgetRoom(run: BatchRun): number {
  return roomInBudget(viewOf(run));
}

/** The per-endpoint split, by endpoint id in route order. */
function endpointSplit(run: BatchRun): Record<string, BatchEndpointSplit> {
  const now = Date.now();
  const split: Record<string, BatchEndpointSplit> = {};
  run.state.endpoints.forEach((tally, at) => {
    const { completed, failed, moved, cost, drainedUntil } = tally;
    split[endpointIdAt(run, at)] = {
      completed,
      failed,
      moved,
      ...(cost === undefined ? {} : { cost }),
      ...(drainedUntil !== undefined && drainedUntil > now ? { drainedUntil } : {}),
    };
  });
  return split;
}

export function summary(run: BatchRun): BatchSummary {
  return batchSummary(viewOf(run));
}

export function progress(run: BatchRun): BatchProgress {
  return batchProgress(viewOf(run));
}
