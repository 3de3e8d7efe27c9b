/**
 * The automation workflow's state (one `Automation`): what it carries across continue-as-new (the
 * events waiting, the remembered ids, the counters, the runs in flight) and what lives only in
 * this run (the waits' wake-up version, the starts under way), and how it is made from the input.
 */
import { workflowInfo } from '@temporalio/workflow';
import type {
  AutomationCarry,
  AutomationControls,
  AutomationCounters,
  AutomationEvent,
  AutomationWorkflowInput,
  InFlightRun,
} from '../../contracts/automation-input';

export interface Automation {
  name: string;
  key: string;
  /** The flow controls of the definition registered on the worker. */
  controls: AutomationControls;
  /** Events not in a group yet, in arrival order. */
  pending: AutomationEvent[];
  /** Workflow time (ms) the first pending event arrived, and the last one. */
  firstPendingAt?: number;
  lastEventAt?: number;
  /** Groups formed and waiting for a concurrency slot, in the order they formed. */
  ready: AutomationEvent[][];
  /** Event id -> workflow time it arrived, oldest first (a Map keeps insertion order). */
  seen: Map<string, number>;
  counters: AutomationCounters;
  /** Child workflow id -> its kind, for the runs started and not seen to end. */
  inFlight: Map<string, InFlightRun['kind']>;
  /** The sequence number of the last run started (run ids derive from it). */
  seq: number;
  /** `<workflow id>:<first run id prefix>`: the stem of every run id of this automation workflow. */
  runPrefix: string;
  /** Signals handled by this run (not carried): what continue-as-new counts. */
  eventsThisRun: number;
  /** Events after which the next continue-as-new is tried (moved on when the carry was too big). */
  continueAt: number;
  /** Runs being planned and started (not in flight yet: no child started). */
  starting: number;
  /** A failure that must end the workflow (no definition), raised by a start under way. */
  fatal?: unknown;
  /** Bumped by every signal and every run's end: what the workflow's waits wake on. */
  version: number;
}

export function freshCarry(): AutomationCarry {
  return {
    pending: [],
    ready: [],
    seen: [],
    counters: {
      received: 0,
      duplicates: 0,
      runsStarted: 0,
      runsCompleted: 0,
      runsFailed: 0,
      groupsSkipped: 0,
      invalid: 0,
      cost: 0,
    },
    inFlight: [],
    seq: 0,
  };
}

/** Events a run takes before it continues as new (automation-continue.ts), unless the input says. */
export const DEFAULT_CONTINUE_AFTER_EVENTS = 1_000;

/** The state of this run: the input's carry (or a fresh one) and the controls read at its start. */
export function newAutomation(input: AutomationWorkflowInput, controls: AutomationControls): Automation {
  const carry = input.carry ?? freshCarry();
  const info = workflowInfo();
  return {
    name: input.name,
    key: input.key,
    controls,
    // The carry's own arrays and counters: the state changes them in place.
    pending: carry.pending,
    firstPendingAt: carry.firstPendingAt,
    lastEventAt: carry.lastEventAt,
    ready: carry.ready,
    seen: new Map(carry.seen),
    counters: carry.counters,
    inFlight: new Map(carry.inFlight.map((run) => [run.workflowId, run.kind])),
    seq: carry.seq,
    runPrefix: `${info.workflowId}:${info.firstExecutionRunId.slice(0, 8)}`,
    eventsThisRun: 0,
    continueAt: input.continueAfterEvents ?? DEFAULT_CONTINUE_AFTER_EVENTS,
    starting: 0,
    version: 0,
  };
}

/** Nothing pending, grouped, starting or in flight. */
export function isIdle(automation: Automation): boolean {
  return (
    automation.pending.length === 0 &&
    automation.ready.length === 0 &&
    automation.inFlight.size === 0 &&
    automation.starting === 0
  );
}

/** A run slot is free: fewer runs in flight or starting than the concurrency allows. */
export function hasFreeSlot(automation: Automation): boolean {
  return automation.inFlight.size + automation.starting < automation.controls.concurrency;
}
