/**
 * The end of an activation, awaitable. A workflow task can bring several events at once (a signal
 * and an activity's result, say). The SDK applies them one by one and wakes a waiting condition
 * right after the event that satisfies it, before the promises of the later events have settled
 * through their `.then` chains. A loop woken by the first event that then reads what the others
 * brought must wait for the end of the activation first.
 *
 * The condition below is false when first asked (at once, while the activation's microtasks still
 * run) and true at the next asking, which the SDK does only once those microtasks have drained. It
 * settles within the same activation, adds no history event, and replays alike.
 */
import { condition } from '@temporalio/workflow';

export function activationSettled(): Promise<void> {
  let asked = false;
  return condition(() => {
    const settled = asked;
    asked = true;
    return settled;
  });
}
