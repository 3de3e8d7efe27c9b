import type { Engine } from './engine';
import { planFor } from './handlers';
import { newRunJobId, newSyncJobId } from './ids';
import { isTerminal, type JobStatusValue, LIMITS } from './limits';
import type { JobRequest } from './schemas';
import type { Endpoint, Job, RemovalReason, StreamChunk, Worker } from './store';
import { rememberTombstone } from './store';
import { makeChunks } from './stream';

// A job's life, following the spec's state table. Every status change goes through setStatus so the
// endpoint's counters (what /health reports) always equal the jobs' states.

export interface StatusBody {
  id: string;
  status: JobStatusValue;
  delayTime: number;
  executionTime: number;
  output?: unknown;
  error?: string;
}

export interface JobState {
  id: string;
  endpointId: string;
  accountId: string;
  status: JobStatusValue;
  sync: boolean;
  input?: Record<string, unknown>;
  output?: unknown;
  error?: string;
  webhook?: string;
  policy: { executionTimeout: number; lowPriority: boolean; ttl: number };
  submittedAt: number;
  queuedAt: number;
  startedAt?: number;
  finishedAt?: number;
  delayTime?: number;
  executionTime?: number;
  /** Runs started: 0 while first queued, 2 after a retry started. */
  attempts: number;
  retries: number;
  /** Service time at which the ttl deletes the job. */
  ttlDeadline: number;
  /** Service time at which a finished job's results expire. */
  resultsExpireAt?: number;
  pendingChunks: number;
  /** Deleted because its ttl elapsed (or with its endpoint, or by reset). */
  deleted: boolean;
  /** Its results expired after the retention period. */
  expired: boolean;
  removedReason?: RemovalReason;
  removedAt?: number;
}

const round = (ms: number) => Math.max(0, Math.round(ms));

function endpointOf(engine: Engine, job: Job): Endpoint | undefined {
  return engine.store.endpoints.get(job.endpointId);
}

function setStatus(endpoint: Endpoint, job: Job, next: JobStatusValue) {
  endpoint.counts[job.status]--;
  endpoint.counts[next]++;
  job.status = next;
}

function notify(job: Job) {
  if (!job.waiters) return;
  for (const waiter of [...job.waiters]) waiter();
}

function clearRun(engine: Engine, job: Job) {
  for (const timer of job.runTimers) engine.clock.cancel(timer);
  job.runTimers = [];
}

/** Results retention: 30 min for /run; 1 min for /runsync, up to 5 min when a longer wait was asked. */
function retentionFor(sync: boolean, wait: number | undefined): number {
  if (!sync) return LIMITS.runRetentionMs;
  if (wait === undefined) return LIMITS.runSyncRetentionMs;
  return Math.min(LIMITS.runSyncRetentionMaxMs, Math.max(LIMITS.runSyncRetentionMs, wait));
}

export function submitJob(
  engine: Engine,
  endpoint: Endpoint,
  request: JobRequest,
  options: { sync: boolean; wait?: number },
): Job {
  const now = engine.clock.now();
  const policy = request.policy ?? {};
  const job: Job = {
    id: options.sync ? newSyncJobId() : newRunJobId(),
    endpointId: endpoint.fields.id,
    accountId: endpoint.accountId,
    sync: options.sync,
    input: request.input,
    webhook: request.webhook,
    s3Config: request.s3Config,
    executionTimeout: policy.executionTimeout ?? endpoint.fields.executionTimeoutMs,
    lowPriority: policy.lowPriority ?? false,
    ttl: policy.ttl ?? LIMITS.ttlDefaultMs,
    retentionMs: retentionFor(options.sync, options.wait),
    status: 'IN_QUEUE',
    submittedAt: now,
    queuedAt: now,
    attempts: 0,
    retries: 0,
    chunks: [],
    streamIndex: 0,
    runTimers: [],
  };
  engine.store.jobs.set(job.id, job);
  endpoint.jobs.set(job.id, job);
  endpoint.counts.IN_QUEUE++;
  const { submissions } = engine.store;
  submissions.set(endpoint.fields.id, (submissions.get(endpoint.fields.id) ?? 0) + 1);
  job.ttlTimer = engine.clock.at(job.submittedAt + job.ttl, () => removeJob(engine, job, 'ttl'));
  engine.scheduler.enqueue(endpoint, job);
  return job;
}

