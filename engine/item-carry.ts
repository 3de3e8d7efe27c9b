/**
 * The items a batch carries through continue-as-new, in a compact form: a batch may carry up to
 * maxConcurrency (10,000) items in flight, and the continue-as-new input must stay under Temporal's
 * payload limit (2 MB by default). Named fields cost about 230 bytes a running item (2.3 MB for
 * 10,000); as arrays of values in a fixed order per phase, about 100 (1 MB). Only this boundary
 * knows the short form: everywhere else an item has its named fields.
 */
import type { ItemState } from './item-state';

type CarriedPhase = Exclude<ItemState['phase'], 'ended'>;

/**
 * The order of each phase's fields in the compact form. A new field goes at the end of its phase's
 * list, never into the shared prefixes (that would move every field after it).
 */
const TALLY = ['index', 'attempts', 'submissions', 'retries', 'cost'] as const;
const KNOWN_JOB = [...TALLY, 'jobId', 'submittedAt', 'ttlMs', 'adopted', 'aliveAt', 'status'] as const;
/** A route's fields come last in every phase: absent on a single endpoint, they cost nothing. */
const ROUTED = ['endpoint', 'hops'] as const;
const FIELDS: Record<CarriedPhase, readonly string[]> = {
  queued: [...TALLY, 'rejectedTries', 'notBefore', ...ROUTED, 'noRoomTries'],
  uncertain: [...TALLY, 'sentAt', 'waitUntil', 'webhookArmed', 'ttlMs', 'lease', ...ROUTED],
  running: [...KNOWN_JOB, 'lease', ...ROUTED],
  'retry-due': [...KNOWN_JOB, 'finishedAt', 'retryAt', ...ROUTED],
};
const PHASES = Object.keys(FIELDS) as CarriedPhase[];

/** One item: its phase's number, then its fields' values in order (absent: null, trailing ones dropped). */
export type CarriedItem = Array<string | number | boolean | null | object>;

export function encodeItems(items: Iterable<ItemState>): CarriedItem[] {
  const out: CarriedItem[] = [];
  for (const item of items) {
    if (item.phase === 'ended') continue;
    const record = item as unknown as Record<string, unknown>;
    const values = FIELDS[item.phase].map((field) => (record[field] ?? null) as CarriedItem[number]);
    while (values.length > 0 && values[values.length - 1] === null) values.pop();
    out.push([PHASES.indexOf(item.phase), ...values]);
  }
  return out;
}

export function decodeItems(carried: readonly CarriedItem[]): ItemState[] {
  return carried.map(([code, ...values]) => {
    const phase = PHASES[code as number];
    if (!phase) throw new Error(`a carried item of unknown phase ${String(code)}`);
    const item: Record<string, unknown> = { phase };
    FIELDS[phase].forEach((field, at) => {
      const value = values[at];
      if (value !== null && value !== undefined) item[field] = value;
    });
    return item as unknown as ItemState;
  });
}
