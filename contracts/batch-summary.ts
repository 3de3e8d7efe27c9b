/**
 * What a batch tells the outside world: its summary (the workflow's result, and the summary query
 * of a cancelled one), its progress (the progress query), and the lines of its results file, which
 * readBatchResults reads. The same in both modes (activities and children).
 *
 * Types only: nothing of it reaches the workflow bundle.
 */

/** The submit lease's counts (contracts/submit-lease.ts), in the summary and the progress. */
export interface BatchLeaseCounts {
  /** Uncertain submits resolved by adopting the orphan that reported itself by webhook. */
  uncertainAdopted: number;
  /** Uncertain submits under a lease resolved by a new submission once the lease was over. */
  resubmittedAfterLease: number;
  /** Jobs whose lease ran out before it could be extended (a 404), submitted again. */
  leaseLapses: number;
}

export interface BatchCounts {
  completed: number;
  failed: number;
  timedOut: number;
  expired: number;
  cancelled: number;
  uncertain: number;
  rejected: number;
}

/** A batch's estimated cost: the job's estimate (contracts/cost.ts) summed over its runs. */
export interface BatchCost {
  amount: number;
  /** The price table's currency; absent until a run has an estimate. */
  currency?: string;
  /** Runs with an estimate (a retried item counts once per run). */
  items: number;
}

/** What a batch did on one endpoint of its route. */
export interface BatchEndpointSplit {
  /** Items that completed there. */
  completed: number;
  /** Items that ended there any other way. */
  failed: number;
  /** Jobs moved from there to another endpoint (withdrawn from its queue, capacity failures). */
  moved: number;
  /** The estimated cost of the runs there, when prices are known. */
  cost?: number;
  /** While it is drained (starved, failing for capacity, gone): when it is tried again. */
  drainedUntil?: number;
}

/** Where a batch's results live: `<key>/results/*.jsonl` and `<key>/failures/*.jsonl` in the batch store. */
export interface BatchResultsRef {
  kind: 'serverless-batch-results';
  store: string;
  key: string;
}

export interface BatchSummary {
  batchId: string;
  endpointId: string;
  total: number;
  counts: BatchCounts;
  /** Items that ended any other way than COMPLETED. */
  failures: number;
  /** Items never submitted (the batch stopped: tolerance exceeded or cancelled). */
  notStarted: number;
  /** POST /run calls that may have created a job, uncertain ones included. */
  submissions: number;
  uncertainSubmits: number;
  /** How the uncertain submits and the lease ended (contracts/submit-lease.ts). */
  lease: BatchLeaseCounts;
  retries: number;
  webhooks: number;
  /** Moves of items to another endpoint of the route (mode 'activities'). */
  hops?: number;
  /** Per endpoint (by id, in route order): what ran and ended there (mode 'activities'). */
  endpoints?: Record<string, BatchEndpointSplit>;
  toleranceExceeded: boolean;
  /** The running estimate reached `budget`: no more submissions (absent when no budget was set). */
  budgetExceeded?: boolean;
  budget?: number;
  /** Why the batch stopped submitting before its last item, when it did. */
  stoppedBecause?: 'failure-tolerance' | 'budget' | 'cancelled';
  cost: BatchCost;
  cancelled: boolean;
  results: BatchResultsRef;
  /** The same store key; readBatchResults(..., { only: 'failures' }) reads only these. */
  failuresRef: BatchResultsRef & { only: 'failures' };
  /** The item list the batch ran (the manifest, or the staged inline items). */
  manifestKey: string;
  startedAt: number;
  elapsedMs: number;
  runs: number;
  /** History events of all the batch's runs together. */
  historyEvents: number;
}

export interface BatchProgress {
  batchId: string;
  total: number;
  /** Items handed to the service so far (next index to submit). */
  cursor: number;
  counts: BatchCounts;
  done: number;
  inFlight: number;
  paused: boolean;
  maxConcurrency: number;
  /** Items done per second since the start, and the time left at that rate. */
  ratePerSecond: number;
  etaMs?: number;
  submissions: number;
  uncertainSubmits: number;
  lease: BatchLeaseCounts;
  retries: number;
  /** Moves of items to another endpoint of the route (mode 'activities'). */
  hops?: number;
  /** Per endpoint (by id, in route order): what ran and ended there so far (mode 'activities'). */
  endpoints?: Record<string, BatchEndpointSplit>;
  runs: number;
  historyEvents: number;
  startedAt: number;
  toleranceExceeded: boolean;
  budgetExceeded?: boolean;
  budget?: number;
  cost: BatchCost;
}

/** One line of a batch's results (JSONL): what happened to one item. */
export interface BatchResultLine {
  index: number;
  jobId?: string;
  /** The endpoint its (last) job ran on. */
  endpointId?: string;
  /** Its moves between the route's endpoints, when it moved. */
  hops?: number;
  /** COMPLETED, FAILED, TIMED_OUT, CANCELLED, EXPIRED, UNCERTAIN or REJECTED. */
  status: string;
  output?: unknown;
  outputRef?: unknown;
  error?: string;
  attempts: number;
  submissions: number;
  delayTime?: number;
  executionTime?: number;
  /** The estimated cost of the item's runs (all of them, for a retried job), when prices are set. */
  cost?: number;
  submittedAt?: number;
  finishedAt?: number;
}
