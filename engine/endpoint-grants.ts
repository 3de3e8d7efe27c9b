/**
 * Who may send to an endpoint now: the rule of the endpoint's gate (workflows/endpoint/gate.ts),
 * which holds the endpoint's /run window for every workload on it, in every worker process.
 *
 * A workload asks for room for `count` requests, and asks again (with the same id) when the gate
 * says, until it is granted or gives up: each ask is answered at once, so the gate never holds an
 * update open. The gate grants room that the window has now (never a time to come: a grant is sent
 * within SEND_SLACK_MS of being made or not at all), to the waiting asks in order: a higher priority first (Temporal's scale, 1 before 5), then, within a
 * priority, the fairness key that has had the least of the window for its weight (start-time fair
 * queueing: each key's `served` counts its grants divided by its weight), then the oldest ask. An ask
 * may get less than it asked for: its caller sends what it got and asks again for the rest. Room
 * granted to an ask whose caller is not the one asking is earmarked for it for EARMARK_HOLD_MS;
 * claimed, it moves to the time of the claim (its requests go out within SEND_SLACK_MS of that,
 * and count in the window from then); an earmark its caller never claims leaves the window again,
 * uncounted. While every worker of the endpoint is busy, the room is also what the service's queue
 * may take (engine/service-queue.ts), so that priority holds at the service too.
 *
 * Pure: no Temporal, no clock of its own; the gate passes the time in.
 */
import { ASK_WAIT_MS, type ServiceQueue } from '../contracts/endpoint-gate';
import { RUN_WINDOW_MS, roomNow, SEND_SLACK_MS, type SendLog } from './send-window';
import { newerReading, outranks, QUEUE_RETRY_MS, queueRoom, takenPerSecond } from './service-queue';

/** How soon an ask asks again while the endpoint is paused (a resume is seen within this). */
const PAUSED_RETRY_MS = 2_000;
/** How long past its time to ask again an ask keeps its place (its caller's answer may be late). */
const RETRY_GRACE_MS = 2_000;
/** How long room earmarked for an ask waits for its caller to claim it (asked again at once, it is). */
const EARMARK_HOLD_MS = 2_000;
/**
 * Spare room: a small ask granted at once on an idle endpoint (nothing else waiting, the window
 * under a tenth full, the service's queue with room) takes along room for a few more requests,
 * which its caller's process may send without asking for SPARE_MS. A stream of single jobs on an idle endpoint then asks the gate once in
 * several jobs: each ask costs the gate an update and a workflow task in history. At most
 * SPARE_MAX requests, and a tenth of the room left, so that the spare is never what a later ask,
 * of any priority, waits for.
 */
export const SPARE_MS = 5_000;
export const SPARE_MAX = 10;
const SPARE_SHARE = 0.1;

/** Counts a grant of `count` requests at `at` (the latest time in the log, or a later one). */
function logGrant(log: SendLog, at: number, count: number): void {
  const last = log.at(-1);
  if (last?.[0] === at) last[1] += count;
  else if (last === undefined || last[0] < at) log.push([at, count]);
  else {
    // An earlier time than the last: kept in order.
    const index = log.findIndex(([time]) => time > at);
    log.splice(index, 0, [at, count]);
  }
}

/** Takes a grant that was not used where it was counted out of the log. */
function unlog(log: SendLog, grant: Grant): void {
  const entry = log.find(([at]) => at === grant.at);
  if (entry) entry[1] -= grant.count;
  const emptied = log.findIndex(([, count]) => count <= 0);
  if (emptied >= 0) log.splice(emptied, 1);
}

