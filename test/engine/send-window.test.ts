import { describe, expect, it } from 'vitest';
import { RUN_WINDOW_MS, roomNow, SEND_SLACK_MS, type SendLog } from '../../engine/send-window';

const SPAN = RUN_WINDOW_MS + SEND_SLACK_MS;

describe('roomNow', () => {
  it('is what the window and slack hold no grant for yet', () => {
    const log: SendLog = [[0, 977]];
    expect(roomNow([], 0, 1000)).toBe(1000);
    expect(roomNow(log, 8_000, 1000)).toBe(23);
    log.push([8_000, 23]);
    expect(roomNow(log, 8_100, 1000)).toBe(0);
    // The oldest grant has left the window and slack.
    expect(roomNow(log, SPAN, 1000)).toBe(977);
  });

  it('holds none while a grant is still ahead', () => {
    expect(roomNow([[9_000, 1]], 8_000, 1000)).toBe(0);
  });
});
