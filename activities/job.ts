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
 */
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import type { ServiceClient } from '../api/client';
import { ServiceError, ValidationError } from '../api/errors';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import { isTerminalStatus, type JobSubmitted } from '../api/schemas/job';
import { JOB_EXPIRED, JOB_FAILURE, SUBMIT_UNCERTAIN } from '../contracts/failures';
import {
  type FetchJobStatusInput,
  fetchJobStatusInputSchema,
  type JobObservation,
  type JobRefInput,
  jobRefInputSchema,
  type RequestRef,
  type RunJobSyncInput,
  requestRefSchema,
  runJobSyncInputSchema,
  type StreamJobInput,
  type StreamResult,
  type SubmitJobInput,
  type SubmitResult,
  streamJobInputSchema,
  submitJobInputSchema,
  submitRequestSchema,
  type WaitForJobChangeInput,
  type WaitResult,
  waitForJobChangeInputSchema,
} from '../contracts/job-types';
import { type RouteEndpoint, requestFor } from '../contracts/route';
import { leaseApplies } from '../contracts/submit-lease';
import { requestOf } from './batch-items';
import { type BatchStore, defaultBatchStore } from './batch-store';
import type { EstimateCost } from './cost-estimator';
import { parsed, toApplicationFailure } from './failures';
import { createInFlightTracker } from './in-flight';
import type { ObserveOptions } from './job-observe';
import { observe } from './job-observe';
import { retryJobOnService } from './job-retry';
import { drainStream } from './job-stream';
import { lookForChange } from './job-wait';
import { extendLeaseInSubmit, extensionsNotAfter } from './lease-extend';
import { createLocalResultStore, DEFAULT_INLINE_MAX_BYTES, type ResultStore } from './result-store';
import { type AskToSend, grantToSend, windowFull } from './send-grant';
import { createSinkDelivery, StreamSinkError, type StreamSinkFunction } from './stream-sink';
import { beatBeforeSending, whileBeating } from './submit-beat';

export type { SubmitResult } from '../contracts/job-types';

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
}

export interface CancelJobResult {
  /** The status the service answered with; absent when it no longer knew the job (404). */
  status?: string;
  gone: boolean;
}

/** The workflow this activity runs for (activities here are always started by one). */
export function currentWorkflowId(): string {
  const execution = Context.current().info.workflowExecution;
  if (!execution)
    throw ApplicationFailure.create({
      type: 'BadRequest',
      message: 'job activities run for a workflow only',
      nonRetryable: true,
    });
  return execution.workflowId;
}

/** A submit's error as the policy above says: certain ones keep their type, the rest are uncertain. */
function submitFailure(
  error: unknown,
  webhookArmed: boolean,
  metrics: LibraryMetrics,
  leaseTtlMs?: number,
): Error {
  if (error instanceof ServiceError || error instanceof ValidationError) {
    const failure = toApplicationFailure(error, {
      submit: { webhookArmed, ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }) },
    });
    metrics.submission(
      failure instanceof ApplicationFailure && failure.type === SUBMIT_UNCERTAIN ? 'uncertain' : 'refused',
    );
    return failure;
  }
  metrics.submission('uncertain');
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.create({
    type: SUBMIT_UNCERTAIN,
    message: `the submit failed unexpectedly after it may have been sent: ${message}`,
    nonRetryable: true,
    details: [{ webhookArmed, ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }) }],
  });
}