/** A workload's ask for room in the endpoint's window, as the gate holds it while it waits. */
export interface WaitingAsk {
  /** The gate's name for the ask (its update's id). */
  id: string;
  /** Requests it would send now: at least 1. */
  count: number;
  /** Temporal's priority scale: 1 goes first, 5 last; 3 by default. */
  priority: number;
  /** The tenant (or any group) whose share this ask draws on; '' for the default key. */
  fairnessKey: string;
  /** The key's weight: a key of weight 2 gets twice the share of a key of weight 1. */
  weight: number;
  /** When the gate took it (ms since the epoch), for the order within a key. */
  arrivedAt: number;
  /** When it stops waiting with nothing (its caller then plans it again). */
  giveUpAt: number;
}

/** What the gate keeps between asks (and carries across continue-as-new). */
export interface GrantsState {
  /** The grants still in the window and slack: [time, requests], oldest first. */
  log: SendLog;
  /** Per fairness key: requests granted divided by the key's weight, since the key last joined. */
  served: Record<string, number>;
  /** Per fairness key: when it last asked or was granted (a key quiet for longer joins afresh). */
  activeAt: Record<string, number>;
  /** Per fairness key: requests granted in all (for the gate's view and metrics). */
  granted: Record<string, number>;
  /** No grants while paused: asks wait, then give up and are planned again. */
  paused: boolean;
  /** The operator's /run limit for the endpoint, over the workloads' own. */
  limitOverride?: number;
  /** The operator's weights per fairness key, over the asks' own. */
  weights: Record<string, number>;
  /** The asks waiting for room, as their callers last asked. */
  waiting: WaitingAsk[];
  /** Room granted to a waiting ask, kept for its caller until the grant's sendBy. */
  earmarks: Record<string, Grant>;
  /** Spare room handed out whose requests may still be counted by the service. */
  spares: SpareRoom[];
  /** The service's queue as last read by an asking process. */
  queue?: ServiceQueue | undefined;
  /** Jobs the service's workers take per second, as last measured between two readings. */
  takenPerSecond?: number | undefined;
  /** The reading that measure was taken from, and the next is taken from. */
  takenFrom?: ServiceQueue | undefined;
}

export interface Grant {
  id: string;
  /** Requests granted: 0 for an ask that gave up. */
  count: number;
  /** The time of the grant (ms since the epoch): its requests go out by `sendBy`. */
  at: number;
  sendBy: number;
  /** Spare room its caller may use without asking: `count` more requests, each sent by `until` and slack. */
  spare?: HeldSpare | undefined;
}

/** Spare room handed out: counted in the log at `at`, and held from then until `until` and a window and slack. */
export interface SpareRoom {
  at: number;
  until: number;
  count: number;
}

export function initialGrants(): GrantsState {
  return {
    log: [],
    served: {},
    activeAt: {},
    granted: {},
    paused: false,
    weights: {},
    waiting: [],
    earmarks: {},
    spares: [],
  };
}

/** The weight an ask counts with: the operator's for its key, else its own. */
function weightOf(state: GrantsState, ask: Pick<WaitingAsk, 'fairnessKey' | 'weight'>): number {
  return state.weights[ask.fairnessKey] ?? ask.weight;
}

/** Counts `count` requests granted now to the ask's key: in the window, its share and its total. */
function countGrant(
  state: GrantsState,
  ask: Pick<WaitingAsk, 'fairnessKey' | 'weight'>,
  count: number,
  now: number,
): void {
  logGrant(state.log, now, count);
  state.served[ask.fairnessKey] = (state.served[ask.fairnessKey] ?? 0) + count / weightOf(state, ask);
  state.granted[ask.fairnessKey] = (state.granted[ask.fairnessKey] ?? 0) + count;
  state.activeAt[ask.fairnessKey] = now;
}

/**
 * Takes a key that was idle into the shares: it starts level with the least served of the keys
 * waiting, so that a key that was idle cannot claim the window for what it did not use. A key that
 * asked or was granted within the last window and slack is not idle: its ask answered a moment ago
 * and asked again keeps what it has served.
 */
