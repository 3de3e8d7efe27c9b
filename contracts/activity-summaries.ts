/**
 * The one-line summaries the Temporal UI shows on a workflow's activities and timers: what this
 * call does in this run ("submit items 2,001–2,500 to endpoint whisper", "wait for job abc"),
 * instead of the bare activity type. Workflows pass them as `summary` (an activity:
 * `proxy.x.executeWithOptions({ summary }, [args])`; a timer: `sleep(ms, { summary })` or
 * `condition(fn, ms, { summary })`). They ride in the command's user metadata, so they cost no
 * history event of their own. Pure and deterministic (workflow time in, text out), so a replay
 * renders the same text.
 */
import { formatCount, formatDuration, formatInstant } from './progress-markdown';

/** Ids longer than this are cut in a summary (a summary is one short line). */
const MAX_ID_CHARS = 64;
/** Index ranges listed before "and N more". */
const MAX_RANGES = 4;

function id(text: string): string {
  return text.length <= MAX_ID_CHARS ? text : `${text.slice(0, MAX_ID_CHARS - 1)}…`;
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

/**
 * Item indexes (0-based, as the batch numbers them) as the 1-based ranges a person reads:
 * [2000..2499] → "items 2,001–2,500"; [2, 6, 7, 8] → "items 3, 7–9".
 */
export function itemRanges(indexes: readonly number[]): string {
  const sorted = [...new Set(indexes)].sort((a, b) => a - b);
  if (sorted.length === 0) return 'no items';
  const ranges: [number, number][] = [];
  for (const index of sorted) {
    const last = ranges[ranges.length - 1];
    if (last && index === last[1] + 1) last[1] = index;
    else ranges.push([index, index]);
  }
  const shown = ranges
    .slice(0, MAX_RANGES)
    .map(([from, to]) =>
      from === to ? formatCount(from + 1) : `${formatCount(from + 1)}–${formatCount(to + 1)}`,
    );
  const rest = ranges.slice(MAX_RANGES).reduce((sum, [from, to]) => sum + to - from + 1, 0);
  const noun = sorted.length === 1 ? 'item' : 'items';
  return `${noun} ${shown.join(', ')}${rest > 0 ? ` and ${formatCount(rest)} more` : ''}`;
}

// ------------------------------------------------------------------------------------------------
// Jobs

/** The submit of a job ("submit job to endpoint x"; from the second submission on, its number). */
export function submitJobSummary(endpointId: string, submission = 1): string {
  return `submit job to endpoint ${id(endpointId)}${submission > 1 ? ` (submission ${formatCount(submission)})` : ''}`;
}

/** A runsync call: the job runs and the answer comes back on the same call. */
export function runJobSyncSummary(endpointId: string): string {
  return `run job on endpoint ${id(endpointId)} and wait for its answer`;
}

/** A wait on the remote job's next change (poll or webhook), with its bound when it has one. */
export function waitForJobSummary(jobId: string, until?: number): string {
  return `wait for job ${id(jobId)}${until !== undefined ? ` until ${formatInstant(until)}` : ''}`;
}

/** One look at the remote job's status. */
export function fetchJobStatusSummary(jobId: string): string {
  return `look at job ${id(jobId)}`;
}

/** A /status?ttl= that gives the job a new ttl (the service counts it from submission). */
export function extendJobTtlSummary(jobId: string, ttlMs: number): string {
  return `extend job ${id(jobId)}'s ttl to ${formatDuration(ttlMs)} from submission`;
}

/** The service's own retry of a failed job. */
export function retryJobSummary(jobId: string, retry: number): string {
  return `retry job ${id(jobId)} (retry ${formatCount(retry)})`;
}

export function cancelJobSummary(jobId: string): string {
  return `cancel job ${id(jobId)}`;
}

export function streamJobSummary(jobId: string): string {
  return `stream job ${id(jobId)}'s output to the sink`;
}

/** The bound on a finished job's stream: it is cut if it has not drained by then. */
export function streamDrainSummary(jobId: string, withinMs: number): string {
  return `let job ${id(jobId)}'s stream drain for up to ${formatDuration(withinMs)}`;
}

/** The timer before a retry of a failed or timed-out job. */
export function retryBackoffSummary(delayMs: number, retry: number): string {
  return `wait ${formatDuration(delayMs)} before retry ${formatCount(retry)}`;
}

/** The timer before a submit is sent again (the service refused or did not answer). */
export function submitAgainSummary(delayMs: number): string {
  return `wait ${formatDuration(delayMs)} before submitting again`;
}

/** The timer until a submit lease ends, after which a look tells whether an unanswered submit made a job. */
export function leaseEndSummary(until: number): string {
  return `wait for the submit lease to end at ${formatInstant(until)}`;
}

/** The wait for the webhook of a job whose submit answer was lost (an orphan), bounded. */
export function orphanWebhookSummary(until: number): string {
  return `wait for the orphan's webhook until ${formatInstant(until)}`;
}

// ------------------------------------------------------------------------------------------------
// Batches

/** A page of submissions: the items it carries, by 1-based number, and where. */
export function submitItemsSummary(indexes: readonly number[], endpointId: string): string {
  return `submit ${itemRanges(indexes)} to endpoint ${id(endpointId)}`;
}

/** A watcher of jobs in flight. */
export function watchJobsSummary(count: number): string {
  return `watch ${plural(count, 'job')}`;
}

/** The service's retries of failed jobs, as one call. */
export function retryJobsSummary(count: number): string {
  return `retry ${plural(count, 'job')}`;
}

export function cancelJobsSummary(count: number): string {
  return `cancel ${plural(count, 'job')}`;
}

/** A route's look at an endpoint's room (GET /health). */
export function endpointCapacitySummary(endpointId: string): string {
  return `read the room of endpoint ${id(endpointId)}`;
}

/** A route's read of its endpoints' maximum worker counts (they size a batch's windows). */
export function endpointWorkersSummary(endpointIds: readonly string[]): string {
  return `read the worker counts of ${plural(endpointIds.length, 'endpoint')}`;
}

/** A route's withdrawal of queued jobs from an endpoint that starves them. */
export function withdrawJobsSummary(count: number, endpointId: string): string {
  return `withdraw ${plural(count, 'queued job')} from endpoint ${id(endpointId)}`;
}

export function recordResultsSummary(count: number): string {
  return `record ${plural(count, 'result')}`;
}

/** What an item's due time brings: its retry, its submit after a backoff, or the end of its orphan wait. */
export type DueWork = 'retry' | 'submit' | 'orphan-wait-end' | 'route-check';

const DUE_WORK: Record<DueWork, string> = {
  retry: 'the next retry',
  submit: 'the next submit after a backoff',
  'orphan-wait-end': "the end of an uncertain submit's wait for its orphan",
  'route-check': "a look at a route's endpoints (a queue waiting too long, a drain ending)",
};

/** The batch's one timer: when its next item falls due, and what falls due then. */
export function nextDueSummary(at: number, work: DueWork): string {
  return `wake at ${formatInstant(at)} for ${DUE_WORK[work]}`;
}

// ------------------------------------------------------------------------------------------------
// Automations

export function readAutomationSummary(name: string): string {
  return `read the definition of automation ${id(name)}`;
}

/** The user's `run` for one group of events (seq: the run's number within the automation). */
export function planRunSummary(seq: number, events: number): string {
  return `plan run ${formatCount(seq)} for ${plural(events, 'event')}`;
}

/** The wait for a run that an earlier run of the automation started. */
export function awaitRunSummary(workflowId: string): string {
  return `wait for run ${id(workflowId)} to end`;
}

/** The end event a job, batch or run sends on. */
export function emitEventSummary(type: string, automation: string, key: string): string {
  return `send ${type} to automation ${id(automation)} (key ${id(key)})`;
}

/** The automation's timer until its pending events form a group (debounce or batch wait). */
export function groupDueSummary(at: number, pending: number): string {
  return `group ${plural(pending, 'pending event')} at ${formatInstant(at)} unless more arrive first`;
}

/** The automation's idle timer: it ends then unless an event arrives. */
export function idleEndSummary(at: number): string {
  return `end at ${formatInstant(at)} unless an event arrives (idle)`;
}

// ------------------------------------------------------------------------------------------------
// Endpoints

export function findEndpointsSummary(name: string): string {
  return `find endpoints named ${id(name)}`;
}

export function createEndpointSummary(name: string, templateId: string): string {
  return `create endpoint ${id(name)} from template ${id(templateId)}`;
}

export function readEndpointSummary(endpointId: string): string {
  return `read endpoint ${id(endpointId)}`;
}

/** A save of some fields (names only: values may be long or private). */
export function updateEndpointSummary(endpointId: string, fields: readonly string[]): string {
  return `update endpoint ${id(endpointId)}: ${fields.length > 0 ? fields.join(', ') : 'no change'}`;
}

export function scaleToZeroSummary(endpointId: string): string {
  return `scale endpoint ${id(endpointId)} to zero workers`;
}

/** A look at /health, and what the workflow waits for. */
export function endpointHealthSummary(endpointId: string, waitingFor: string): string {
  return `look at endpoint ${id(endpointId)}'s health (waiting for ${waitingFor})`;
}

/** The timer between two looks at /health. */
export function healthPollSummary(endpointId: string, delayMs: number, waitingFor: string): string {
  return `look at endpoint ${id(endpointId)} again in ${formatDuration(delayMs)} (waiting for ${waitingFor})`;
}

export function purgeQueueSummary(endpointId: string): string {
  return `purge the queue of endpoint ${id(endpointId)}`;
}

export function cancelEndpointJobSummary(endpointId: string, jobId: string): string {
  return `cancel job ${id(jobId)} on endpoint ${id(endpointId)}`;
}

export function deleteEndpointSummary(endpointId: string): string {
  return `delete endpoint ${id(endpointId)}`;
}

export function deleteNetworkVolumeSummary(volumeId: string): string {
  return `delete network volume ${id(volumeId)}`;
}
