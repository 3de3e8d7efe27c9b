/**
 * What every batch activity shares (activities/batch.ts puts them together): the dependencies a
 * worker gives them, and the stores, counters and helpers made from those once per worker.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceClient } from '../api/client';
import { batchItemOutcome, type LibraryMetrics, noopMetrics } from '../api/metrics';
import { terminalStatuses } from '../api/schemas/job';
import type { EndpointLimit } from '../contracts/batch-types';
import type { PipelineTransform } from '../contracts/pipeline-types';
import { type BatchStore, defaultBatchStore } from '../stores/batch-store';
import { createLocalResultStore, type ResultStore } from '../stores/result-store';
import type { BatchJobReports } from './batch-job-reports';
import type { EstimateCost } from './cost-estimator';
import { createInFlightTracker } from './in-flight';
import type { AskToSend } from './send-grant';

export interface BatchActivityDeps {
  /**
   * rateLimit: the /run and /status limits a batch holds and shares for all its workers (the
   * stage reads them); without it, each worker's own limiter alone.
   */
  client: Pick<ServiceClient, 'jobs'> & Partial<Pick<ServiceClient, 'rateLimit'>>;
  /**
   * A batch job's webhook URL: it names the item (and a pipeline's job its stage), and its token
   * expires a margin after the job's ttl.
   */
  webhookUrlFor?: (workflowId: string, options?: { item?: number; stage?: string; ttlMs?: number }) => string;
  /** Manifests and results; default: a local store in `<resultStoreDir>/batches`. */
  batchStore?: BatchStore;
  /** Large outputs; default: the local result store in resultStoreDir. */
  resultStore?: ResultStore;
  resultStoreDir?: string;
  inlineMaxBytes?: number;
  errorMaxChars?: number;
  /** Finished runs, batch item outcomes and jobs in flight are counted here; default: nowhere. */
  metrics?: LibraryMetrics;
  /** Estimates a finished run's cost (activities/cost-estimator.ts); absent: no estimates. */
  estimateCost?: EstimateCost;
  /** What the webhook gateway in this process heard of batch jobs; absent: the watchers only poll. */
  batchJobReports?: BatchJobReports;
  /** Asks the endpoint's gate for room in its /run window (default: activities/send-grant.ts askToSend). */
  askToSend?: AskToSend;
  /** The pipeline transforms this worker runs, by name (activities/pipeline.ts). */
  transforms?: readonly PipelineTransform[];
}

/** A job's end: the service changes nothing after these but a /retry's new run. */
export const TERMINAL: ReadonlySet<string> = new Set<string>(terminalStatuses);

/** The activity's own workflow: batch activities run for a batch only. */
export function batchContext() {
  const { info } = Context.current();
  const execution = info.workflowExecution;
  if (!execution)
    throw ApplicationFailure.nonRetryable('batch activities run for a workflow only', 'BadRequest');
  return { info, workflowId: execution.workflowId, runId: execution.runId };
}

/**
 * Which client made a watcher's looks (contracts/look-log.ts): one name per client object, whose
 * limiter every watcher on it shares.
 */
const lookSources = new WeakMap<object, string>();
function lookSourceOf(client: object): string {
  let source = lookSources.get(client);
  if (source === undefined) {
    source = randomUUID();
    lookSources.set(client, source);
  }
  return source;
}

/** One set of stores, counters and helpers per worker, made from its dependencies. */
export function createBatchShared(deps: BatchActivityDeps) {
  const { client } = deps;
  const lookSource = lookSourceOf(client);
  const resultStoreDir = deps.resultStoreDir ?? '.results';
  const store = deps.batchStore ?? defaultBatchStore(resultStoreDir);
  const outputs = deps.resultStore ?? createLocalResultStore(resultStoreDir);
  const errorMaxChars = deps.errorMaxChars ?? 2_000;
  const shorten = (text: string) => (text.length > errorMaxChars ? `${text.slice(0, errorMaxChars)}…` : text);
  const metrics = deps.metrics ?? noopMetrics;
  const inFlight = createInFlightTracker(metrics);
  const countOutcome = (status: string) => {
    const outcome = batchItemOutcome(status);
    if (outcome) metrics.batchItemFinished(outcome);
  };

  /**
   * One finished run's estimate, as the job activities make it; a failed estimate is none. The
   * counter takes it only at the first look at that run (`first`, from the in-flight tracker).
   */
  async function runCost(endpointId: string, executionTime: number | undefined, first: boolean) {
    if (!deps.estimateCost || executionTime === undefined) return undefined;
    const cost = await deps.estimateCost(endpointId, executionTime).catch(() => undefined);
    if (cost && first) metrics.estimatedCost(cost.tier, cost.amount);
    return cost;
  }

  /** A limit of the client's as it crosses into history: no Infinity (JSON has none). */
  function limitInForce(operation: 'run' | 'status'): EndpointLimit {
    const limit = client.rateLimit?.(operation);
    return {
      ...(limit && Number.isFinite(limit.perTenSeconds) ? { perTenSeconds: limit.perTenSeconds } : {}),
      ...(limit?.concurrent === undefined ? {} : { concurrent: limit.concurrent }),
    };
  }

  return {
    deps,
    client,
    lookSource,
    store,
    outputs,
    shorten,
    metrics,
    inFlight,
    countOutcome,
    runCost,
    limitInForce,
  };
}

export type BatchShared = ReturnType<typeof createBatchShared>;
