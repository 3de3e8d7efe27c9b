/**
 * The endpoint's gate: one workflow per endpoint (its id from the endpoint's) that holds the
 * endpoint's /run window for every workload on it, in every worker process. Submits ask it for
 * room (an update, from their activity) and send only what it grants, within SEND_SLACK_MS of the
 * grant. The rule of who goes first is engine/endpoint-grants.ts; this file holds the shapes that
 * cross the boundary (the asks, the grants, the operator's controls, the gate's view) and the
 * scheduling options every workload takes (priority, fairness key and weight).
 */
import type { Priority } from '@temporalio/common';
import { z } from 'zod';
import { pathSegmentSchema } from '../api/schemas/path-segment';

/** The service counts an endpoint's requests of one operation in any window this long. */
export const RUN_WINDOW_MS = 10_000;
/**
 * How late a granted request may go out after its grant: the time an answer takes to reach the
 * activity that sends, with room to spare. A request later than that is not sent (its caller asks
 * again), so a grant's requests all fall in the window the gate counted them in.
 */
export const SEND_SLACK_MS = 500;
/** How long a caller asks its gate for room before it gives up (and plans its requests again): one window and slack. */
export const ASK_WAIT_MS = RUN_WINDOW_MS + SEND_SLACK_MS;
/**
 * Asks a gate answers in one run before it continues as new: well under the Temporal server's
 * limit of updates in one workflow run (2,000 by default).
 */
export const GATE_ASKS_PER_RUN = 1_000;

/**
 * How long a gate with no ask waits for one before it ends (the next ask starts it again). A gate
 * started afresh has therefore had nothing in its window for at least this long.
 */
export const GATE_IDLE_MS = 5 * 60_000;

/** The gate's workflow type. */
export const ENDPOINT_GATE_WORKFLOW = 'endpointGate';
/** The update a submit asks room with. */
export const ASK_TO_SEND_UPDATE = 'askToSend';

/** The gate's workflow id: one per endpoint. */
export function endpointGateId(endpointId: string): string {
  return `endpoint-gate/${endpointId}`;
}

/** Temporal's priority scale: 1 goes first, 5 last. */
export const DEFAULT_PRIORITY = 3;
/** The fairness key of work that names none. */
export const DEFAULT_FAIRNESS_KEY = '';
const FAIRNESS_KEY_MAX_BYTES = 64;

const prioritySchema = z
  .number({ error: 'must be an integer from 1 (first) to 5 (last)' })
  .int({ error: 'must be an integer from 1 (first) to 5 (last)' })
  .min(1, { error: 'must be an integer from 1 (first) to 5 (last)' })
  .max(5, { error: 'must be an integer from 1 (first) to 5 (last)' });
const fairnessKeySchema = z
  .string({ error: 'must be a string of at most 64 bytes' })
  .refine((key) => new TextEncoder().encode(key).length <= FAIRNESS_KEY_MAX_BYTES, {
    error: 'must be a string of at most 64 bytes',
  });
const fairnessWeightSchema = z
  .number({ error: 'must be a number above 0, at most 1000' })
  .gt(0, { error: 'must be a number above 0, at most 1000' })
  .max(1000, { error: 'must be a number above 0, at most 1000' });

/**
 * How a workload's submits share its endpoints with other workloads: `priority` (1 to 5, default 3:
 * a higher priority submits first, in the worker's task queue and at the endpoint's gate), and a
 * `fairnessKey` (a tenant) with its `fairnessWeight` (default 1): while several keys wait on one
 * endpoint, each gets its weighted share of the endpoint's submits.
 */
export const schedulingSchema = z.strictObject({
  priority: prioritySchema.optional(),
  fairnessKey: fairnessKeySchema.optional(),
  fairnessWeight: fairnessWeightSchema.optional(),
});
export type Scheduling = z.infer<typeof schedulingSchema>;

/**
 * A workload's task priority in Temporal: its workflow's, which its activities and child workflows
 * inherit, so that its tasks wait in the worker's queue by the same priority as its submits wait at
 * the gate. None when the workload names none (the default, 3).
 */
export function taskPriorityOf(scheduling: Scheduling): { priority: Priority } | Record<string, never> {
  return scheduling.priority === undefined ? {} : { priority: { priorityKey: scheduling.priority } };
}