export function createJobActivities(deps: JobActivityDeps) {
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
  const streamDir = deps.streamDir ?? path.join(resultStoreDir, 'streams');
  const batchStore = deps.batchStore ?? defaultBatchStore(resultStoreDir);

  /** The request a requestRef names: its manifest line, checked like a batch's items. */
  async function requestAt(ref: RequestRef): Promise<unknown> {
    let line: string | undefined;
    try {
      [line] = await batchStore.readLines(ref.manifestKey, [ref.index]);
    } catch (error) {
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

  /**
   * The caller's request (given, or read by its ref) with its endpoint's input overrides (a route's)
   * plus this workflow's webhook; checked before anything is sent.
   */
  async function requestWithWebhook(
    given: unknown,
    ref: RequestRef | undefined,
    endpoint?: RouteEndpoint,
  ): Promise<{
    body: z.input<typeof submitRequestSchema>;
    webhookArmed: boolean;
  }> {
    const request = ref ? await requestAt(ref) : given;
    parsed(submitRequestSchema, request, 'request');
    const asGiven = request as z.input<typeof submitRequestSchema>;
    const body = endpoint ? requestFor(asGiven, endpoint) : asGiven;
    const ttlMs = (body as { policy?: { ttl?: number } }).policy?.ttl;
    const webhook = deps.webhookUrlFor?.(currentWorkflowId(), ttlMs === undefined ? {} : { ttlMs });
    return webhook
      ? { body: { ...body, webhook } as typeof body, webhookArmed: true }
      : { body, webhookArmed: false };
  }

  async function jobCall<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = Context.current().cancellationSignal;
    try {
      return await fn(signal);
    } catch (error) {
      throw toApplicationFailure(error, { jobOperation: true, signal });
    }
  }

  return {
    /**
     * Whether this worker arms webhooks (and with them an 'auto' lease): asked by a workflow whose
     * submit never reported, to know whether the request carried the lease.
     */
    async webhooksArmed(): Promise<boolean> {
      return deps.webhookUrlFor !== undefined;
    },

    /**
     * The ttl of a requestRef's request (the workflow's deadline and lease need it before the
     * submit), and nothing else of it: the request stays out of history.
     */
    async requestTtl(input: { requestRef: RequestRef }): Promise<{ ttl?: number }> {
      const ref = parsed(requestRefSchema, input?.requestRef, 'requestRef');
      const ttl = ((await requestAt(ref)) as { policy?: { ttl?: number } }).policy?.ttl;
      return ttl === undefined ? {} : { ttl };
    },

    /** POST /run. Never retried by Temporal: see the submission policy above. */
    async submitJob(input: SubmitJobInput): Promise<SubmitResult> {
      const startedAt = Date.now();
      const { endpointId, request, requestRef, lease, inputOverrides, hop, scheduling } = parsed(
        submitJobInputSchema,
        input,
        'input',
      );
      const armed = await requestWithWebhook(
        request,
        requestRef,
        inputOverrides ? { endpointId, inputOverrides } : undefined,
      );
      const { webhookArmed } = armed;
      // Whether a lease needs a webhook is known only here, where the webhook URL is.
      const leaseTtlMs = leaseApplies(lease, webhookArmed) ? lease.ttlMs : undefined;
      const body =
        leaseTtlMs === undefined
          ? armed.body
          : { ...armed.body, policy: { ...armed.body.policy, ttl: leaseTtlMs } };
      const beat = {
        sending: true as const,
        webhookArmed,
        ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
      };
      // Room in the endpoint's /run window, from its gate, before anything can be out.
      const grant = await grantToSend(client, endpointId, 1, scheduling, deps.askToSend);
      if (grant.count === 0) throw windowFull(endpointId);
      await beatBeforeSending(beat);
      let submitted: JobSubmitted;
      const sentAt = Date.now();
      try {
        // No abort signal: a submit cut off after sending is exactly the duplicate risk; it runs to
        // its own timeouts instead (worker shutdown gives it a grace period). The beat says the
        // worker lives (a lease needs a dead one noticed quickly), also while 429s are waited out.
        const { sendBy } = grant;
        submitted = await whileBeating(beat, () =>
          sendBy === undefined
            ? client.jobs.run(endpointId, body)
            : client.jobs.run(endpointId, body, { sendBy }),
        );
        metrics.submission('accepted');
        if (hop) metrics.routeHop(hop);
        inFlight.started(endpointId, submitted.id);
      } catch (error) {
        throw submitFailure(error, webhookArmed, metrics, leaseTtlMs);
      }
      const extended =
        leaseTtlMs !== undefined &&
        (await whileBeating(beat, () =>
          extendLeaseInSubmit(client, {
            endpointId,
            jobId: submitted.id,
            leaseTtlMs,
            callerTtlMs: armed.body.policy?.ttl,
            sentAt,
            notAfter: extensionsNotAfter(startedAt, Context.current().info.startToCloseTimeoutMs),
          }),
        ));
      return {
        jobId: submitted.id,
        status: submitted.status,
        observedAt: Date.now(),
        webhookArmed,
        ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
        ...(extended ? { extended: true as const } : {}),
      };
    },

    /**
     * POST /runsync. Same policy as submitJob; the answer may be final (COMPLETED with output) or,
     * when the wait ran out first, the job as it is then. Its results are kept for 1 minute only.
     */
    async runJobSync(input: RunJobSyncInput): Promise<SubmitResult> {
      const { endpointId, request, requestRef, wait, inlineMaxBytes } = parsed(
        runJobSyncInputSchema,
        input,
        'input',
      );
      const { body, webhookArmed } = await requestWithWebhook(request, requestRef);
      await beatBeforeSending({ sending: true, webhookArmed });
      let status: Awaited<ReturnType<typeof client.jobs.runSync>>;
      try {
        status = await client.jobs.runSync(endpointId, body, wait === undefined ? {} : { wait });
        metrics.submission('accepted');
        inFlight.started(endpointId, status.id);
      } catch (error) {
        throw submitFailure(error, webhookArmed, metrics);
      }
      return {
        ...(await observe(status.id, status, observeOptions(inlineMaxBytes, endpointId))),
        webhookArmed,
      };
    },

    /**
     * Looks at /status until it differs from `knownStatus` or `returnBy` comes; between looks the
     * server holds the retry timer, not this worker (see job-wait.ts).
     */
    async waitForJobChange(input: WaitForJobChangeInput): Promise<WaitResult> {
      const checked = parsed(waitForJobChangeInputSchema, input, 'input');
      try {
        return await lookForChange(
          pollingClient,
          checked,
          observeOptions(checked.inlineMaxBytes, checked.endpointId),
        );
      } catch (error) {
        // Deleted by its ttl: no longer in flight either.
        if (error instanceof ApplicationFailure && error.type === JOB_EXPIRED)
          inFlight.left(checked.endpointId, checked.jobId);
        throw error;
      }
    },

    /** GET /status once (with `ttl`: sets the job's ttl too). 404 -> JobExpired. */
    async fetchJobStatus(input: FetchJobStatusInput): Promise<JobObservation> {
      const { endpointId, jobId, ttl, inlineMaxBytes } = parsed(fetchJobStatusInputSchema, input, 'input');
      const status = await jobCall((signal) =>
        client.jobs.status(endpointId, jobId, ttl === undefined ? { signal } : { signal, ttl }),
      );
      return observe(jobId, status, observeOptions(inlineMaxBytes, endpointId));
    },

    /** POST /cancel. A job the service no longer knows needs no cancelling: that is success (gone). */
    async cancelJob(input: JobRefInput): Promise<CancelJobResult> {
      const { endpointId, jobId } = parsed(jobRefInputSchema, input, 'input');
      const signal = Context.current().cancellationSignal;
      try {
        const answer = await client.jobs.cancel(endpointId, jobId, { signal });
        if (isTerminalStatus(answer.status)) inFlight.left(endpointId, jobId);
        return { status: answer.status, gone: false };
      } catch (error) {
        if (error instanceof ServiceError && error.kind === 'NotFound') {
          inFlight.left(endpointId, jobId);
          return { gone: true };
        }
        throw toApplicationFailure(error, { jobOperation: true, signal });
      }
    },

    /**
     * POST /retry (same id, original input), harmless to repeat (see job-retry.ts): a job an
     * earlier try re-queued answers with its state now, and a finished one with its output
     * (inlined by the worker's limit: the job's own limit is not in this activity's input).
     */
    async retryJob(input: JobRefInput): Promise<JobObservation> {
      const { endpointId, jobId } = parsed(jobRefInputSchema, input, 'input');
      const signal = Context.current().cancellationSignal;
      try {
        const answer = await retryJobOnService(client.jobs, endpointId, jobId, {
          signal,
          triedBefore: Context.current().info.attempt > 1,
        });
        if (answer.retried === 'now') {
          inFlight.started(endpointId, jobId);
          return { jobId, status: answer.status, observedAt: Date.now() };
        }
        const { now } = answer;
        if (!isTerminalStatus(now.status)) {
          inFlight.started(endpointId, jobId);
          return { jobId, status: now.status, observedAt: Date.now() };
        }
        return observe(jobId, now, observeOptions(undefined, endpointId));
      } catch (error) {
        throw toApplicationFailure(error, { jobOperation: true, signal });
      }
    },

    /** Drains /stream into the chosen sink until the job has finished (see job-stream.ts). */
    async streamJob(input: StreamJobInput): Promise<StreamResult> {
      const checked = parsed(streamJobInputSchema, input, 'input');
      let deliver: StreamSinkFunction;
      try {
        deliver = createSinkDelivery(checked.sink, {
          streamDir,
          ...(deps.streamSinks ? { streamSinks: deps.streamSinks } : {}),
        });
      } catch (error) {
        if (error instanceof StreamSinkError) {
          throw ApplicationFailure.create({
            type: JOB_FAILURE.streamSink,
            message: error.message,
            nonRetryable: true,
          });
        }
        throw error;
      }
      return drainStream(client, checked, deliver);
    },
  };
}

export type JobActivities = ReturnType<typeof createJobActivities>;