/** A worker took the job: IN_QUEUE -> IN_PROGRESS, then the handler's plan runs on the clock. */
export function startJob(engine: Engine, endpoint: Endpoint, job: Job, worker: Worker): void {
  const { clock } = engine;
  const now = clock.now();
  job.worker = worker;
  job.attempts++;
  job.startedAt = now;
  job.delayTime = round(now - job.queuedAt);
  setStatus(endpoint, job, 'IN_PROGRESS');

  const plan = planFor(endpoint.fields.templateId, job.input, {
    attempt: job.attempts,
    gpuIds: endpoint.fields.gpuIds,
  });
  for (const step of plan.steps) {
    job.runTimers.push(
      clock.after(step.at, () => {
        if (step.kind === 'progress') job.output = step.value;
        else pushChunks(job, step.value);
        notify(job);
      }),
    );
  }
  const { end } = plan;
  if (end.kind === 'complete') {
    job.runTimers.push(
      clock.after(end.at, () => finishJob(engine, job, 'COMPLETED', { output: end.output })),
    );
  } else if (end.kind === 'fail') {
    job.runTimers.push(clock.after(end.at, () => finishJob(engine, job, 'FAILED', { error: end.error })));
  }
  job.runTimers.push(
    clock.after(job.executionTimeout, () =>
      finishJob(engine, job, 'TIMED_OUT', {
        error: `job exceeded its executionTimeout of ${job.executionTimeout} ms`,
      }),
    ),
  );
  notify(job);
}

function pushChunks(job: Job, output: unknown) {
  const chunks = makeChunks(output, job.streamIndex, LIMITS.streamChunkMaxBytes);
  job.streamIndex += chunks.length;
  job.chunks.push(...chunks);
}

/** Any way into a terminal state: completion, failure, timeout, cancel, purge. */
export function finishJob(
  engine: Engine,
  job: Job,
  status: Exclude<JobStatusValue, 'IN_QUEUE' | 'IN_PROGRESS'>,
  result: { output?: unknown; error?: string } = {},
): void {
  const endpoint = endpointOf(engine, job);
  if (!endpoint || job.removed || isTerminal(job.status)) return;
  const now = engine.clock.now();
  clearRun(engine, job);
  if (job.status === 'IN_QUEUE') {
    engine.scheduler.remove(endpoint, job);
    job.delayTime = round(now - job.queuedAt);
  }
  job.finishedAt = now;
  // COMPLETED carries the final output; any other end keeps the last progress update, if there was one.
  if (status === 'COMPLETED') job.output = result.output;
  if (result.error !== undefined) job.error = result.error;
  setStatus(endpoint, job, status);
  const worker = job.worker;
  job.worker = undefined;
  job.retentionTimer = engine.clock.after(job.retentionMs, () => removeJob(engine, job, 'expired'));
  notify(job);
  if (job.webhook) engine.webhooks.deliver(job.id, job.webhook, statusBody(engine, job));
  if (worker) engine.scheduler.release(endpoint, worker);
}

/** IN_QUEUE or IN_PROGRESS -> CANCELLED; a finished job is left as it is. */
export function cancelJob(engine: Engine, job: Job): void {
  if (job.status === 'IN_QUEUE' || job.status === 'IN_PROGRESS') finishJob(engine, job, 'CANCELLED');
}

/** FAILED or TIMED_OUT -> IN_QUEUE: same id and input, output gone, ttl still counted from submission. */
export function retryJob(engine: Engine, job: Job): boolean {
  const endpoint = endpointOf(engine, job);
  if (!endpoint || job.removed || (job.status !== 'FAILED' && job.status !== 'TIMED_OUT')) return false;
  engine.clock.cancel(job.retentionTimer);
  job.retentionTimer = undefined;
  delete job.output;
  delete job.error;
  job.startedAt = undefined;
  job.finishedAt = undefined;
  job.delayTime = undefined;
  job.chunks = [];
  job.streamIndex = 0;
  job.queuedAt = engine.clock.now();
  job.retries++;
  if (job.retries === 1) endpoint.retried++;
  setStatus(endpoint, job, 'IN_QUEUE');
  engine.scheduler.enqueue(endpoint, job);
  notify(job);
  return true;
}

/** Cancels every queued job; running ones go on. */
export function purgeQueue(engine: Engine, endpoint: Endpoint): number {
  const queued = [...endpoint.queue.values()];
  for (const job of queued) finishJob(engine, job, 'CANCELLED');
  return queued.length;
}

