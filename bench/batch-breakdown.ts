/**
 * Where a batch's time goes, from records that exist anyway: the emulator's jobs (submitted, started,
 * finished: service time, which is wall time at time scale 1), the batch's result lines (when its
 * watcher saw each job finished), the emulator's webhook log and the batch's workflow history
 * (activity and workflow task timestamps). Pure functions over those records; bench/batch-vs-loop.ts
 * gathers them.
 */

import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

export interface JobTimes {
  id: string;
  submittedAt: number;
  startedAt?: number;
  finishedAt?: number;
}

/** `median p90 max` of a list of milliseconds, or `-` when it is empty. */
export function spread(values: number[]): string {
  if (values.length === 0) return '-';
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return `median ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms, max ${at(1).toFixed(0)} ms`;
}

/**
 * The window's refill latency: in a window of `window` places, the k-th job to end frees the place
 * the (k + window)-th submit takes. The gap between the two is what the batch adds on top of the
 * job's own time (a loop that sends everything at once has none: its queue is at the service).
 */
export function refillLatencies(jobs: JobTimes[], window: number): number[] {
  const ends = jobs.map((job) => job.finishedAt).filter((at): at is number => at !== undefined);
  const submits = jobs.map((job) => job.submittedAt);
  ends.sort((a, b) => a - b);
  submits.sort((a, b) => a - b);
  const out: number[] = [];
  for (let k = 0; k + window < submits.length && k < ends.length; k++)
    out.push((submits[k + window] as number) - (ends[k] as number));
  return out;
}

/** How the service's workers were used: busy share over the span, queue waits, the submit rate. */
export function serviceUse(jobs: JobTimes[], workers: number) {
  const started = jobs.filter((job) => job.startedAt !== undefined && job.finishedAt !== undefined);
  const first = Math.min(...jobs.map((job) => job.submittedAt));
  const last = Math.max(...started.map((job) => job.finishedAt as number));
  const busy = started.reduce(
    (sum, job) => sum + ((job.finishedAt as number) - (job.startedAt as number)),
    0,
  );
  const lastSubmit = Math.max(...jobs.map((job) => job.submittedAt));
  return {
    spanMs: last - first,
    busyShare: busy / (workers * Math.max(1, last - first)),
    queueWaits: started.map((job) => (job.startedAt as number) - job.submittedAt),
    submitsPerSecond: (jobs.length * 1000) / Math.max(1, lastSubmit - first),
    lastSubmitMs: lastSubmit - first,
  };
}

/** How long after a job's end its watcher saw it (the result line's finishedAt is the watcher's look). */
export function watcherLatencies(
  jobs: Map<string, JobTimes>,
  lines: Array<{ jobId?: string; finishedAt?: number }>,
): number[] {
  const out: number[] = [];
  for (const line of lines) {
    const job = line.jobId === undefined ? undefined : jobs.get(line.jobId);
    if (job?.finishedAt !== undefined && line.finishedAt !== undefined)
      out.push(line.finishedAt - job.finishedAt);
  }
  return out;
}

export interface ActivityRecord {
  type: string;
  scheduledAt: number;
  startedAt?: number;
  closedAt?: number;
  attempt?: number;
  /** The first argument, decoded (JSON payloads only). */
  input?: unknown;
}

/** A workflow task: when it was scheduled and taken, and whether to the worker's sticky queue. */
export interface TaskSpan {
  scheduledAt: number;
  startedAt: number;
  sticky: boolean;
}

export interface HistoryFigures {
  activities: ActivityRecord[];
  /** Workflow tasks taken by a worker, in order. */
  tasks: TaskSpan[];
  /** Workflow tasks: scheduled to started (the worker's pickup) and started to completed (its run). */
  taskPickup: number[];
  taskRun: number[];
  /** Activity completions to the workflow's next submit page's scheduling. */
  completionToSubmit: number[];
}

