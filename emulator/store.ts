import type { TimerHandle } from './clock';
import { JOB_STATUSES, type JobStatusValue } from './limits';
import type { EndpointFields, ServerlessDiscount } from './schemas';

// All state of the emulator. Plain records; the modules that change them (jobs.ts, scheduler.ts,
// endpoints.ts) keep the per-endpoint counters in step so /health never has to scan.

/** `throttled`: wanted by the endpoint, but the service has no GPU for it (the endpoint is starved). */
export type WorkerStatus = 'initializing' | 'idle' | 'running' | 'throttled';

export interface Worker {
  id: string;
  state: WorkerStatus;
  job?: Job;
  /** Cold start while initializing, idle timeout while idle or throttled. */
  timer?: TimerHandle;
}

export interface StreamChunk {
  output: unknown;
  metrics: Record<string, number | string>;
}

export type RemovalReason = 'ttl' | 'expired' | 'endpoint-deleted' | 'reset';

export interface Job {
  id: string;
  endpointId: string;
  accountId: string;
  sync: boolean;
  input: Record<string, unknown>;
  webhook?: string;
  s3Config?: Record<string, unknown>;
  executionTimeout: number;
  lowPriority: boolean;
  ttl: number;
  retentionMs: number;
  status: JobStatusValue;
  submittedAt: number;
  /** Submission time, or the time of the last retry. */
  queuedAt: number;
  startedAt?: number;
  finishedAt?: number;
  delayTime?: number;
  /** Final output when COMPLETED; otherwise the latest progress update, if any. */
  output?: unknown;
  error?: string;
  /** Runs started (a retry starts another). */
  attempts: number;
  retries: number;
  chunks: StreamChunk[];
  streamIndex: number;
  ttlTimer?: TimerHandle;
  retentionTimer?: TimerHandle;
  runTimers: TimerHandle[];
  worker?: Worker;
  waiters?: Set<() => void>;
  removed?: RemovalReason;
  removedAt?: number;
}

export interface Endpoint {
  fields: EndpointFields;
  accountId: string;
  createdAt: number;
  /** FIFO: a Map keeps insertion order and removes in O(1) (cancel, purge, ttl). */
  queue: Map<string, Job>;
  /** Queued jobs that may trigger scaling (not lowPriority). */
  queuedNormal: number;
  workers: Map<string, Worker>;
  jobs: Map<string, Job>;
  counts: Record<JobStatusValue, number>;
  /** Retained jobs that were retried at least once. */
  retried: number;
  dispatchPending: boolean;
  deleted: boolean;
  /**
   * Set while the service has no workers to give the endpoint: its queue waits, running jobs go on.
   * `until` (service time) ends it by itself; null waits for a restore.
   */
  starved?: { until: number | null; timer?: TimerHandle };
}

export interface NetworkVolume {
  id: string;
  accountId: string;
  createdAt: number;
}

export interface Account {
  id: string;
  apiKeys: Set<string>;
  endpoints: Map<string, Endpoint>;
  volumes: Map<string, NetworkVolume>;
  serverlessDiscount: ServerlessDiscount | null;
}

export interface Store {
  accounts: Map<string, Account>;
  accountByKey: Map<string, Account>;
  endpoints: Map<string, Endpoint>;
  volumes: Map<string, NetworkVolume>;
  jobs: Map<string, Job>;
  /** Snapshots of removed jobs for introspection, oldest first, bounded. */
  tombstones: Map<string, object>;
  /** Accepted /run and /runsync requests per endpoint id; survives the endpoint's deletion. */
  submissions: Map<string, number>;
  /** Requests refused for the rate limits (429), per endpoint id and operation ("<endpoint> <operation>"). */
  throttled: Map<string, number>;
  gpuAvailability: Map<string, boolean>;
}

export function createStore(): Store {
  return {
    accounts: new Map(),
    accountByKey: new Map(),
    endpoints: new Map(),
    volumes: new Map(),
    jobs: new Map(),
    tombstones: new Map(),
    submissions: new Map(),
    throttled: new Map(),
    gpuAvailability: new Map(),
  };
}

export function emptyCounts(): Record<JobStatusValue, number> {
  return Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatusValue, number>;
}

/** Adds a key to an account, creating the account when its id is new. One key, one account. */
export function addAccount(
  store: Store,
  apiKey: string,
  id?: string,
  serverlessDiscount?: ServerlessDiscount | null,
): Account {
  const existing = store.accountByKey.get(apiKey);
  if (existing) {
    if (id !== undefined && existing.id !== id) {
      throw new Error(`api key already belongs to account ${existing.id}`);
    }
    if (serverlessDiscount !== undefined) existing.serverlessDiscount = serverlessDiscount;
    return existing;
  }
  const accountId = id ?? `account-${store.accounts.size + 1}`;
  let account = store.accounts.get(accountId);
  if (!account) {
    account = {
      id: accountId,
      apiKeys: new Set(),
      endpoints: new Map(),
      volumes: new Map(),
      serverlessDiscount: serverlessDiscount ?? null,
    };
    store.accounts.set(accountId, account);
  } else if (serverlessDiscount !== undefined) {
    account.serverlessDiscount = serverlessDiscount;
  }
  account.apiKeys.add(apiKey);
  store.accountByKey.set(apiKey, account);
  return account;
}

export function rememberTombstone(store: Store, id: string, snapshot: object, limit: number): void {
  if (limit <= 0) return;
  store.tombstones.delete(id);
  store.tombstones.set(id, snapshot);
  while (store.tombstones.size > limit) {
    const oldest = store.tombstones.keys().next().value;
    if (oldest === undefined) break;
    store.tombstones.delete(oldest);
  }
}
