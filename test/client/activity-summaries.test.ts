/** The one-line summaries workflows put on their activities and timers, rendered without a server. */
import { describe, expect, it } from 'vitest';
import {
  awaitRunSummary,
  emitEventSummary,
  extendJobTtlSummary,
  groupDueSummary,
  healthPollSummary,
  idleEndSummary,
  itemRanges,
  nextDueSummary,
  orphanWebhookSummary,
  planRunSummary,
  retryBackoffSummary,
  retryJobsSummary,
  streamDrainSummary,
  submitItemsSummary,
  submitJobSummary,
  updateEndpointSummary,
  waitForJobSummary,
  watchJobsSummary,
} from '../../contracts/activity-summaries';

const NOON = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('activity and timer summaries', () => {
  it('a page of submissions names its items by 1-based number, in ranges', () => {
    const page = Array.from({ length: 500 }, (_, k) => 2_000 + k);
    expect(submitItemsSummary(page, 'whisper')).toBe('submit items 2,001–2,500 to endpoint whisper');
    expect(submitItemsSummary([8, 2, 6, 7], 'ep')).toBe('submit items 3, 7–9 to endpoint ep');
    expect(submitItemsSummary([0], 'ep')).toBe('submit item 1 to endpoint ep');
  });

  it('many scattered items are cut after a few ranges, with how many more', () => {
    expect(itemRanges([0, 2, 4, 6, 8, 10, 11])).toBe('items 1, 3, 5, 7 and 3 more');
    expect(itemRanges([])).toBe('no items');
  });

  it('counts say one or many', () => {
    expect(watchJobsSummary(14)).toBe('watch 14 jobs');
    expect(watchJobsSummary(1)).toBe('watch 1 job');
    expect(retryJobsSummary(3)).toBe('retry 3 jobs');
    expect(planRunSummary(3, 1)).toBe('plan run 3 for 1 event');
  });

  it('a job: submit, wait, retry backoff, the orphan wait with its bound in UTC', () => {
    expect(submitJobSummary('x')).toBe('submit job to endpoint x');
    expect(submitJobSummary('x', 2)).toBe('submit job to endpoint x (submission 2)');
    expect(waitForJobSummary('abc')).toBe('wait for job abc');
    expect(waitForJobSummary('abc', NOON)).toBe('wait for job abc until 2026-01-01 12:00:00 UTC');
    expect(retryBackoffSummary(10_000, 2)).toBe('wait 10 s before retry 2');
    expect(orphanWebhookSummary(NOON + 90_000)).toBe(
      "wait for the orphan's webhook until 2026-01-01 12:01:30 UTC",
    );
    expect(extendJobTtlSummary('abc', 2 * 3_600_000)).toBe("extend job abc's ttl to 2 h from submission");
    expect(streamDrainSummary('abc', 120_000)).toBe("let job abc's stream drain for up to 2 min");
  });

  it("a batch's one timer says what falls due when it fires", () => {
    expect(nextDueSummary(NOON, 'retry')).toBe('wake at 2026-01-01 12:00:00 UTC for the next retry');
    expect(nextDueSummary(NOON, 'submit')).toBe(
      'wake at 2026-01-01 12:00:00 UTC for the next submit after a backoff',
    );
    expect(nextDueSummary(NOON, 'orphan-wait-end')).toBe(
      "wake at 2026-01-01 12:00:00 UTC for the end of an uncertain submit's wait for its orphan",
    );
  });

  it('an automation: its timers, the wait on an earlier run, the end event', () => {
    expect(groupDueSummary(NOON, 4)).toBe(
      'group 4 pending events at 2026-01-01 12:00:00 UTC unless more arrive first',
    );
    expect(idleEndSummary(NOON)).toBe('end at 2026-01-01 12:00:00 UTC unless an event arrives (idle)');
    expect(awaitRunSummary('automation:a:k:1234abcd:7')).toBe(
      'wait for run automation:a:k:1234abcd:7 to end',
    );
    expect(emitEventSummary('job.completed', 'resize', 'user-7')).toBe(
      'send job.completed to automation resize (key user-7)',
    );
  });

  it('an endpoint: the fields a save changes (names only) and the health poll', () => {
    expect(updateEndpointSummary('ep1', ['workersMin', 'workersMax'])).toBe(
      'update endpoint ep1: workersMin, workersMax',
    );
    expect(healthPollSummary('ep1', 2_000, 'its workers to stop')).toBe(
      'look at endpoint ep1 again in 2 s (waiting for its workers to stop)',
    );
  });

  it('a long id is cut so a summary stays one short line', () => {
    const text = waitForJobSummary('j'.repeat(200));
    expect(text.length).toBeLessThan(80);
    expect(text).toMatch(/j…$/);
  });
});
