/**
 * One timer for a loop's next due time, kept while that time stands: a timer per loop turn would
 * add two events to every workflow task. The batch's loop and the pipeline's each hold one.
 *
 * A wake is only ever a bump of the loop, so one that comes early is harmless: the loop looks at
 * what is due and sets the timer again. So the timer held is replaced only for an earlier due, and
 * cancelled only when it is further off than a workflow task can last. A timer due sooner may
 * fire while the task that would cancel it runs; Temporal's time-skipping test server then
 * refuses the task's completion and leaves the run stuck (sdk-java #2606). Left to fire, such a
 * timer costs at most an early turn of the loop, which finds nothing due; a batch's history
 * measured the same either way.
 */
import { CancellationScope, sleep } from '@temporalio/workflow';
import { nextDueSummary } from '../../contracts/activity-summaries';
import type { ItemDue } from '../../engine/item-state';

/** How long a workflow task may take (Temporal's default task timeout). */
const TASK_MS = 10_000;

export interface WakeTimer {
  timer?: { due: number; scope: CancellationScope };
}

/** Sets the timer for `next` (none: no timer needed); `wake` runs when it fires. */
export function wakeAt(holder: WakeTimer, next: ItemDue | undefined, wake: () => void): void {
  const held = holder.timer;
  // An earlier wake than needed only bumps the loop: a held timer serves until it fires.
  if (held !== undefined && (next === undefined || next.at >= held.due)) return;
  if (next === undefined) return;
  if (held !== undefined && held.due > Date.now() + TASK_MS) held.scope.cancel();
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
