/**
 * A backfill leaves out the times whose run exists: the ranges the window is cut into, the
 * visibility query that finds the runs, and backfillSchedule's requests, against a stand-in client
 * (no server; test/integration/schedules.test.ts runs the same on the dev server).
 */
import type { Client } from '@temporalio/client';
import { msNumberToTs } from '@temporalio/common/lib/time';
import { describe, expect, it } from 'vitest';
import {
  existingRunTimes,
  rangesWithTimes,
  scheduledRunsQuery,
  uncoveredRanges,
} from '../../client/backfill-window';
import { backfillSchedule, scheduledRunWorkflowId } from '../../client/schedules';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (minutes: number, ms = 0) => new Date(T0 + minutes * 60_000 + ms);
const window = { start: at(0), end: at(3) };
const iso = (ranges: { start: Date; end: Date }[]) =>
  ranges.map((r) => [r.start.toISOString(), r.end.toISOString()]);

describe('uncoveredRanges', () => {
  it('is the whole window when no run exists', () => {
    expect(uncoveredRanges(window, [])).toEqual([window]);
  });

  it('cuts each time out with a millisecond either side, at the ends too', () => {
    expect(iso(uncoveredRanges(window, [at(0), at(2)]))).toEqual(
      iso([
        { start: at(0, 1), end: at(2, -1) },
        { start: at(2, 1), end: at(3) },
      ]),
    );
    expect(iso(uncoveredRanges(window, [at(3), at(1)]))).toEqual(
      iso([
        { start: at(0), end: at(1, -1) },
        { start: at(1, 1), end: at(3, -1) },
      ]),
    );
  });

  it('ignores times outside the window and repeats', () => {
    expect(iso(uncoveredRanges(window, [at(-1), at(1), at(1), at(4)]))).toEqual(
      iso([
        { start: at(0), end: at(1, -1) },
        { start: at(1, 1), end: at(3) },
      ]),
    );
  });
});

describe('rangesWithTimes', () => {
  const ranges = uncoveredRanges(window, [at(1)]);

  it('drops the ranges the spec has no time in', () => {
    expect(iso(rangesWithTimes(ranges, { times: [at(1), at(2)], complete: true }))).toEqual(
      iso([{ start: at(1, 1), end: at(3) }]),
    );
    expect(rangesWithTimes(ranges, { times: [at(1)], complete: true })).toEqual([]);
  });

  it('keeps every range when the times are unknown, and those past a list cut short', () => {
    expect(rangesWithTimes(ranges, undefined)).toEqual(ranges);
    expect(iso(rangesWithTimes(ranges, { times: [at(0, -30_000)], complete: false }))).toEqual(iso(ranges));
  });
});

describe('scheduledRunsQuery', () => {
  it("asks for the schedule's runs due in the window, a second past its end", () => {
    expect(scheduledRunsQuery("night's", window)).toBe(
      'TemporalScheduledById = "night\'s" AND TemporalScheduledStartTime >= "2026-03-01T10:00:00.000Z" AND TemporalScheduledStartTime < "2026-03-01T10:03:01.000Z"',
    );
  });

  it('keeps the time bounds only for an id visibility cannot match as a literal', () => {
    for (const id of ['a"b', 'a\\b'])
      expect(scheduledRunsQuery(id, window)).toMatch(/^TemporalScheduledStartTime >= /);
  });
});

interface FakeRun {
  workflowId: string;
  scheduledBy: string;
}

