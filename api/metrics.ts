/**
 * What the library reports about its own work, as a small interface handed to the API client, the
 * job activities and the webhook gateway. The worker passes a Prometheus implementation
 * (worker/metrics.ts); everything else gets the no-op default, so no module keeps a global.
 *
 * Every argument that becomes a label is drawn from a fixed set (operation names of this client,
 * job statuses of the spec, configured GPU tiers): never an id, a URL or anything a secret could
 * hide in.
 */

/** How one HTTP attempt ended: the status class, `429` on its own, or `error` when no answer came. */
export type CallOutcome = '2xx' | '4xx' | '429' | '5xx' | 'error';

/** accepted: the service took it; refused: it certainly did not; uncertain: it may have. */
export type SubmitOutcome = 'accepted' | 'refused' | 'uncertain';

export type WebhookVerdict =
  | { accepted: true; reason: 'signalled' | 'workflow-closed' | 'not-needed' | 'deferred' }
  | { accepted: false; reason: 'no-token' | 'bad-token' | 'malformed' | 'temporal-unavailable' };

/** How a batch item ended: one per BatchCounts field, in the label's snake case. */
export const BATCH_ITEM_OUTCOMES = [
  'completed',
  'failed',
  'timed_out',
  'expired',
  'cancelled',
  'uncertain',
  'rejected',
] as const;
export type BatchItemOutcome = (typeof BATCH_ITEM_OUTCOMES)[number];

/** A batch result line's status as an outcome label (statuses outside the set are none). */
export function batchItemOutcome(status: string): BatchItemOutcome | undefined {
  const outcome = status.toLowerCase() as BatchItemOutcome;
  return BATCH_ITEM_OUTCOMES.includes(outcome) ? outcome : undefined;
}

export interface LibraryMetrics {
  /** One HTTP attempt to the service (a 429 retried by the client is two attempts). */
  httpCall(operation: string, outcome: CallOutcome, seconds: number): void;
  /** A 429 the client waited out before trying again, and how long it waited. */
  rateLimitDelay(operation: string, delayMs: number): void;
  /** One look at /status by the wait activity. */
  poll(): void;
  /** One webhook call reaching the gateway, and what the gateway made of it. */
  webhook(verdict: WebhookVerdict): void;
  submission(outcome: SubmitOutcome): void;
  /** A remote job run seen in a final status (COMPLETED, FAILED, CANCELLED, TIMED_OUT). */
  jobRunFinished(status: string): void;
  /** The estimated cost of one finished run, in the price table's currency. */
  estimatedCost(tier: string, amount: number): void;
  /** A batch item's final outcome, as written to its results line. */
  batchItemFinished(outcome: BatchItemOutcome): void;
  /**
   * A remote job this process submitted (or retried) is in flight (+1), or was seen finished (-1).
   * The endpoint id is NOT a label: an implementation may map it to an alias the operator named.
   */
  jobsInFlight(endpointId: string, delta: 1 | -1): void;
  /**
   * A queued job of a starved endpoint looked at to be withdrawn: `withdrawn` (cancelled, never
   * started), `stopped` (the cancel came as it started), `started` (left where it runs).
   */
  routeWithdrawal(outcome: RouteWithdrawalOutcome): void;
  /** A job submitted to another endpoint of its route, and why it moved. */
  routeHop(reason: RouteHopReason): void;
  /**
   * Requests a submit asked its endpoint's gate room for: `granted` (sent now), `refused` (no room
   * in time: planned again) or `ungated` (the gate did not answer: sent under the process's own
   * limiter), by fairness key. The endpoint id is NOT a label (as above).
   */
  sendGrant(endpointId: string, fairnessKey: string, outcome: GrantOutcome, requests: number): void;
  /** Requests of this process waiting at an endpoint's gate (+ when asked, - when answered), by fairness key. */
  sendWaiting(endpointId: string, fairnessKey: string, delta: number): void;
}

export type GrantOutcome = 'granted' | 'refused' | 'ungated';

export type RouteWithdrawalOutcome = 'withdrawn' | 'stopped' | 'started';
export type RouteHopReason = 'starved' | 'capacity-failure';

const nothing = () => {};

export const noopMetrics: LibraryMetrics = {
  httpCall: nothing,
  rateLimitDelay: nothing,
  poll: nothing,
  webhook: nothing,
  submission: nothing,
  jobRunFinished: nothing,
  estimatedCost: nothing,
  batchItemFinished: nothing,
  jobsInFlight: nothing,
  routeWithdrawal: nothing,
  routeHop: nothing,
  sendGrant: nothing,
  sendWaiting: nothing,
};

export function callOutcome(status: number | undefined): CallOutcome {
  if (status === undefined) return 'error';
  if (status === 429) return '429';
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  return '2xx';
}
