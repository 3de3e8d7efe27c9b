/**
 * The current details a running workflow shows in the Temporal UI (`setCurrentDetails`): a small
 * Markdown table rendered from the same snapshot its progress query answers. Setting them costs no
 * history event (the UI reads them through the workflow's metadata query), so a workflow may
 * refresh them on every turn of its loop. Pure: the workflow bundle carries it, tests read it
 * without a server.
 */
import type { AutomationControls, AutomationState } from './automation-input';
import type { BatchProgress } from './batch-summary';
import type { GateView } from './endpoint-gate';
import type { JobSnapshot } from './job-snapshot';
import type { PipelineProgress } from './pipeline-types';
import { formatCount, formatDuration, formatInstant, formatMoney, markdownTable } from './progress-markdown';

/** A batch: counts, throughput, estimated end, cost so far, budget left, paused. `now`: workflow time. */
export function batchCurrentDetails(progress: BatchProgress, now: number): string {
  const { counts, cost } = progress;
  const failed = progress.done - counts.completed - counts.cancelled;
  const queued = Math.max(progress.total - progress.cursor, 0);
  const ended = progress.done >= progress.total && progress.total > 0;
  const eta = ended
    ? 'done'
    : progress.etaMs !== undefined
      ? `${formatInstant(now + progress.etaMs)} (in ${formatDuration(progress.etaMs)})`
      : 'not yet known';
  const budgetLeft =
    progress.budget === undefined
      ? undefined
      : formatMoney(Math.max(progress.budget - cost.amount, 0), cost.currency);
  const state = progress.paused
    ? 'paused: no new submissions'
    : progress.toleranceExceeded
      ? 'stopping: failure tolerance exceeded'
      : progress.budgetExceeded
        ? 'stopping: budget reached'
        : ended
          ? 'finished'
          : 'running';
  return [
    `**${formatCount(progress.done)} of ${formatCount(progress.total)} items done**`,
    '',
    markdownTable(
      [
        ['Completed', formatCount(counts.completed)],
        ['Failed', formatCount(failed)],
        ['In flight', formatCount(progress.inFlight)],
        ['Queued', formatCount(queued)],
        ['Cancelled', formatCount(counts.cancelled)],
        ['Throughput', `${progress.ratePerSecond.toFixed(1)} items/s`],
        ['Estimated end', eta],
        ['Cost so far', formatMoney(cost.amount, cost.currency)],
        ['Budget left', budgetLeft],
        ['State', state],
      ],
      ['Items', 'Now'],
    ),
  ].join('\n');
}

/** A job: remote status, attempt, queue delay, cost; on a route, its endpoint and moves. */
export function jobCurrentDetails(snapshot: JobSnapshot): string {
  const hops = snapshot.hops;
  return markdownTable(
    [
      ['Phase', snapshot.phase],
      ['Remote status', snapshot.status ?? 'not submitted yet'],
      ['Remote job', snapshot.jobId],
      ['Endpoint', hops ? snapshot.endpointId : undefined],
      [
        'Moves',
        hops?.length
          ? hops.map((hop) => `${hop.from} → ${hop.to} (${hop.reason}, job ${hop.jobId})`).join('; ')
          : undefined,
      ],
      ['Attempt', formatCount(Math.max(snapshot.attempts, 1))],
      ['Queue delay', snapshot.delayTime !== undefined ? formatDuration(snapshot.delayTime) : undefined],
      ['Cost', snapshot.cost ? formatMoney(snapshot.cost.amount, snapshot.cost.currency) : undefined],
    ],
    ['Job', 'Now'],
  );
}

function flowControlsText(controls: AutomationControls): string {
  const parts = [
    controls.debounce > 0 ? `debounce ${formatDuration(controls.debounce)}` : undefined,
    controls.batch
      ? `batches of up to ${formatCount(controls.batch.maxEvents)} events or ${formatDuration(controls.batch.maxWait)}`
      : undefined,
    `${formatCount(controls.concurrency)} run${controls.concurrency === 1 ? '' : 's'} at once`,
    `repeats dropped for ${formatDuration(controls.dedupeWindow)}`,
  ];
  return parts.filter((part): part is string => part !== undefined).join(', ');
}

/**
 * An automation: the events waiting (pending, grouped and waiting for a slot), the runs in flight,
 * the runs started, completed and failed so far, cost and budget, and the worker's flow controls
 * (which its static details cannot show: the sender does not hold them).
 */
