/**
 * A batch run's state (activities mode): what continues as new (BatchState, inside the workflow's
 * one input), what lives only while this run does (the activities under way), and the one place an
 * item moves: `advance` steps the per-item engine (engine/item-engine.ts), sums the counters the step moves
 * and records an item that ended (a /retry the step asks for is the caller's to send; a cancel is
 * queued for batch-cancel.ts). A run starts in batch-run-start.ts; batch-run-counts.ts reads what it
 * has under way.
 */
import type { CancellationScope } from '@temporalio/workflow';
import type { BatchInput, ParsedBatchInput } from '../../contracts/batch-input';
import type { BatchCost, BatchCounts } from '../../contracts/batch-summary';
import type { EndpointLimit, LookShare, PendingResultLine } from '../../contracts/batch-types';
import { roundCost } from '../../contracts/cost';
import type { Polling } from '../../contracts/job-types';
import type { StagePageSource } from '../../contracts/pipeline-types';
import type { Route } from '../../contracts/route';
import type { SubmitLeaseSetting } from '../../contracts/submit-lease';
import type { EndpointTally } from '../../engine/batch-route';
import { type CarriedItem, encodeItems } from '../../engine/item-carry';
import { stepItem } from '../../engine/item-engine';
import type {
  EndedItem,
  ItemCount,
  ItemEvent,
  ItemRules,
  ItemState,
  ItemStep,
} from '../../engine/item-state';
import { endpointOf } from '../../engine/item-state';
import type { BatchTally } from './batch-outcomes';

export type { BatchTally } from './batch-outcomes';

/** Everything a run hands to the next one. */
export interface BatchState {
  batchKey: string;
  /** The batch store's name (`local`, `s3://bucket/prefix`), as the results reference gives it. */
  store?: string;
  manifestKey: string;
  total: number;
  /** Items below the cursor have been taken from the manifest. */
  cursor: number;
  /**
   * Items taken and not ended (queued again, uncertain, running or waiting for a retry), in the
   * compact form of engine/item-carry.ts: up to maxConcurrency of them cross continue-as-new.
   */
  items: CarriedItem[];
  /** Lines of items that ended without output, not yet written. */
  lines: PendingResultLine[];
  /** Jobs given up before they were seen finished (a 404, a deadline), not yet cancelled. */
  toCancel: Array<{ index: number; jobId: string; endpoint?: number }>;
  /** Orphans' webhooks (a job id naming its item) not yet matched with their uncertain submit. */
  hints: Array<{ jobId: string; item?: number }>;
  counts: BatchCounts;
  tally: BatchTally;
  /** Per endpoint of the route (one for a single endpoint): its split and its drain. */
  endpoints: EndpointTally[];
  maxConcurrency: number;
  paused: boolean;
  /** Tolerance or budget reached: nothing more is submitted. */
  stopping: boolean;
  budgetExceeded?: boolean;
  /** The running cost estimate of the finished runs. */
  cost: BatchCost;
  startedAt: number;
  runs: number;
  /** History events of the earlier runs. */
  events: number;
  /** The endpoints' /run and /status limits, which the batch holds for its workers (send-window.ts, look-shares.ts); absent: none. */
  runLimit?: EndpointLimit;
  statusLimit?: EndpointLimit;
}

/** A watcher under way: the items it was asked about (index -> job id), its endpoint and share. */
export interface RunningWatcher {
  asked: Map<number, string>;
  at: number;
  share: LookShare | undefined;
}

/** A run: the carried state, with the items by index, and the activities under way. */
export interface BatchRun {
  readonly input: ParsedBatchInput;
  /** The caller's input as given: the next run's starts from it. */
  readonly caller: BatchInput;
  readonly rules: ItemRules;
  /** The route (a single endpoint is a route of one). */
  readonly route: Route;
  readonly polling: Polling;
  /** The lease setting the submits carry; undefined: off. */
  readonly lease: SubmitLeaseSetting | undefined;
  /** The carried state; its `items` are kept in `items` below while the run lasts. */
  readonly state: BatchState;
  readonly items: Map<number, ItemState>;
  /**
   * Items in pages being submitted, with the route position each goes to (an orphan's webhook
   * may come before the page's answer).
   */
  readonly sending: Map<number, number>;
  submitsRunning: number;
  /** Submits under way per endpoint. */
  readonly sends: number[];
  /** The send times reserved for the submits under way (send-window.ts). */
  readonly sendTimes: number[];
  /** The route's looks at its endpoints (batch-route-run.ts); not carried. */
  readonly routing: {
    /** When each endpoint's /health was last read. */
    checkedAt: Array<number | undefined>;
    /** Endpoints whose /health is being read. */
    checking: Set<number>;
    /** Items whose queued job is being withdrawn. */
    withdrawing: Set<number>;
    /** Route activities under way. */
    running: number;
  };
  /** Items whose /retry, or lease extension, is under way. */
  readonly retrying: Set<number>;
  readonly extending: Set<number>;
  extendsRunning: number;
  recordRunning: boolean;
  cancelRunning: boolean;
  /** The running watchers, each with the items it was asked about and its part of the /status limit. */
  readonly watchers: Map<CancellationScope, RunningWatcher>;
  /** Items some running watcher covers. */
  readonly watched: Set<number>;
  /** Waiting for the activities to end before continuing as new. */
  draining: boolean;
  cancelled: boolean;
  /** Bumped by everything that may let the loop do more (an activity's end, a signal, a timer). */
  dirty: number;
  /** Set when this run is a pipeline stage's window (workflows/pipeline/); absent for a batch. */
  stage?: StageWindow;
  timer?: { due: number; scope: CancellationScope };
}

