/**
 * The job activities. Each is one service call or one wait loop over api/, built by a factory so
 * the API client (and with it the key) stays inside the worker.
 *
 * Submission policy. POST /run (and /runsync) is the one call the service cannot de-duplicate.
 * The submit activities therefore run with Temporal retries off (maximumAttempts 1: see
 * workflows/job/job-activities.ts) and report one of three outcomes:
 * - success: the job id;
 * - a failure the service certainly did not act on (a ValidationError, a connection refused, a
 *   429 left after the client's own retry budget, a 4xx): a typed ApplicationFailure, retryable or
 *   not as the error is; the workflow retries the retryable ones with backoff;
 * - a failure after which the job may exist (a timeout or a dropped connection after the request
 *   was sent, a 5xx, an unreadable 2xx, anything unexpected): `SubmitUncertain`, non-retryable.
 * A worker that dies mid-submit never reports anything: the workflow sees the activity time out and
 * treats that as uncertain too, once the submit's heartbeat said a request may be out; before that,
 * nothing was sent and the workflow submits again (submit-beat.ts). What happens after an uncertain submit is the caller's choice
 * (onUncertainSubmit), and the workflow counts them in its snapshot.
 *
 * The webhook URL is computed here from the workflow id (webhookUrlFor), so neither the gateway's
 * secret nor the token ever enters workflow history.
 *
 * Here: the worker's dependencies and what the activities share (job-context.ts), made once; the
 * submits are in job-submit-activities.ts, the activities that follow a job in
 * job-follow-activities.ts.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceClient } from '../api/client';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import { SUBMIT_NOT_SENT } from '../contracts/failures';
import type { RequestRef } from '../contracts/job-types';
import { type BatchStore, BatchStoreError, defaultBatchStore } from '../stores/batch-store';
import { createLocalResultStore, DEFAULT_INLINE_MAX_BYTES, type ResultStore } from '../stores/result-store';
import type { StreamStore } from '../stores/stream-store';
import { requestOf } from './batch-items';
import type { EstimateCost } from './cost-estimator';
import { createInFlightTracker } from './in-flight';
import { currentWorkflowId, type JobActivityContext } from './job-context';
import { followActivities } from './job-follow-activities';
import type { ObserveOptions } from './job-observe';
import { submitActivities } from './job-submit-activities';
import type { AskToSend } from './send-grant';
import type { StreamSinkFunction } from './stream-sink';
import { createTaskLooks, type TaskLooks } from './task-looks';

export type { SubmitResult } from '../contracts/job-types';
export type { CancelJobResult } from './job-follow-activities';

export interface JobActivityDeps {
  /** Asks the endpoint's gate for room in its /run window (default: activities/send-grant.ts askToSend). */
  askToSend?: AskToSend;

  /**
   * `jobs`, and `rateLimit` (the /run limit the endpoint's gate holds; a stub without it sends at
   * once, as a client with no /run rate does).
   */
  client: Pick<ServiceClient, 'jobs'> & Partial<Pick<ServiceClient, 'rateLimit'>>;
  /** The webhook URL for a workflow's job of this ttl (its token expires a margin after it); absent: jobs are polled only. */
  webhookUrlFor?: (workflowId: string, options?: { ttlMs?: number }) => string;
  /** Where large outputs go; default: a local directory store at resultStoreDir. */
  resultStore?: ResultStore;
  /** Default `.results` under the working directory. */
  resultStoreDir?: string;
  /** Where `file` stream sinks write; default `<resultStoreDir>/streams`. */
  streamDir?: string;
  /** Where `file` stream sinks put their chunks instead of streamDir (a bucket). */
  streamStore?: StreamStore;
  /** `function` stream sinks, by name. */
  streamSinks?: Record<string, StreamSinkFunction>;
  /** Outputs above this many JSON bytes go to the result store (a workflow input can lower it). */
  inlineMaxBytes?: number;
  /** Progress updates above this size are replaced by a note of their size. */
  progressMaxBytes?: number;
  /** FAILED jobs' error texts are cut to this length. */
  errorMaxChars?: number;
  /** Submissions, polls and finished runs are counted here (worker/metrics.ts); default: nowhere. */
  metrics?: LibraryMetrics;
  /** Estimates a finished run's cost (activities/cost-estimator.ts); absent: no estimates. */
  estimateCost?: EstimateCost;
  /** Where a requestRef's manifest is (the batch activities' store); default: `<resultStoreDir>/batches`. */
  batchStore?: BatchStore;
  /**
   * The jobs a workflow task of this worker is about to look at itself, shared with the webhook
   * gateway beside it (task-looks.ts); default: the looks of these activities alone.
   */
  taskLooks?: TaskLooks;
}