/**
 * The service's queue for the endpoint as a worker process last read it (/health, and the
 * endpoint's workersMax from its listing), sent along with the process's asks: the gate keeps the
 * queue short while every worker the endpoint may have is busy (engine/service-queue.ts).
 */
export const serviceQueueSchema = z.strictObject({
  /** Jobs waiting IN_QUEUE. */
  inQueue: z.number().int().min(0),
  /** Workers running a job. */
  running: z.number().int().min(0),
  /** Workers up and waiting for one. */
  idle: z.number().int().min(0),
  /** The most workers the endpoint may have; absent when the listing could not say. */
  workersMax: z.number().int().min(0).optional(),
  /** When it was read (ms since the epoch). */
  at: z.number(),
});
export type ServiceQueue = z.infer<typeof serviceQueueSchema>;

/** A submit's ask for room in its endpoint's window. */
export const sendAskSchema = z.strictObject({
  endpointId: pathSegmentSchema,
  /** The caller's name for this ask, the same each time it asks again until it is granted. */
  id: z.string().min(1).max(200),
  /** Requests it would send now. */
  count: z.number().int().min(1),
  /** The /run limit of the asking worker's configuration (per 10 s). */
  limit: z.number().int().min(1),
  priority: prioritySchema.default(DEFAULT_PRIORITY),
  fairnessKey: fairnessKeySchema.default(DEFAULT_FAIRNESS_KEY),
  fairnessWeight: fairnessWeightSchema.default(1),
  /** The service's queue as the asking process last read it, if lately. */
  queue: serviceQueueSchema.optional(),
});
export type SendAsk = z.input<typeof sendAskSchema>;

/**
 * The gate's answer: `count` requests granted, sent by `sendBy` or not at all; or none yet (count
 * 0), and `retryAt` says when to ask again.
 */
export const sendGrantSchema = z.strictObject({
  count: z.number().int().min(0),
  at: z.number(),
  sendBy: z.number(),
  retryAt: z.number().optional(),
  /** No room because the endpoint is paused: a caller that need not wait may give up at once. */
  paused: z.literal(true).optional(),
  /**
   * Room for `count` more requests that the asking process may send without asking, each by
   * `until` and SEND_SLACK_MS: given with a grant on an idle endpoint (engine/endpoint-grants.ts).
   */
  spare: z.strictObject({ count: z.number().int().min(1), until: z.number() }).optional(),
});
export type SendGrant = z.infer<typeof sendGrantSchema>;

/** The operator's controls of a gate, each optional: what is absent stays as it is. */
export const gateControlsSchema = z.strictObject({
  paused: z.boolean().optional(),
  /** The endpoint's /run limit per 10 s, over the workloads' own; null: theirs again. */
  runLimit: z.number().int().min(1).max(1_000_000).nullable().optional(),
  /** Weights per fairness key over the asks' own; a key set to null takes the asks' again. */
  weights: z.record(fairnessKeySchema, fairnessWeightSchema.nullable()).optional(),
});
export type GateControls = z.input<typeof gateControlsSchema>;

/** What a gate shows: its controls, its window and each fairness key's waiting and granted requests. */
export interface GateView {
  endpointId: string;
  paused: boolean;
  /** The limit it keeps to now (the operator's, or the last asker's). */
  runLimit: number | undefined;
  runLimitOverride: number | undefined;
  /** Requests granted in the current window. */
  inWindow: number;
  keys: Array<{ fairnessKey: string; weight: number | undefined; waiting: number; granted: number }>;
  /** Requests waiting, by priority (1 to 5). */
  waitingByPriority: Record<string, number>;
  /**
   * The service's queue as last read, and the jobs it may hold now: a number while every worker of
   * the endpoint is busy (the gate grants no more than that), absent while the queue is not held;
   * and the jobs its workers take a second, as the gate last measured.
   */
  serviceQueue?: ServiceQueue & { room?: number; takenPerSecond?: number };
}

/** The gate's input: the endpoint, and what a previous run carried. */
export interface EndpointGateInput {
  endpointId: string;
  /** The state of the run before continue-as-new (engine/endpoint-grants.ts carriedGrants). */
  carried?: unknown;
}
