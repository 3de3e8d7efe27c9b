/**
 * A batch run's start (activities mode): its state from the input, or from what the run before
 * carried through continue-as-new, and the rules its items follow.
 */
import type { BatchInput, ParsedBatchInput } from '../../contracts/batch-input';
import type { Polling } from '../../contracts/job-types';
import { singleRoute } from '../../contracts/route';
import { newEndpointTallies } from '../../engine/batch-route';
import { decodeItems } from '../../engine/item-carry';
import { emptyCounts, emptyTally } from './batch-outcomes';
import type { BatchRun, BatchState } from './batch-run';

/** The batch's default look at its jobs: quick at first, then every 10 s at most. */
const BATCH_POLLING: Polling = { initialIntervalMs: 1_000, maxIntervalMs: 10_000, backoffCoefficient: 1.5 };
/** Retries of items that failed within the same second go out as one call. */
const RETRY_GRID_MS = 1_000;
/**
 * Uncertain submits whose waits end within the same 15 s go out again as one page: each page under
 * the fault mix leaves a few, and a page of its own costs a timer, a submit and its watchers (about
 * 20 history events); the wait is a lease and a webhook window long already (90 s by default).
 */
const WAIT_GRID_MS = 15_000;

export function newBatchRun(
  input: ParsedBatchInput,
  caller: BatchInput,
  carried: BatchState | undefined,
  now: number,
): BatchRun {
  const route = input.route ?? singleRoute(input.endpointId);
  const state: BatchState = carried ?? {
    batchKey: '',
    manifestKey: '',
    total: 0,
    cursor: 0,
    items: [],
    lines: [],
    toCancel: [],
    hints: [],
    counts: emptyCounts(),
    tally: emptyTally(),
    endpoints: newEndpointTallies(route.endpoints.length),
    maxConcurrency: input.maxConcurrency,
    paused: false,
    stopping: false,
    cost: { amount: 0, items: 0 },
    startedAt: now,
    runs: 1,
    events: 0,
  };
  // A carried state always has its endpoints; a hand-made one (a test's) may not.
  state.endpoints ??= newEndpointTallies(route.endpoints.length);
  state.tally.hops ??= 0;
  const { job } = input;
  return {
    input,
    caller,
    rules: {
      ...job,
      submitKind: 'run',
      retryGridMs: RETRY_GRID_MS,
      waitGridMs: WAIT_GRID_MS,
      routeLength: route.endpoints.length,
      capacityFailures: route.capacityFailures,
    },
    route,
    polling: { ...BATCH_POLLING, ...job.polling },
    lease: job.submitLease !== false ? job.submitLease : undefined,
    state,
    items: new Map(decodeItems(state.items).map((item) => [item.index, item])),
    sending: new Map(),
    submitsRunning: 0,
    sends: route.endpoints.map(() => 0),
    sendTimes: [],
    routing: {
      checkedAt: route.endpoints.map(() => undefined),
      checking: new Set(),
      withdrawing: new Set(),
      running: 0,
    },
    retrying: new Set(),
    extending: new Set(),
    extendsRunning: 0,
    recordRunning: false,
    cancelRunning: false,
    watchers: new Map(),
    watched: new Set(),
    draining: false,
    cancelled: false,
    dirty: 0,
  };
}