/** What the activities share, made once per worker: the stores are opened here. */
function jobActivityContext(deps: JobActivityDeps): JobActivityContext {
  const { client, estimateCost } = deps;
  const metrics = deps.metrics ?? noopMetrics;
  const inFlight = createInFlightTracker(metrics);
  // The wait loop's looks at /status are the polls; the other /status calls are one-off reads.
  const pollingClient: Pick<ServiceClient, 'jobs'> = {
    jobs: {
      ...client.jobs,
      status: (...args) => {
        metrics.poll();
        return client.jobs.status(...args);
      },
    },
  };
  const resultStoreDir = deps.resultStoreDir ?? '.results';
  const store = deps.resultStore ?? createLocalResultStore(resultStoreDir);
  const batchStore = deps.batchStore ?? defaultBatchStore(resultStoreDir);

  async function requestAt(ref: RequestRef): Promise<unknown> {
    let line: string | undefined;
    try {
      [line] = await batchStore.readLines(ref.manifestKey, [ref.index]);
    } catch (error) {
      // A store that is down for now: nothing was sent, and the request may be read later.
      if (error instanceof BatchStoreError && error.retryable)
        throw ApplicationFailure.create({
          type: SUBMIT_NOT_SENT,
          message: `nothing was sent: the batch store could not be read (${error.message})`,
          nonRetryable: false,
        });
      throw ApplicationFailure.create({
        type: 'BadRequest',
        message: `invalid activity input: requestRef: ${(error as Error).message}`,
        nonRetryable: true,
        details: [{ field: 'requestRef', rule: 'must name a line of a manifest in the batch store' }],
      });
    }
    return requestOf(line as string, ref.index);
  }

  function observeOptions(inlineMaxBytes: number | undefined, endpointId: string): ObserveOptions {
    return {
      onFinished: async (status) => {
        // The estimate goes back to the workflow at every look; the counters take a run once.
        const first = inFlight.finished(endpointId, status.id);
        if (first) metrics.jobRunFinished(status.status);
        if (!estimateCost || status.executionTime === undefined) return undefined;
        const cost = await estimateCost(endpointId, status.executionTime);
        if (cost && first) metrics.estimatedCost(cost.tier, cost.amount);
        return cost;
      },
      store,
      keyPrefix: currentWorkflowId(),
      inlineMaxBytes: inlineMaxBytes ?? deps.inlineMaxBytes ?? DEFAULT_INLINE_MAX_BYTES,
      progressMaxBytes: deps.progressMaxBytes ?? 8_192,
      errorMaxChars: deps.errorMaxChars ?? 2_000,
    };
  }

  return {
    client,
    pollingClient,
    metrics,
    inFlight,
    webhookUrlFor: deps.webhookUrlFor,
    askToSend: deps.askToSend,
    taskLooks: deps.taskLooks ?? createTaskLooks(),
    requestAt,
    observeOptions,
    streamDir: deps.streamDir ?? path.join(resultStoreDir, 'streams'),
    streamStore: deps.streamStore,
    streamSinks: deps.streamSinks,
  };
}

export function createJobActivities(deps: JobActivityDeps) {
  const context = jobActivityContext(deps);
  return { ...submitActivities(context), ...followActivities(context) };
}

export type JobActivities = ReturnType<typeof createJobActivities>;
