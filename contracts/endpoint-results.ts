/**
 * What the endpoint lifecycle workflows (provision, update, teardown, ephemeral) tell the outside
 * world: the phase their query answers and the results they return. Types only.
 */
import type { Endpoint } from '../api/schemas/endpoint';
import type { BatchSummary } from './batch-summary';

export type LifecyclePhase =
  | 'starting'
  | 'provisioning'
  | 'updating'
  | 'running-jobs'
  | 'resolving'
  | 'scaling-to-zero'
  | 'purging-queue'
  | 'cancelling-jobs'
  | 'waiting-for-jobs'
  | 'draining-workers'
  | 'deleting-endpoint'
  | 'deleting-network-volume'
  | 'done'
  | 'failed'
  | 'cancelled';

export interface LifecycleStatus {
  phase: LifecyclePhase;
  /** Every phase entered so far, in order, with workflow time in ms. */
  phases: Array<{ phase: LifecyclePhase; at: number }>;
  endpointId?: string;
  name?: string;
  /** Set once the workflow failed or was cancelled. */
  error?: string;
}

export interface ProvisionResult {
  endpointId: string;
  name: string;
  /** False when an endpoint of that name already existed and was adopted. */
  created: boolean;
  /** Fields sent after creation or adoption so the endpoint has what the caller asked for. */
  reconciled: string[];
  endpoint: Endpoint;
}

export interface TeardownResult {
  /** The endpoints removed (several only when an ephemeral workflow cleans up a name it owns). */
  endpointIds: string[];
  /** True when there was nothing to delete. */
  alreadyGone: boolean;
  /** Queued jobs removed by /purge-queue. */
  purged: number;
  /** Jobs /cancel was sent for, with the status the service reported (absent: it no longer knew the job). */
  cancelled: Array<{ jobId: string; status?: string }>;
  /** False when in-progress jobs outlasted the 'wait' timeout. */
  jobsFinished: boolean;
  /** False when workers were still running at drainTimeout (deletion stopped them). */
  drained: boolean;
  /** Network volumes deleted (asked for with deleteNetworkVolume). */
  networkVolumesDeleted: string[];
}

export interface EphemeralResult<T = unknown> {
  endpointId: string;
  name: string;
  /**
   * Each child job workflow's result, in the order of the input. Empty when the jobs ran as a
   * batch: each item's output is then a line of the batch's results file (`batch.results`).
   */
  results: T[];
  /** The batch's summary, when the items ran as one batch workflow (counts, results references). */
  batch?: BatchSummary;
  teardown: TeardownResult;
}

/** What an EphemeralBatchFailed failure carries: everything a result would, and the batch's failure. */
export interface EphemeralBatchFailure {
  endpointId: string;
  name: string;
  batch: BatchSummary;
  /** The batch workflow's own failure (type: BatchToleranceExceeded or BatchBudgetExceeded). */
  batchFailure: { type: string; message: string };
  teardown: TeardownResult;
}