/**
 * What makes a window a pipeline stage's: its pages' requests come from the pieces (the submit
 * makes them), and an item that ended is the pipeline's to move on (no batch result line).
 */
export interface StageWindow {
  pageSource(indexes: readonly number[]): StagePageSource;
  ended(item: EndedItem, line: Partial<PendingResultLine>): void;
  /** Pieces wait for this stage beyond its window (in its buffer, or items not yet read). */
  waiting(): boolean;
}

export function bump(run: BatchRun): void {
  run.dirty += 1;
}

/** The state to carry into the next run. */
export function carriedState(run: BatchRun): BatchState {
  return { ...run.state, items: encodeItems(run.items.values()) };
}

const TALLY_OF: Record<ItemCount, keyof BatchTally> = {
  submission: 'submissions',
  uncertainSubmit: 'uncertainSubmits',
  uncertainAdopted: 'uncertainAdopted',
  resubmittedAfterLease: 'resubmittedAfterLease',
  leaseLapse: 'leaseLapses',
  retry: 'retries',
  hop: 'hops',
};

/**
 * The one way an item moves: the engine's step, its counters summed, the item kept or, once ended,
 * counted and its line queued for the results (`line`: what the event's source knows beyond the
 * engine, such as the run's times or where its error text is).
 */
export function advance(
  run: BatchRun,
  item: ItemState,
  event: ItemEvent,
  line: Partial<PendingResultLine> = {},
): ItemStep {
  const result = stepItem(item, event, run.rules);
  const at = endpointOf(item);
  for (const count of result.counts) {
    run.state.tally[TALLY_OF[count]] += 1;
    if (count === 'hop') tallyAt(run, at).moved += 1;
  }
  for (const command of result.commands) {
    if (command.kind === 'cancel')
      run.state.toCancel.push({
        index: item.index,
        jobId: command.jobId,
        ...(at === 0 ? {} : { endpoint: at }),
      });
  }
  const next = result.item;
  if (next.phase === 'ended') {
    run.items.delete(next.index);
    endItem(run, next, line);
  } else run.items.set(next.index, next);
  return result;
}

/** An ended item: counted; its line written later (a completed item's line the watcher wrote). */
export function endItem(run: BatchRun, item: EndedItem, line: Partial<PendingResultLine> = {}): void {
  run.state.counts[item.outcome] += 1;
  const at = endpointOf(item);
  if (item.outcome === 'completed') {
    tallyAt(run, at).completed += 1;
    run.stage?.ended(item, line);
    return;
  }
  tallyAt(run, at).failed += 1;
  if (run.stage) {
    run.stage.ended(item, line);
    return;
  }
  run.state.lines.push({
    index: item.index,
    ...(item.jobId === undefined ? {} : { jobId: item.jobId }),
    endpointId: endpointIdAt(run, at),
    ...(item.hops ? { hops: item.hops } : {}),
    status: item.status,
    ...(item.reason === undefined || line.errorRef !== undefined ? {} : { error: item.reason }),
    attempts: item.attempts,
    submissions: item.submissions,
    ...(item.cost === undefined ? {} : { cost: item.cost }),
    ...(item.submittedAt === undefined ? {} : { submittedAt: item.submittedAt, finishedAt: item.endedAt }),
    ...line,
  });
}

/** A finished run's estimate, in the batch's running total and its endpoint's. */
export function addCost(run: BatchRun, amount: number | undefined, endpoint: number): void {
  if (amount === undefined) return;
  const { cost } = run.state;
  cost.amount = roundCost(cost.amount + amount);
  cost.items += 1;
  const tally = tallyAt(run, endpoint);
  tally.cost = roundCost((tally.cost ?? 0) + amount);
}

/** The endpoint id at a position of the route. */
export function endpointIdAt(run: BatchRun, at: number): string {
  return run.route.endpoints[at]?.endpointId ?? run.input.endpointId;
}

/** The tally of the endpoint at a position of the route. */
export function tallyAt(run: BatchRun, at: number): EndpointTally {
  const tallies = run.state.endpoints;
  const tally = tallies[at] ?? tallies[0];
  if (!tally) throw new Error(`the batch has no endpoint at position ${at}`);
  return tally;
}
