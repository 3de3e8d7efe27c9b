/**
 * A batch over a route (contracts/route.ts), the pure part: which endpoint the next page goes to
 * and which items it takes, each endpoint's room (its window, less its jobs in flight, nothing
 * while it is drained), and an endpoint's drain and recovery. A batch on one endpoint is a route
 * of one and takes the same path. No clock, no Temporal: times come in the arguments, so the unit
 * tests get the workflow's answers.
 */

import type { LookLog } from '../contracts/look-log';
import { noRoomRetryDelayMs } from './job-rules';
import { queueLookDue } from './queue-look';

/** What a batch keeps per endpoint of its route (it crosses continue-as-new: kept small). */
export interface EndpointTally {
  /** Items that completed there. */
  completed: number;
  /** Items that ended there any other way. */
  failed: number;
  /** Jobs moved from there to another endpoint (withdrawn from its queue, capacity failures). */
  moved: number;
  /** The estimated cost of the runs there, when prices are known. */
  cost?: number;
  /** Skipped until then: it starved its queue, failed for capacity or is gone. */
  drainedUntil?: number;
  /** Back from a drain: one page's worth goes there until a job of it completes. */
  probing?: boolean;
  /** When its latest capacity failures came (the last CAPACITY_FAILURES_TO_DRAIN at most). */
  capacityFailures?: number[];
  /** Its maximum worker count, read when the batch started (sizes its window). */
  workersMax?: number;
  /** The /status looks of its ended watchers that still count, for the next ones (look-shares.ts). */
  lookLog?: LookLog;
  /** The clients (worker processes) that handed looks back lately, and when (look-shares.ts). */
  lookClients?: Array<[source: string, lastAt: number]>;
  /**
   * Its gate answered that it is paused: no page goes there before `until` (afterPageAnswer), a
   * while longer at each paused answer in a row (`tries`).
   */
  pausedHold?: PausedHold;
}

export interface PausedHold {
  tries: number;
  until: number;
}

/** Capacity failures within recheckAfter that drain an endpoint. */
export const CAPACITY_FAILURES_TO_DRAIN = 3;

export function newEndpointTallies(count: number): EndpointTally[] {
  return Array.from({ length: count }, () => ({ completed: 0, failed: 0, moved: 0 }));
}

/** Whether the endpoint takes work at `now` (not drained, or its drain is over). */
export function isOpen(tally: EndpointTally, now: number): boolean {
  return tally.drainedUntil === undefined || tally.drainedUntil <= now;
}

/** The endpoint drained: skipped for recheckAfter, its count of capacity failures reset. */
export function drained(tally: EndpointTally, now: number, recheckAfter: number): EndpointTally {
  const { capacityFailures: _failures, probing: _probing, ...rest } = tally;
  return { ...rest, drainedUntil: now + recheckAfter };
}

/** A drain that is over: the endpoint takes a probe's worth of work again. */
export function recovered(tally: EndpointTally, now: number): EndpointTally {
  if (tally.drainedUntil === undefined || tally.drainedUntil > now) return tally;
  const { drainedUntil: _until, ...rest } = tally;
  return { ...rest, probing: true };
}

/** A capacity failure there: the tally with it noted, and whether the endpoint is now drained. */
export function afterCapacityFailure(
  tally: EndpointTally,
  now: number,
  recheckAfter: number,
): { tally: EndpointTally; drain: boolean } {
  const recent = [...(tally.capacityFailures ?? []), now]
    .filter((at) => at > now - recheckAfter)
    .slice(-CAPACITY_FAILURES_TO_DRAIN);
  if (recent.length >= CAPACITY_FAILURES_TO_DRAIN)
    return { tally: drained(tally, now, recheckAfter), drain: true };
  return { tally: { ...tally, capacityFailures: recent }, drain: false };
}

/**
 * The tally after a page's answer from the endpoint's gate. A paused answer holds the endpoint's
 * pages in the workflow (not in the workers' slots) until a time that grows as a job's no-room
 * tries do (engine/job-rules.ts noRoomRetryDelayMs); a page sent before the hold began (pages go
 * out several at once) leaves it as it is. The hold ends at the first page there that is granted.
 */
export function afterPageAnswer(
  tally: EndpointTally,
  answer: { paused: boolean; granted: boolean },
  sentAt: number,
  answeredAt: number,
): EndpointTally {
  const hold = tally.pausedHold;
  if (answer.paused) {
    if (hold !== undefined && hold.until > sentAt) return tally;
    const tries = (hold?.tries ?? 0) + 1;
    return { ...tally, pausedHold: { tries, until: answeredAt + noRoomRetryDelayMs(tries) } };
  }
  if (!answer.granted || hold === undefined) return tally;
  const { pausedHold: _hold, ...rest } = tally;
  return rest;
}

/** Whether the endpoint's pages are held at `now` (its gate answered that it is paused). */
export function isHeld(tally: EndpointTally, now: number): boolean {
  return (tally.pausedHold?.until ?? 0) > now;
}

/** When a hold that lasts past `now` ends, and the endpoint takes pages again; undefined: none. */
export function holdEndsAt(tally: EndpointTally, now: number): number | undefined {
  return isHeld(tally, now) ? tally.pausedHold?.until : undefined;
}