function decode(payload: temporal.api.common.v1.IPayload | undefined): unknown {
  const data = payload?.data;
  if (!data) return undefined;
  try {
    return JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Activities with their times and inputs, workflow task latencies, and completion-to-submit gaps. */
export function historyFigures(events: HistoryEvent[]): HistoryFigures {
  const byScheduledId = new Map<number, ActivityRecord>();
  const taskScheduled = new Map<number, { at: number; sticky: boolean }>();
  const taskStarted = new Map<number, number>();
  const tasks: TaskSpan[] = [];
  const taskRun: number[] = [];
  const completions: number[] = [];
  const submits: number[] = [];
  for (const event of events) {
    const at = tsToMs(event.eventTime);
    const id = Number(event.eventId);
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        taskScheduled.set(id, {
          at,
          sticky:
            event.workflowTaskScheduledEventAttributes?.taskQueue?.kind ===
            temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY,
        });
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: {
        const scheduled = taskScheduled.get(
          Number(event.workflowTaskStartedEventAttributes?.scheduledEventId),
        );
        if (scheduled !== undefined)
          tasks.push({ scheduledAt: scheduled.at, startedAt: at, sticky: scheduled.sticky });
        taskStarted.set(id, at);
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: {
        const started = taskStarted.get(Number(event.workflowTaskCompletedEventAttributes?.startedEventId));
        if (started !== undefined) taskRun.push(at - started);
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        const attributes = event.activityTaskScheduledEventAttributes;
        const type = attributes?.activityType?.name ?? '?';
        byScheduledId.set(id, { type, scheduledAt: at, input: decode(attributes?.input?.payloads?.[0]) });
        if (type === 'submitBatchPage') submits.push(at);
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const attributes = event.activityTaskStartedEventAttributes;
        const record = byScheduledId.get(Number(attributes?.scheduledEventId));
        if (record) {
          record.startedAt = at;
          record.attempt = attributes?.attempt ?? 1;
        }
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: {
        const attributes =
          event.activityTaskCompletedEventAttributes ??
          event.activityTaskFailedEventAttributes ??
          event.activityTaskTimedOutEventAttributes ??
          event.activityTaskCanceledEventAttributes;
        const record = byScheduledId.get(Number(attributes?.scheduledEventId));
        if (record) {
          record.closedAt = at;
          if (record.type === 'watchBatchJobs') completions.push(at);
        }
        break;
      }
    }
  }
  // A watcher's answer frees places; the next submit page scheduled after it is the refill's start.
  const completionToSubmit: number[] = [];
  for (const done of completions) {
    const next = submits.find((at) => at >= done);
    if (next !== undefined) completionToSubmit.push(next - done);
  }
  return {
    activities: [...byScheduledId.values()],
    tasks,
    taskPickup: tasks.map((task) => task.startedAt - task.scheduledAt),
    taskRun,
    completionToSubmit,
  };
}

/** Per activity type: count, sizes (items in the input), attempts, time scheduled-to-start and run. */
export function activityLines(activities: ActivityRecord[]): string[] {
  const byType = new Map<string, ActivityRecord[]>();
  for (const record of activities) byType.set(record.type, [...(byType.get(record.type) ?? []), record]);
  const size = (record: ActivityRecord) => {
    const input = record.input as { indexes?: unknown[]; items?: unknown[] } | undefined;
    return (input?.indexes ?? input?.items)?.length;
  };
  const lines: string[] = [];
  for (const [type, records] of byType) {
    const sizes = records.map(size).filter((n): n is number => n !== undefined);
    const attempts = records.map((record) => record.attempt ?? 1);
    const started = records.filter((record) => record.startedAt !== undefined);
    const closed = records.filter((record) => record.closedAt !== undefined);
    lines.push(
      `${type}: ${records.length}; items per call ${sizes.length > 0 ? `mean ${(sizes.reduce((a, b) => a + b, 0) / sizes.length).toFixed(0)}, min ${Math.min(...sizes)}, max ${Math.max(...sizes)}` : '-'}; ` +
        `attempts mean ${(attempts.reduce((a, b) => a + b, 0) / Math.max(1, attempts.length)).toFixed(1)}; ` +
        `scheduled to last start ${spread(started.map((record) => (record.startedAt as number) - record.scheduledAt))}; ` +
        `scheduled to close ${spread(closed.map((record) => (record.closedAt as number) - record.scheduledAt))}`,
    );
  }
  return lines;
}
