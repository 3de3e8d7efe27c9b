/**
 * The per-item engine's building blocks (item-engine.ts steps with them): a step's shape, an
 * item's tally carried from phase to phase, an item queued again (on the same endpoint, or the
 * next one of its route) and an item ended with its outcome.
 */
import type {
  EndedItem,
  ItemCommand,
  ItemCount,
  ItemEvent,
  ItemOutcome,
  ItemRules,
  ItemState,
  ItemStep,
  ItemTally,
  QueuedItem,
} from './item-state';

export function step(item: ItemState, counts: ItemCount[] = [], commands: ItemCommand[] = []): ItemStep {
  return { item, counts, commands };
}

/** An event that does not apply to the phase (a late answer about a job since replaced): ignored. */
export function unexpected(item: ItemState, _event: ItemEvent): ItemStep {
  return step(item);
}

export function tally(item: ItemState): ItemTally {
  return {
    index: item.index,
    attempts: item.attempts,
    submissions: item.submissions,
    retries: item.retries,
    ...(item.cost === undefined ? {} : { cost: item.cost }),
    ...(item.endpoint === undefined ? {} : { endpoint: item.endpoint }),
    ...(item.hops === undefined ? {} : { hops: item.hops }),
  };
}

/** Where a submit went: the event's word, else where the item was meant to go. */
export function placed(endpoint: number | undefined): { endpoint?: number } {
  return endpoint === undefined || endpoint === 0 ? {} : { endpoint };
}

/** The item queued for the next endpoint of the route, with the move counted. */
export function hop(item: ItemState, rules: ItemRules): ItemStep {
  const next = Math.min((item.endpoint ?? 0) + 1, rules.routeLength - 1);
  const { endpoint: _endpoint, ...rest } = requeue(item);
  return step({ ...rest, ...placed(next), hops: (item.hops ?? 0) + 1 }, ['hop']);
}

/** Whether the route has an endpoint after the item's. */
export function hasNextEndpoint(item: ItemState, rules: ItemRules): boolean {
  return (item.endpoint ?? 0) + 1 < rules.routeLength;
}

export function requeue(item: ItemState): QueuedItem {
  return { phase: 'queued', ...tally(item), rejectedTries: 0 };
}

export function ended(
  item: ItemState,
  outcome: ItemOutcome,
  status: string,
  now: number,
  extra: Partial<Pick<EndedItem, 'reason' | 'failureType' | 'expired'>> = {},
): EndedItem {
  const job = item.phase === 'running' || item.phase === 'retry-due' ? item : undefined;
  return {
    phase: 'ended',
    ...tally(item),
    outcome,
    status,
    ...extra,
    ...(job ? { jobId: job.jobId, submittedAt: job.submittedAt } : {}),
    endedAt: now,
  };
}

/**
 * `at` moved up to the next multiple of `gridMs` (1: as it is), so that times close together fall
 * due together: one timer and one call for the items of several pages.
 */
export function onGrid(at: number, gridMs: number): number {
  const grid = Math.max(1, gridMs);
  return Math.ceil(at / grid) * grid;
}
