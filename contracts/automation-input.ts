/**
 * The automation workflow's shapes: the event it is signalled with, the automation's name and key
 * (which make its workflow id), its flow controls, and what it carries across a continue-as-new.
 *
 * Bundled into workflow code: only zod and input-rules may be imported here.
 */
import { z } from 'zod';
import { durationSchema, firstIssue, positiveDurationSchema } from './input-rules';

/** The serialized event's cap: events enter history (the signal's payload), so they stay small. */
export const MAX_EVENT_BYTES = 64 * 1024;

/** An automation's name: it is part of the workflow id and of the gateway's path, so plain. */
export const automationNameSchema = z
  .string({ error: 'is required' })
  .min(1, { error: 'must not be empty' })
  .max(128, { error: 'must be at most 128 characters' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, {
    error: 'must be letters, digits, . _ - (starting with a letter or digit)',
  });

/** The caller's key (a user, a tenant, a document): one automation workflow per name and key. */
export const automationKeySchema = z
  .string({ error: 'is required' })
  .min(1, { error: 'must not be empty' })
  .max(256, { error: 'must be at most 256 characters' })
  .regex(/^[\x21-\x7e]+$/, { error: 'must be visible ASCII characters without spaces' });

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export const automationEventSchema = z
  .strictObject({
    /** The de-duplication key: an event with an id seen within the dedupe window is dropped. */
    id: z
      .string({ error: 'is required' })
      .min(1, { error: 'must not be empty' })
      .max(256, { error: 'must be at most 256 characters' }),
    type: z.string().max(128, { error: 'must be at most 128 characters' }).optional(),
    data: z.json({ error: 'must be a JSON value' }).default(null),
    time: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
  })
  .superRefine((event, ctx) => {
    const bytes = new TextEncoder().encode(JSON.stringify(event)).length;
    if (bytes > MAX_EVENT_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['data'],
        message: `the event is ${bytes} bytes serialized; at most ${MAX_EVENT_BYTES} are allowed (put large data in a store and send its key)`,
      });
    }
  });

export type AutomationEventInput = z.input<typeof automationEventSchema>;
export type AutomationEvent = z.infer<typeof automationEventSchema>;

/** The workflow id of the automation `name` for `key`: one long-lived workflow per pair. */
export function automationWorkflowId(name: string, key: string): string {
  return `automation:${name}:${key}`;
}

/** Where an ending job, batch or automation run sends its end event (chaining). */
export const emitOnEndSchema = z.strictObject({
  automation: automationNameSchema,
  /** The key of the receiving automation; an automation's own runs default to their key. */
  key: automationKeySchema.optional(),
});
export type EmitOnEnd = z.infer<typeof emitOnEndSchema>;

/** The flow controls of a definition, as the workflow reads them (durations in ms). */
export const automationControlsSchema = z.strictObject({
  /** Event ids are remembered this long; a repeat within it is dropped. */
  dedupeWindow: durationSchema.default(24 * 3600_000),
  /** Run once the key has been quiet this long (0: no debounce). */
  debounce: durationSchema.default(0),
  /** Collect events into one run: up to maxEvents, or maxWait after the first. */
  batch: z
    .strictObject({
      maxEvents: z.int().min(1).max(10_000),
      maxWait: positiveDurationSchema,
    })
    .optional(),
  /** Runs in flight per key; further groups wait in order. */
  concurrency: z.int().min(1).max(1000).default(1),
  /**
   * Stop once the runs' estimated cost (the workers' price table) reaches this amount: no further
   * run starts, and once the runs in flight end the automation fails with AutomationBudgetExceeded.
   */
  budget: z
    .number({ error: 'must be a number > 0 (in the price table currency)' })
    .finite({ error: 'must be a finite number > 0' })
    .positive({ error: 'must be a number > 0 (in the price table currency)' })
    .optional(),
  /** An idle automation (nothing pending, in flight or remembered) ends after this long. */
  idleTimeout: positiveDurationSchema.default(3600_000),
  taskQueue: z.string().min(1).optional(),
});
export type AutomationControlsInput = z.input<typeof automationControlsSchema>;
export type AutomationControls = z.infer<typeof automationControlsSchema>;

export interface AutomationCounters {
  received: number;
  duplicates: number;
  runsStarted: number;
  runsCompleted: number;
  runsFailed: number;
  /** Groups the definition's `run` turned into no run (it returned null). */
  groupsSkipped: number;
  /** Signals whose event broke the rules (sent around sendEvent's validation). */
  invalid: number;
  /** The ended runs' estimated cost (absent in counters carried from before the budget). */
  cost?: number;
}

/**
 * A run's estimated cost from its result (a job's result, a batch's or a pipeline's summary all carry
 * `cost.amount`) or, for a failed run, from its failure's details; 0 when it has none.
 */
export function runCost(value: unknown): number {
  const amount = (value as { cost?: { amount?: unknown } } | null | undefined)?.cost?.amount;
  return typeof amount === 'number' && Number.isFinite(amount) && amount > 0 ? amount : 0;
}

/** A run started by the automation and not yet seen to end. */
export interface InFlightRun {
  workflowId: string;
  kind: 'job' | 'batch' | 'pipeline';
}

/** What a continue-as-new carries: nothing the new run could not rebuild is lost. */
export interface AutomationCarry {
  pending: AutomationEvent[];
  /** Workflow time (ms) the first pending event arrived, and the last one. */
  firstPendingAt?: number;
  lastEventAt?: number;
  /** Groups formed but not started yet (waiting for a concurrency slot). */
  ready: AutomationEvent[][];
  /** [event id, workflow time seen (ms)], oldest first. */
  seen: [string, number][];
  counters: AutomationCounters;
  inFlight: InFlightRun[];
  /** The sequence number of the last run started (run ids derive from it). */
  seq: number;
}

export interface AutomationWorkflowInput {
  name: string;
  key: string;
  /** Continue-as-new after this many events in one run (Temporal may suggest it earlier). */
  continueAfterEvents?: number;
  carry?: AutomationCarry;
}

export interface AutomationState {
  name: string;
  key: string;
  pending: number;
  ready: number;
  /** Groups taken from `ready` whose run is being planned and started: not in flight yet. */
  starting: number;
  inFlight: number;
  remembered: number;
  counters: AutomationCounters;
}

/** The event as the workflow takes it, or where it breaks the rules (field and rule). */
export function parseAutomationEvent(
  event: unknown,
): { ok: true; event: AutomationEvent } | { ok: false; field: string; rule: string } {
  const parsed = automationEventSchema.safeParse(event);
  if (parsed.success) return { ok: true, event: parsed.data };
  return { ok: false, ...firstIssue(parsed.error, 'event') };
}
