/**
 * What a backfill leaves out unless asked to rerun: the times of its window whose run already
 * exists, open or closed. Temporal's scheduler starts runs allowing a duplicate workflow id, so the
 * id that carries a run's time (scheduledRunWorkflowId) guards only while that run is open; over a
 * closed one, a backfill would start the time again.
 *
 * The runs are found in visibility by the search attributes the scheduler sets on every run it
 * starts: TemporalScheduledById (the schedule) and TemporalScheduledStartTime (the nominal time,
 * the one in the id). Each run's time is read from its id, since the id is what a new run would
 * collide with, and the window is cut into the ranges between those times. A range the spec has
 * no time in (ListScheduleMatchingTimes says) is dropped, so a window whose times all ran sends
 * nothing; with jitter, a run's jittered time may fall in the gap after it, and that gap is sent
 * although it starts nothing.
 *
 * Visibility is eventually consistent (on SQL stores, the dev server's SQLite included, a record
 * is written within moments of the change; on Elasticsearch, about a second): a run started just
 * before the backfill may not be listed yet. While it is open, its id still refuses a second
 * start; only one that also closed within that moment could run again. Runs removed by the
 * namespace's retention are no longer listed, so their times run again.
 */
import { type Client, isGrpcServiceError } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { msNumberToTs, optionalTsToDate } from '@temporalio/common/lib/time';

export interface TimeRange {
  start: Date;
  end: Date;
}

/** The time a scheduled run's id ends with (RFC 3339, UTC, to the second). */
const RUN_TIME = /-(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$/;
const SCHEDULED_BY = defineSearchAttributeKey('TemporalScheduledById', SearchAttributeType.KEYWORD);

/**
 * The visibility query for the runs of `scheduleId` due in the window (a second past its end: a
 * trigger's nominal time has milliseconds its id drops). Visibility matches no string literal
 * holding `"` or `\` however escaped (tried on the dev server), so for such an id the query keeps
 * the time bounds only and `belongs` does the rest.
 */
export function scheduledRunsQuery(scheduleId: string, window: TimeRange): string {
  const until = new Date(window.end.getTime() + 1_000);
  const times = `TemporalScheduledStartTime >= "${window.start.toISOString()}" AND TemporalScheduledStartTime < "${until.toISOString()}"`;
  return /["\\]/.test(scheduleId) ? times : `TemporalScheduledById = "${scheduleId}" AND ${times}`;
}

/** The nominal times (from their ids) of the runs `scheduleId` has started in the window, sorted. */
export async function existingRunTimes(
  client: Client,
  scheduleId: string,
  window: TimeRange,
): Promise<Date[]> {
  const times = new Map<number, Date>();
  for await (const run of client.workflow.list({ query: scheduledRunsQuery(scheduleId, window) })) {
    if (run.typedSearchAttributes.get(SCHEDULED_BY) !== scheduleId) continue;
    const at = RUN_TIME.exec(run.workflowId)?.[1];
    if (!at) continue;
    const time = new Date(at);
    if (time >= window.start && time <= window.end) times.set(time.getTime(), time);
  }
  return [...times.values()].sort((a, b) => a.getTime() - b.getTime());
}

/**
 * The window less the given times, as ranges a backfill takes (both ends included): each time is
 * cut out with a millisecond either side. Temporal takes a range's times from its start on, and
 * up to its end by their jittered time, which is never earlier than the nominal one, so a range
 * ending just before a time never reaches it and one starting just after never reaches back.
 */
export function uncoveredRanges(window: TimeRange, taken: readonly Date[]): TimeRange[] {
  const ranges: TimeRange[] = [];
  let from = window.start.getTime();
  for (const time of [...taken].sort((a, b) => a.getTime() - b.getTime())) {
    const at = time.getTime();
    if (at < from || at > window.end.getTime()) continue;
    if (at - 1 >= from) ranges.push({ start: new Date(from), end: new Date(at - 1) });
    from = at + 1;
  }
  if (window.end.getTime() >= from)
    ranges.push({ start: new Date(from), end: new Date(window.end.getTime()) });
  return ranges;
}

/** ListScheduleMatchingTimes answers at most this many times (the server's own cap). */
const MATCHING_TIMES_CAP = 1000;

/**
 * The times of the schedule's spec in the window, as its backfill would take them (the same
 * iteration: jittered times, up to the window's end), from Temporal's ListScheduleMatchingTimes;
 * `complete` is false when the server's cap cut the list short. Undefined when the server refuses
 * the call: the ranges are then sent as they are.
 */
export async function scheduleMatchingTimes(
  client: Client,
  scheduleId: string,
  window: TimeRange,
): Promise<{ times: Date[]; complete: boolean } | undefined> {
  try {
    // Typed by hand: the generated method's callback overload makes the awaited type void.
    const response = (await client.workflowService.listScheduleMatchingTimes({
      namespace: client.options.namespace,
      scheduleId,
      // Its start is exclusive, a backfill's inclusive.
      startTime: msNumberToTs(window.start.getTime() - 1),
      endTime: msNumberToTs(window.end.getTime()),
    })) as { startTime?: Parameters<typeof optionalTsToDate>[0][] | null };
    const times = (response.startTime ?? []).flatMap((t) => optionalTsToDate(t) ?? []);
    return { times, complete: times.length < MATCHING_TIMES_CAP };
  } catch (error) {
    // A server without the call (or refusing it) costs only the pruning; anything else is a bug.
    if (isGrpcServiceError(error)) return undefined;
    throw error;
  }
}

/**
 * The ranges holding at least one of the spec's times: a gap between two runs that exist holds
 * none of its own, and sending it would start nothing. A range past the end of a list the cap cut
 * short is kept, as is every range when the times are unknown.
 */
export function rangesWithTimes(
  ranges: readonly TimeRange[],
  matching: { times: readonly Date[]; complete: boolean } | undefined,
): TimeRange[] {
  if (!matching) return [...ranges];
  const last = matching.times.at(-1)?.getTime() ?? Number.NEGATIVE_INFINITY;
  return ranges.filter(
    (range) =>
      matching.times.some((time) => time >= range.start && time <= range.end) ||
      (!matching.complete && range.end.getTime() > last),
  );
}
