/**
 * When a schedule's trigger may go out. Temporal names a schedule's run by the second it starts in
 * (`<workflowId>-<time to the second>`); a second start within that second finds the id taken and
 * starts nothing, and nothing reports it (temporalio/temporal#3614). A trigger therefore goes out
 * only in a later second than the schedule's latest action and than this process's previous
 * trigger of it (the server may not show that one yet).
 */

/** The first instant (ms) at which a trigger names a run no earlier action holds. */
export function triggerNotBefore(
  latestActionAt: Date | undefined,
  lastTriggerAt: number | undefined,
): number {
  const latest = Math.max(
    latestActionAt?.getTime() ?? Number.NEGATIVE_INFINITY,
    lastTriggerAt ?? Number.NEGATIVE_INFINITY,
  );
  return Number.isFinite(latest) ? Math.floor(latest / 1_000) * 1_000 + 1_000 : 0;
}

/** The latest time a schedule's action was for, from its recent actions and those running. */
export function latestActionAt(
  actions: ReadonlyArray<{ scheduledAt: Date; takenAt: Date }>,
): Date | undefined {
  let latest: Date | undefined;
  for (const action of actions) {
    for (const at of [action.scheduledAt, action.takenAt]) {
      if (!latest || at.getTime() > latest.getTime()) latest = at;
    }
  }
  return latest;
}