export function automationCurrentDetails(state: AutomationState, controls: AutomationControls): string {
  const { counters } = state;
  const cost = counters.cost ?? 0;
  const overBudget = controls.budget !== undefined && cost >= controls.budget;
  const busy = state.inFlight + state.starting;
  const waiting = state.pending + state.ready;
  const condition = overBudget
    ? busy > 0
      ? 'budget reached: no new runs, waiting for the runs in flight'
      : 'budget reached: no new runs'
    : state.ready > 0 && busy >= controls.concurrency
      ? 'at its concurrency: groups wait for a run to end'
      : busy > 0 || waiting > 0
        ? 'running'
        : 'idle: waiting for events';
  return [
    `**${[
      `${formatCount(state.pending)} pending event${state.pending === 1 ? '' : 's'}`,
      state.ready > 0
        ? `${formatCount(state.ready)} group${state.ready === 1 ? '' : 's'} waiting`
        : undefined,
      `${formatCount(state.inFlight)} run${state.inFlight === 1 ? '' : 's'} in flight`,
    ]
      .filter((part) => part !== undefined)
      .join(', ')}**`,
    '',
    markdownTable(
      [
        ['Pending events', formatCount(state.pending)],
        ['Groups waiting for a run', formatCount(state.ready)],
        ['Runs starting', state.starting > 0 ? formatCount(state.starting) : undefined],
        ['Runs in flight', formatCount(state.inFlight)],
        ['Runs started', formatCount(counters.runsStarted)],
        ['Runs completed', formatCount(counters.runsCompleted)],
        ['Runs failed', formatCount(counters.runsFailed)],
        ['Groups skipped', counters.groupsSkipped > 0 ? formatCount(counters.groupsSkipped) : undefined],
        ['Events received', formatCount(counters.received)],
        ['Repeats dropped', formatCount(counters.duplicates)],
        ['Invalid events', counters.invalid > 0 ? formatCount(counters.invalid) : undefined],
        ['Cost so far', formatMoney(cost)],
        [
          'Budget left',
          controls.budget === undefined ? undefined : formatMoney(Math.max(controls.budget - cost, 0)),
        ],
        ['Flow controls', flowControlsText(controls)],
        ['State', condition],
      ],
      ['Automation', 'Now'],
    ),
  ].join('\n');
}

/** An endpoint's gate: its state, limit and window, and per fairness key the requests waiting and granted. */
/** The service's queue as the gate last saw it, and whether it holds submits back for it. */
function serviceQueueRow(view: GateView): Array<[string, string]> {
  const queue = view.serviceQueue;
  if (queue === undefined) return [];
  const workers = `${formatCount(queue.running)} of ${queue.workersMax === undefined ? '?' : formatCount(queue.workersMax)} workers busy`;
  const held = queue.room === undefined ? 'not held' : `held: room for ${formatCount(queue.room)}`;
  const taken =
    queue.takenPerSecond === undefined
      ? ''
      : `, ${formatCount(Math.round(queue.takenPerSecond))} taken a second`;
  return [['service queue', `${formatCount(queue.inQueue)} waiting, ${workers}${taken}, ${held}`]];
}

export function gateCurrentDetails(view: GateView): string {
  const limit = view.runLimit === undefined ? 'not yet known' : `${formatCount(view.runLimit)} /run per 10 s`;
  return [
    `**Endpoint ${view.endpointId}: ${view.paused ? 'paused: no submits granted' : 'granting submits'}**`,
    '',
    markdownTable([
      ['limit', view.runLimitOverride === undefined ? limit : `${limit} (set by an operator)`],
      ['in the window now', formatCount(view.inWindow)],
      ...serviceQueueRow(view),
      ...view.keys.map((key): [string, string] => [
        `key ${key.fairnessKey === '' ? '(none)' : key.fairnessKey}`,
        `${formatCount(key.waiting)} waiting, ${formatCount(key.granted)} granted` +
          (key.weight === undefined ? '' : `, weight ${key.weight}`),
      ]),
    ]),
  ].join('\n');
}

/** A pipeline: a row per stage (its pieces done, failed, in its window and in its buffer, its cost). */
export function pipelineCurrentDetails(progress: PipelineProgress): string {
  const state = progress.paused
    ? 'paused: no new submissions'
    : progress.stopped === undefined
      ? 'running'
      : `stopping: ${progress.stopped === 'tolerance' ? 'failure tolerance exceeded' : progress.stopped === 'budget' ? 'budget reached' : 'cancelled'}`;
  const rows = progress.stages.map((stage) => {
    const { counts } = stage;
    const cells = [
      stage.name,
      formatCount(counts.completed),
      formatCount(counts.failed),
      formatCount(stage.running),
      formatCount(stage.buffered),
      formatCount(counts.dropped),
      formatCount(counts.parts),
      formatMoney(stage.cost.amount, stage.cost.currency),
    ];
    return `| ${cells.join(' | ')} |`;
  });
  return [
    `**${formatCount(progress.total)} items through ${progress.stages.length} stages: ${state}**`,
    '',
    '| Stage | Completed | Failed | In window | Buffered | Dropped | Split into | Cost |',
    '| --- | --: | --: | --: | --: | --: | --: | --: |',
    ...rows,
  ].join('\n');
}