/**
 * The room each endpoint has for more jobs: its window (contracts/route.ts endpointWindows) less
 * its load (jobs in flight and items being submitted there); none while drained or held (its
 * gate paused: on a route, its pages go to the others meanwhile); a page at most while probing.
 */
export function endpointRooms(
  windows: readonly number[],
  tallies: readonly EndpointTally[],
  loads: readonly number[],
  pageSize: number,
  now: number,
): number[] {
  return windows.map((window, at) => {
    const tally = tallies[at];
    if (tally && (!isOpen(tally, now) || isHeld(tally, now))) return 0;
    const limit = tally?.probing ? Math.min(window, pageSize) : window;
    return Math.max(0, limit - (loads[at] ?? 0));
  });
}

/** A queued item as the choice of its endpoint sees it. */
export interface QueuedForRoute {
  index: number;
  /** Where it prefers to go (absent: the first endpoint). */
  endpoint?: number;
  hops?: number;
}

/**
 * The endpoint an item goes to, of those with room (`open`): its own when that has room; else the
 * first with room in route order after its own for an item that moved (it moved away from the
 * ones before), or any when none after has room; an item that never moved takes the first with
 * room. Undefined: no endpoint has room.
 */
export function choiceOf(item: QueuedForRoute, open: readonly boolean[]): number | undefined {
  const own = item.endpoint ?? 0;
  if (open[own]) return own;
  const first = (from: number) => {
    for (let at = from; at < open.length; at++) if (open[at]) return at;
    return undefined;
  };
  if ((item.hops ?? 0) > 0) return first(own + 1) ?? first(0);
  return first(0);
}

export interface PagePlanInput {
  /** Each endpoint's window (contracts/route.ts endpointWindows) and its room (endpointRooms). */
  windows: readonly number[];
  rooms: readonly number[];
  /** Room left in the batch's window (maxConcurrency less everything in flight or being sent). */
  free: number;
  /** Submits under way per endpoint, and how many one endpoint may have at once. */
  sends: readonly number[];
  maxSends: number;
  /** Queued items ready to go (their backoff over, not in a page), in the order to send them. */
  queued: readonly QueuedForRoute[];
  /** Items not yet taken from the manifest. */
  fresh: number;
  pageSize: number;
  /** Something is under way (a submit, a job in flight): a small page can wait for more room. */
  busy: boolean;
  /** Items the budget lets start. */
  budget: number;
}

export interface PagePlan {
  endpoint: number;
  /** Queued items it takes, then `fresh` items from the manifest's cursor. */
  queued: number[];
  fresh: number;
}

/**
 * The next page: for the first endpoint (route order) with room and a free submit, the queued
 * items whose choice it is, then new ones from the manifest (while no endpoint before it has
 * room, new items go nowhere else). Undefined: nothing to send now.
 */
export function planPage(input: PagePlanInput): PagePlan | undefined {
  const { rooms, sends } = input;
  if (input.free <= 0 || input.budget <= 0) return undefined;
  const open = rooms.map((room) => room > 0);
  const firstOpen = open.indexOf(true);
  for (let endpoint = 0; endpoint < rooms.length; endpoint++) {
    if (!open[endpoint] || (sends[endpoint] ?? 0) >= input.maxSends) continue;
    const mine = input.queued.filter((item) => choiceOf(item, open) === endpoint).map((item) => item.index);
    const fresh = endpoint === firstOpen ? input.fresh : 0;
    const waiting = mine.length + fresh;
    if (waiting === 0) continue;
    const room = Math.min(rooms[endpoint] ?? 0, input.free);
    // Not a page per freed place: wait for a useful page unless nothing else is under way.
    if (room < Math.min(usefulPage(input.windows[endpoint] ?? 1, input.pageSize), waiting) && input.busy)
      continue;
    const size = Math.min(room, input.pageSize, input.budget, waiting);
    const queued = mine.slice(0, size);
    return { endpoint, queued, fresh: size - queued.length };
  }
  return undefined;
}

/**
 * The smallest page worth sending to an endpoint while something is under way: a sixteenth of its
 * window (every place left empty meanwhile is a service worker idle), a page at most.
 */
export function usefulPage(window: number, pageSize: number): number {
  return Math.min(pageSize, Math.max(1, Math.floor(window / 16)));
}

/** A job in flight as the queue-delay check sees it. */
export interface InFlightJob {
  endpoint: number;
  submittedAt: number;
  /** Not seen started (the watcher reports ends, so IN_QUEUE may be stale: the withdrawal looks). */
  queued: boolean;
}

/**
 * When each endpoint's queue is next worth a look at /health: the look due for its oldest job not
 * seen started (queue-look.ts), given the endpoint's last look (`checkedAt`). Undefined: nothing
 * waits there.
 */
export function queueChecksDue(
  jobs: Iterable<InFlightJob>,
  endpoints: number,
  queueDelayLimit: number,
  checkedAt: readonly (number | undefined)[],
): Array<number | undefined> {
  const oldest: Array<number | undefined> = Array.from({ length: endpoints }, () => undefined);
  for (const job of jobs) {
    if (!job.queued) continue;
    const seen = oldest[job.endpoint];
    if (seen === undefined || job.submittedAt < seen) oldest[job.endpoint] = job.submittedAt;
  }
  return oldest.map((at, endpoint) =>
    at === undefined ? undefined : queueLookDue(at, queueDelayLimit, checkedAt[endpoint]),
  );
}
