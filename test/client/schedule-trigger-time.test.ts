import { describe, expect, it } from 'vitest';
import { latestActionAt, triggerNotBefore } from '../../client/schedule-trigger-time';

describe('when a schedule trigger may go out', () => {
  it('goes out at once for a schedule that never acted and was never triggered here', () => {
    expect(triggerNotBefore(undefined, undefined)).toBe(0);
  });

  it('waits for the second after the latest action, whether the server or this process knows of it', () => {
    const action = new Date('2026-11-27T10:00:05.300Z');
    expect(triggerNotBefore(action, undefined)).toBe(Date.parse('2026-11-27T10:00:06.000Z'));
    // This process triggered later than the server shows yet.
    expect(triggerNotBefore(action, Date.parse('2026-11-27T10:00:06.999Z'))).toBe(
      Date.parse('2026-11-27T10:00:07.000Z'),
    );
    // An action on the second boundary holds that whole second.
    expect(triggerNotBefore(new Date('2026-11-27T10:00:05.000Z'), undefined)).toBe(
      Date.parse('2026-11-27T10:00:06.000Z'),
    );
  });

  it('reads the latest of the times an action was scheduled for and taken at', () => {
    expect(latestActionAt([])).toBeUndefined();
    const actions = [
      { scheduledAt: new Date('2026-11-27T10:00:00Z'), takenAt: new Date('2026-11-27T10:00:01Z') },
      { scheduledAt: new Date('2026-11-27T10:00:03Z'), takenAt: new Date('2026-11-27T10:00:02Z') },
    ];
    expect(latestActionAt(actions)).toEqual(new Date('2026-11-27T10:00:03Z'));
  });
});
