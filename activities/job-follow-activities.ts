/**
 * The job activities that follow a job once it has an id: the slot-free wait for a change, one
 * /status (which may set the ttl), /cancel, /retry and the stream's drain. Each is one service
 * call or one wait loop; a service error becomes the job's typed failure (404: JobExpired).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ServiceError } from '../api/errors';
import { isTerminalStatus } from '../api/schemas/job';
import { JOB_EXPIRED, JOB_FAILURE } from '../contracts/failures';
import {
  type FetchJobStatusInput,
  fetchJobStatusInputSchema,
  type JobObservation,
  type JobRefInput,
  jobRefInputSchema,
  type StreamJobInput,
  type StreamResult,
  streamJobInputSchema,
  type WaitForJobChangeInput,
  type WaitResult,
  waitForJobChangeInputSchema,
} from '../contracts/job-types';
import { parsed, toApplicationFailure } from './failures';
import type { JobActivityContext } from './job-context';
import { observe } from './job-observe';
import { retryJobOnService } from './job-retry';
import { drainStream } from './job-stream';
import { lookForChange } from './job-wait';
import { createSinkDelivery, StreamSinkError, type StreamSinkFunction } from './stream-sink';

export interface CancelJobResult {
  /** The status the service answered with; absent when it no longer knew the job (404). */
  status?: string;
  gone: boolean;
}

async function jobCall<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = Context.current().cancellationSignal;
  try {
    return await fn(signal);
  } catch (error) {
    throw toApplicationFailure(error, { jobOperation: true, signal });
  }
}

export function followActivities(context: JobActivityContext) {
  const { client, inFlight, observeOptions } = context;
  return {
    /**
     * Looks at /status until it differs from `knownStatus` or `returnBy` comes; between looks the
     * server holds the retry timer, not this worker (see job-wait.ts).
     */
    async waitForJobChange(input: WaitForJobChangeInput): Promise<WaitResult> {
      const checked = parsed(waitForJobChangeInputSchema, input, 'input');
      try {
        return await lookForChange(
          context.pollingClient,
          checked,
          observeOptions(checked.inlineMaxBytes, checked.endpointId),
          context.taskLooks,
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
      // As a local activity the look holds its workflow task open: every step of the workflow waits
      // on it, and an answer of the poller that comes meanwhile makes the server refuse the task
      // (run again in full). So it goes ahead of the endpoint's plain looks.
      const urgent = Context.current().info.isLocal;
      // Its job's poller leaves the job to this look meanwhile (task-looks.ts).
      if (urgent) context.taskLooks.began(jobId);
      const status = await jobCall((signal) =>
        client.jobs.status(endpointId, jobId, {
          signal,
          ...(ttl === undefined ? {} : { ttl }),
          ...(urgent ? { urgent } : {}),
        }),
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
          streamDir: context.streamDir,
          ...(context.streamStore ? { streamStore: context.streamStore } : {}),
          ...(context.streamSinks ? { streamSinks: context.streamSinks } : {}),
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
