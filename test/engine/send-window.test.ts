import { describe, expect, it } from 'vitest';
import { RUN_WINDOW_MS, reserveSend, roomNow, SEND_SLACK_MS, type SendLog } from '../../engine/send-window';

const SPAN = RUN_WINDOW_MS + SEND_SLACK_MS;

/** The most requests any window of `span` holds, each request at its page's time. */
function busiestWindow(log: SendLog, span: number): number {
  let most = 0;
  for (const [end] of log) {
    const held = log
      .filter(([at]) => at > end - span && at <= end)
      .reduce((sum, [, count]) => sum + count, 0);
    most = Math.max(most, held);
  }
  return most;
}

describe('reserveSend', () => {
  it('sends at once while the window has room', () => {
    const log: SendLog = [];
    expect(reserveSend(log, 100, 0, 1000)).toBe(0);
    expect(reserveSend(log, 900, 5, 1000)).toBe(5);
    expect(log).toEqual([
      [0, 100],
      [5, 900],
    ]);
  });

  it('puts a page that does not fit where the oldest reservations have left the window and slack', () => {
    const log: SendLog = [];
    reserveSend(log, 600, 0, 1000);
    reserveSend(log, 400, 2_000, 1000);
    expect(reserveSend(log, 100, 3_000, 1000)).toBe(SPAN);
    // The next page needs the second reservation gone too.
    expect(reserveSend(log, 600, 3_000, 1000)).toBe(2_000 + SPAN);
  });

  it('never goes back in time, nor before now', () => {
    const log: SendLog = [];
    reserveSend(log, 1000, 0, 1000);
    const later = reserveSend(log, 10, 1, 1000);
    expect(later).toBe(SPAN);
    expect(reserveSend(log, 10, 2, 1000)).toBeGreaterThanOrEqual(later);
    expect(reserveSend([], 10, 50_000, 1000)).toBe(50_000);
  });

  it('forgets reservations no window from now on holds', () => {
    const log: SendLog = [[0, 1000]];
    expect(reserveSend(log, 1000, SPAN, 1000)).toBe(SPAN);
    expect(log).toEqual([[SPAN, 1000]]);
  });

  it('holds any window of the span to the limit over a long run of mixed pages', () => {
    const log: SendLog = [];
    const all: SendLog = [];
    let now = 0;
    for (let page = 0; page < 500; page++) {
      const count = 1 + ((page * 37) % 100);
      const at = reserveSend(log, count, now, 1000);
      expect(at).toBeGreaterThanOrEqual(now);
      all.push([at, count]);
      now += (page * 13) % 700;
    }
    expect(busiestWindow(all, SPAN)).toBeLessThanOrEqual(1000);
    // And it uses the room: some window holds nearly the limit.
    expect(busiestWindow(all, SPAN)).toBeGreaterThan(900);
  });

  it('refuses a page larger than the limit', () => {
    expect(() => reserveSend([], 11, 0, 10)).toThrow(/cannot fit a limit of 10/);
  });
});

describe('roomNow', () => {
  it('is what a window holds no reservation for yet, and none while a reservation waits ahead', () => {
    const log: SendLog = [];
    expect(roomNow(log, 0, 1000)).toBe(1000);
    reserveSend(log, 977, 0, 1000);
    // The page that would not fit whole: its first 23 requests fit now, at once.
    expect(roomNow(log, 8_000, 1000)).toBe(23);
    expect(reserveSend(log, 23, 8_000, 1000)).toBe(8_000);
    expect(roomNow(log, 8_100, 1000)).toBe(0);
    // The oldest reservation has left the window and slack.
    expect(roomNow(log, SPAN, 1000)).toBe(977);
    reserveSend(log, 100, 9_000, 1000);
    expect(log.at(-1)).toEqual([SPAN, 100]);
    expect(roomNow(log, 9_500, 1000)).toBe(0);
  });
});
