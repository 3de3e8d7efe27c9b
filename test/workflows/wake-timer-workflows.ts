/** A loop's wake timer on its own: each signal sets the next due time, as a loop turn does. */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';
import { type WakeTimer, wakeAt } from '../../workflows/shared/wake-timer';

/** The next due, in ms from the workflow's now (null: nothing due). */
export const setDue = defineSignal<[number | null]>('setDue');
export const finish = defineSignal('finish');
export const wakes = defineQuery<number>('wakes');

export async function wakeTimerProbe(): Promise<number> {
  const holder: WakeTimer = {};
  let woken = 0;
  let finished = false;
  setHandler(setDue, (inMs) => {
    const next = inMs === null ? undefined : { at: Date.now() + inMs, work: 'submit' as const };
    wakeAt(holder, next, () => {
      woken += 1;
    });
  });
  setHandler(finish, () => {
    finished = true;
  });
  setHandler(wakes, () => woken);
  await condition(() => finished);
  return woken;
}