/** A client with a schedule handle recording backfill/describe, a workflow list and matching times. */
function fakeClient(runs: FakeRun[], matching: Date[]) {
  const calls: { method: string; args: unknown[] }[] = [];
  const client = {
    options: { namespace: 'default' },
    workflow: {
      list: ({ query }: { query: string }) => {
        calls.push({ method: 'list', args: [query] });
        return (async function* () {
          for (const run of runs)
            yield {
              workflowId: run.workflowId,
              typedSearchAttributes: {
                get: (key: { name: string }) =>
                  key.name === 'TemporalScheduledById' ? run.scheduledBy : undefined,
              },
            };
        })();
      },
    },
    workflowService: {
      listScheduleMatchingTimes: async (request: unknown) => {
        calls.push({ method: 'listScheduleMatchingTimes', args: [request] });
        return {
          startTime: matching.map((d) => msNumberToTs(d.getTime())),
        };
      },
    },
    schedule: {
      getHandle: (scheduleId: string) => ({
        scheduleId,
        backfill: async (...args: unknown[]) => {
          calls.push({ method: 'backfill', args });
        },
        describe: async () => {
          calls.push({ method: 'describe', args: [] });
          return {};
        },
      }),
    },
  } as unknown as Client;
  return { client, calls };
}

const run = (minutes: number, scheduledBy = 'nightly'): FakeRun => ({
  workflowId: scheduledRunWorkflowId(scheduledBy, at(minutes)),
  scheduledBy,
});
const everyMinute = [0, 1, 2, 3].map((m) => at(m));

describe('existingRunTimes', () => {
  it("reads the times from the schedule's runs' ids, in the window only, sorted and once each", async () => {
    const { client } = fakeClient(
      [
        run(2),
        run(0),
        run(2),
        run(1, 'other'), // another schedule's run (listed when the query had to keep time bounds only)
        { workflowId: 'nightly-manual', scheduledBy: 'nightly' }, // no time in its id
        run(5), // after the window
      ],
      [],
    );
    expect(await existingRunTimes(client, 'nightly', window)).toEqual([at(0), at(2)]);
  });
});

describe('backfillSchedule', () => {
  const start = window.start.toISOString();
  const end = window.end.toISOString();

  it('sends only the ranges whose times have no run, each with the overlap given', async () => {
    const { client, calls } = fakeClient([run(0), run(2)], everyMinute);
    const result = await backfillSchedule(client, {
      scheduleId: 'nightly',
      start,
      end,
      overlap: 'ALLOW_ALL',
    });
    expect(result.skipped).toEqual([at(0), at(2)]);
    const sent = [
      { start: at(0, 1), end: at(2, -1), overlap: 'ALLOW_ALL' },
      { start: at(2, 1), end: at(3), overlap: 'ALLOW_ALL' },
    ];
    expect(calls.filter((c) => c.method === 'backfill')).toEqual([{ method: 'backfill', args: [sent] }]);
    expect(iso(result.ranges)).toEqual(iso(sent));
  });

  it('sends nothing when every time of the window has a run (a missing schedule still fails)', async () => {
    const { client, calls } = fakeClient(
      [0, 1, 2, 3].map((m) => run(m)),
      everyMinute,
    );
    const result = await backfillSchedule(client, { scheduleId: 'nightly', start, end });
    expect(result).toEqual({ ranges: [], skipped: everyMinute });
    expect(calls.map((c) => c.method)).toEqual(['list', 'listScheduleMatchingTimes', 'describe']);
  });

  it('with rerun, sends the whole window without looking for runs', async () => {
    const { client, calls } = fakeClient(
      [0, 1, 2, 3].map((m) => run(m)),
      everyMinute,
    );
    const result = await backfillSchedule(client, { scheduleId: 'nightly', start, end, rerun: true });
    expect(result).toEqual({ ranges: [window], skipped: [] });
    expect(calls).toEqual([{ method: 'backfill', args: [[window]] }]);
  });

  it('with no run in the window, sends the window as one range', async () => {
    const { client, calls } = fakeClient([run(7)], everyMinute);
    expect(await backfillSchedule(client, { scheduleId: 'nightly', start, end })).toEqual({
      ranges: [window],
      skipped: [],
    });
    expect(calls.map((c) => c.method)).toEqual(['list', 'backfill']);
  });
});