export function joinKey(state: GrantsState, key: string, waiting: readonly WaitingAsk[], now: number): void {
  const active = (state.activeAt[key] ?? Number.NEGATIVE_INFINITY) > now - ASK_WAIT_MS;
  state.activeAt[key] = now;
  if (active || waiting.some((ask) => ask.fairnessKey === key)) return;
  const others = waiting.map((ask) => state.served[ask.fairnessKey] ?? 0);
  const floor = others.length === 0 ? 0 : Math.min(...others);
  state.served[key] = Math.max(state.served[key] ?? 0, floor);
}

/** The waiting asks in the order they are served. */
export function grantOrder(state: GrantsState, waiting: readonly WaitingAsk[]): WaitingAsk[] {
  return [...waiting].sort(
    (a, b) =>
      a.priority - b.priority ||
      (state.served[a.fairnessKey] ?? 0) - (state.served[b.fairnessKey] ?? 0) ||
      a.arrivedAt - b.arrivedAt ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** The first time after `now` at which the window has room again (the oldest grant leaves it). */
export function roomAgainAt(log: SendLog, now: number, spares: readonly SpareRoom[] = []): number {
  const span = RUN_WINDOW_MS + SEND_SLACK_MS;
  const oldest = log.find(([at]) => at > now - span);
  const tails = spareTails(spares, now).map((spare) => spare.until + span);
  const times = [...(oldest === undefined ? [] : [oldest[0] + span]), ...tails];
  return times.length === 0 ? now : Math.min(...times);
}

/**
 * The spare room that has left the log but whose requests the service may still count: a spare
 * request goes out by its `until` and slack, and counts in the service's window for a window
 * after that.
 */
function spareTails(spares: readonly SpareRoom[], now: number): SpareRoom[] {
  const span = RUN_WINDOW_MS + SEND_SLACK_MS;
  return spares.filter((spare) => spare.at <= now - span && spare.until > now - span);
}

/** The room the window has now: what the log leaves, less the spare room still held past it. */
function windowRoomNow(state: GrantsState, now: number, window: number): number {
  const held = spareTails(state.spares, now).reduce((sum, spare) => sum + spare.count, 0);
  return Math.max(0, roomNow(state.log, now, window) - held);
}

/**
 * Grants the room the window has now to the waiting asks, best first, and answers the asks whose
 * wait is over with nothing. Returns the answers (the answered asks leave `waiting`) and the time
 * at which to look again (undefined: nothing waits).
 */
export function grantNow(
  state: GrantsState,
  waiting: WaitingAsk[],
  now: number,
  limit: number,
): { answers: Grant[]; nextAt: number | undefined } {
  const span = RUN_WINDOW_MS + SEND_SLACK_MS;
  while (state.log.length > 0 && (state.log[0]?.[0] ?? 0) <= now - span) state.log.shift();
  const window = state.limitOverride ?? limit;
  const answers: Grant[] = [];
  const answer = (ask: WaitingAsk, count: number) => {
    waiting.splice(waiting.indexOf(ask), 1);
    answers.push({ id: ask.id, count, at: now, sendBy: now + SEND_SLACK_MS });
  };
  // Whether the service's queue, not the window, is what keeps the waiting asks waiting.
  let queueFull = false;
  if (!state.paused) {
    for (;;) {
      const windowRoom = windowRoomNow(state, now, window);
      const next = grantOrder(state, waiting)[0];
      const jumping = next !== undefined && outranks(next, waiting);
      const queue = queueRoom(state.queue, state.log, now, state.takenPerSecond, jumping);
      const room = Math.min(windowRoom, queue);
      queueFull = windowRoom > 0 && room <= 0;
      if (room <= 0 || next === undefined) break;
      const count = Math.min(room, next.count);
      countGrant(state, next, count, now);
      answer(next, count);
    }
  }
  for (const ask of waiting.filter((waiter) => waiter.giveUpAt <= now)) answer(ask, 0);
  if (waiting.length === 0) return { answers, nextAt: undefined };
  const giveUp = Math.min(...waiting.map((ask) => ask.giveUpAt));
  if (state.paused) return { answers, nextAt: giveUp };
  // A full queue frees room as the service's workers take jobs: seen in the next reading.
  const roomAt = queueFull ? now + QUEUE_RETRY_MS : roomAgainAt(state.log, now, state.spares);
  return { answers, nextAt: Math.min(giveUp, roomAt) };
}

/**
 * The state to carry across continue-as-new: the window, and the shares levelled so that the least
 * served key is at 0 (only differences count) with keys at that level left out.
 */
export function carriedGrants(state: GrantsState): GrantsState {
  const values = Object.values(state.served);
  const least = values.length === 0 ? 0 : Math.min(...values);
  const served: Record<string, number> = {};
  for (const [key, value] of Object.entries(state.served)) if (value > least) served[key] = value - least;
  return {
    ...state,
    log: state.log.map(([at, count]) => [at, count]),
    served,
    waiting: state.waiting.map((ask) => ({ ...ask })),
    earmarks: { ...state.earmarks },
    spares: state.spares.map((spare) => ({ ...spare })),
    ...(state.queue === undefined ? {} : { queue: { ...state.queue } }),
    ...(state.takenFrom === undefined ? {} : { takenFrom: { ...state.takenFrom } }),
  };
}

/**
 * Keeps the newest of the readings the asks bring, and measures how fast the workers take jobs
 * from the reading it last measured from: readings from several processes come closer together
 * than a measure is worth, and one further than the grants' log reaches starts a new measure.
 */
export function takeReading(state: GrantsState, reading: ServiceQueue | undefined): void {
  const newest = newerReading(state.queue, reading);
  if (newest === undefined || newest === state.queue) return;
  state.queue = newest;
  const from = state.takenFrom;
  if (from === undefined || newest.at - from.at > RUN_WINDOW_MS) {
    state.takenFrom = newest;
    state.takenPerSecond = undefined;
    return;
  }
  const taken = takenPerSecond(from, newest, state.log);
  if (taken === undefined) return;
  state.takenPerSecond = taken;
  state.takenFrom = newest;
}

/**
 * Lets go of what no caller will claim: earmarks held past EARMARK_HOLD_MS leave the window (their
 * requests were never sent), and asks past their giveUpAt leave the queue (their callers gave up).
 */
export function tidy(state: GrantsState, now: number): void {
  for (const [id, earmark] of Object.entries(state.earmarks)) {
    if (earmark.at + EARMARK_HOLD_MS >= now) continue;
    delete state.earmarks[id];
    unlog(state.log, earmark);
  }
  state.log = state.log.filter(([, count]) => count > 0);
  state.waiting = state.waiting.filter((ask) => ask.giveUpAt > now);
  state.spares = state.spares.filter((spare) => spare.until > now - RUN_WINDOW_MS - SEND_SLACK_MS);
}

/**
 * Spare room for a small grant (at most SPARE_MAX requests) just made at the first ask, when the
 * endpoint is idle: nothing else waits, nothing is paused, the window holds less than a tenth of
 * its limit (spares included: a workload that keeps asking, a batch's pages say, gets none, so
 * spares never add up to a share of the window), and the window and the service's queue keep ten
 * times the spare after it. Counted now, as a grant to the same key, and held past the log until
 * its requests can no longer count.
 */
function spareFor(state: GrantsState, ask: Ask, now: number, limit: number): Grant['spare'] {
  if (state.paused || state.waiting.length > 0 || ask.count > SPARE_MAX) return undefined;
  const window = state.limitOverride ?? limit;
  const windowRoom = windowRoomNow(state, now, window);
  if (window - windowRoom >= window * SPARE_SHARE) return undefined;
  const queue = queueRoom(state.queue, state.log, now, state.takenPerSecond, false);
  const count = Math.min(SPARE_MAX, Math.floor(Math.min(windowRoom, queue) * SPARE_SHARE));
  if (count <= 0) return undefined;
  countGrant(state, ask, count, now);
  const until = now + SPARE_MS;
  state.spares.push({ at: now, until, count });
  return { count, until };
}

/** Spare room as its caller's process holds it: `count` requests left, each sent by `until` and slack. */
export interface HeldSpare {
  count: number;
  until: number;
}

/**
 * Takes room for `count` requests from the spare a process holds, if it is still good and holds
 * them all (a batch's page is not cut into a spare part and a rest): a grant to send now, as the
 * gate's own are (by SEND_SLACK_MS from now), or undefined.
 */
export function takeSpare(
  spare: HeldSpare | undefined,
  count: number,
  now: number,
): { count: number; at: number; sendBy: number } | undefined {
  if (spare === undefined || spare.count < count || now >= spare.until) return undefined;
  spare.count -= count;
  return { count, at: now, sendBy: now + SEND_SLACK_MS };
}

/** A caller's ask as the gate takes it: the waiting ask but for the times the gate sets. */
export type Ask = Omit<WaitingAsk, 'arrivedAt' | 'giveUpAt'>;

/**
 * Answers one ask now: the room earmarked for it, or room the window has now if the ask is first in
 * order, or when to ask again (`retryAt`: when room comes back, or a little later while paused).
 * Earmarks past their sendBy leave the window first: their requests were never sent. `reading` is
 * the service's queue as the caller last read it (the gate keeps the newest).
 */
export function answerAsk(
  state: GrantsState,
  ask: Ask,
  now: number,
  limit: number,
  reading?: ServiceQueue,
): { grant: Grant } | { retryAt: number; paused?: true } {
  takeReading(state, reading);
  const claimed = state.earmarks[ask.id];
  if (claimed && claimed.at + EARMARK_HOLD_MS >= now) {
    delete state.earmarks[ask.id];
    // Counted from now, when its requests can go out: later in the window, never earlier.
    unlog(state.log, claimed);
    logGrant(state.log, now, claimed.count);
    return { grant: { id: claimed.id, count: claimed.count, at: now, sendBy: now + SEND_SLACK_MS } };
  }
  // An ask keeps its place while its caller keeps asking: asked again, it waits a while longer,
  // for what its caller wants now.
  const mineWaiting = state.waiting.find((waiter) => waiter.id === ask.id);
  if (mineWaiting) {
    mineWaiting.giveUpAt = now + ASK_WAIT_MS;
    mineWaiting.count = ask.count;
  }
  tidy(state, now);
  if (!mineWaiting) {
    joinKey(state, ask.fairnessKey, state.waiting, now);
    state.waiting.push({ ...ask, arrivedAt: now, giveUpAt: now + ASK_WAIT_MS });
  }
  const { answers, nextAt } = grantNow(state, state.waiting, now, limit);
  for (const answer of answers) if (answer.count > 0) state.earmarks[answer.id] = answer;
  const mine = state.earmarks[ask.id];
  if (mine) {
    delete state.earmarks[ask.id];
    // Spare room only for an ask granted the first time it asks: one that had to wait found no idle endpoint.
    const spare = mineWaiting ? undefined : spareFor(state, ask, now, limit);
    return { grant: spare === undefined ? mine : { ...mine, spare } };
  }
  const later = nextAt ?? now + SEND_SLACK_MS;
  const retryAt = state.paused ? Math.min(later, now + PAUSED_RETRY_MS) : later;
  // Its place is kept until a while after the time it is told to ask again.
  const waiting = state.waiting.find((waiter) => waiter.id === ask.id);
  if (waiting) waiting.giveUpAt = Math.max(waiting.giveUpAt, retryAt + RETRY_GRACE_MS);
  return state.paused ? { retryAt, paused: true } : { retryAt };
}