/** The ttl query parameter: a new time to live, still counted from submission. False if it already ran out. */
export function setTtl(engine: Engine, job: Job, ttl: number): boolean {
  job.ttl = ttl;
  engine.clock.cancel(job.ttlTimer);
  const deadline = job.submittedAt + ttl;
  if (deadline <= engine.clock.now()) {
    removeJob(engine, job, 'ttl');
    return false;
  }
  job.ttlTimer = engine.clock.at(deadline, () => removeJob(engine, job, 'ttl'));
  return true;
}

/** The job is gone: /status answers 404 from now on. Keeps a small snapshot for introspection. */
export function removeJob(engine: Engine, job: Job, reason: RemovalReason): void {
  if (job.removed) return;
  const { clock, store } = engine;
  const endpoint = endpointOf(engine, job);
  clearRun(engine, job);
  clock.cancel(job.ttlTimer);
  clock.cancel(job.retentionTimer);
  job.ttlTimer = undefined;
  job.retentionTimer = undefined;
  const worker = job.worker;
  job.worker = undefined;
  if (endpoint) {
    if (job.status === 'IN_QUEUE') engine.scheduler.remove(endpoint, job);
    endpoint.counts[job.status]--;
    if (job.retries > 0) endpoint.retried--;
    endpoint.jobs.delete(job.id);
  }
  store.jobs.delete(job.id);
  job.removed = reason;
  job.removedAt = clock.now();
  const { input: _input, output: _output, ...snapshot } = jobState(engine, job);
  rememberTombstone(store, job.id, snapshot, engine.options.tombstoneLimit);
  job.chunks = [];
  notify(job);
  if (worker && endpoint && reason !== 'endpoint-deleted') engine.scheduler.release(endpoint, worker);
}

export function statusBody(engine: Engine, job: Job): StatusBody {
  const now = engine.clock.now();
  const end = job.finishedAt ?? now;
  const body: StatusBody = {
    delayTime: job.delayTime ?? round(end - job.queuedAt),
    executionTime: job.startedAt === undefined ? 0 : round(end - job.startedAt),
    id: job.id,
    status: job.status,
  };
  if (job.output !== undefined) body.output = job.output;
  if (job.error !== undefined) body.error = job.error;
  return body;
}

/** Each /stream call takes the chunks produced since the previous one. */
export function drainChunks(job: Job): StreamChunk[] {
  const chunks = job.chunks;
  job.chunks = [];
  return chunks;
}

/**
 * Resolves when `done()` holds after a change to the job, when the job is removed, after
 * `serviceMs` of service time, or when the signal aborts (client gone, emulator closing).
 */
export function waitForJob(
  engine: Engine,
  job: Job,
  done: () => boolean,
  serviceMs: number,
  signal?: AbortSignal,
): Promise<void> {
  if (done() || job.removed || engine.shutdown.signal.aborted || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = () => {
      engine.clock.cancel(timer);
      job.waiters?.delete(check);
      if (job.waiters?.size === 0) job.waiters = undefined;
      engine.shutdown.signal.removeEventListener('abort', finish);
      signal?.removeEventListener('abort', finish);
      resolve();
    };
    const check = () => {
      if (done() || job.removed) finish();
    };
    const timer = engine.clock.after(serviceMs, finish);
    if (!job.waiters) job.waiters = new Set();
    job.waiters.add(check);
    engine.shutdown.signal.addEventListener('abort', finish);
    signal?.addEventListener('abort', finish);
  });
}

export function jobState(engine: Engine, job: Job): JobState {
  return {
    id: job.id,
    endpointId: job.endpointId,
    accountId: job.accountId,
    status: job.status,
    sync: job.sync,
    input: job.input,
    output: job.output,
    error: job.error,
    webhook: job.webhook,
    policy: { executionTimeout: job.executionTimeout, lowPriority: job.lowPriority, ttl: job.ttl },
    submittedAt: job.submittedAt,
    queuedAt: job.queuedAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    delayTime: job.delayTime,
    executionTime:
      job.startedAt === undefined ? undefined : round((job.finishedAt ?? engine.clock.now()) - job.startedAt),
    attempts: job.attempts,
    retries: job.retries,
    ttlDeadline: job.submittedAt + job.ttl,
    resultsExpireAt: job.finishedAt === undefined ? undefined : job.finishedAt + job.retentionMs,
    pendingChunks: job.chunks.length,
    deleted: job.removed !== undefined && job.removed !== 'expired',
    expired: job.removed === 'expired',
    removedReason: job.removed,
    removedAt: job.removedAt,
  };
}
