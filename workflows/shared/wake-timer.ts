/**
 * One timer for a loop's next due time, kept while that time stands: a timer per loop turn would
 * add two events to every workflow task. The batch's loop and the pipeline's each hold one.
 */
import { CancellationScope, sleep } from '@temporalio/workflow';
import { nextDueSummary } from '../../contracts/activity-summaries';
import type { ItemDue } from '../../engine/item-state';

export interface WakeTimer {
  timer?: { due: number; scope: CancellationScope };
}

/** Sets the timer for `next` (none: no timer); `wake` runs when it fires. */
export function wakeAt(holder: WakeTimer, next: ItemDue | undefined, wake: () => void): void {
  if (next?.at === holder.timer?.due) return;
  holder.timer?.scope.cancel();
  holder.timer = undefined;
  if (next === undefined) return;
  const due = next.at;
  const scope = new CancellationScope();
  const timer = { due, scope };
  holder.timer = timer;
  scope
    .run(() => sleep(Math.max(due - Date.now(), 1), { summary: nextDueSummary(due, next.work) }))
    .then(
      () => {
        if (holder.timer === timer) holder.timer = undefined;
        wake();
      },
      () => undefined,
    );
}
