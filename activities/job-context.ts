/**
 * What the job activities share, made once per worker by createJobActivities (job.ts): the
 * service client, the counters, the stores behind `requestAt` and `observeOptions`, and the
 * webhook URL and the gate of the endpoint's /run window.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceClient } from '../api/client';
import type { LibraryMetrics } from '../api/metrics';
import type { RequestRef } from '../contracts/job-types';
import type { StreamStore } from '../stores/stream-store';
import type { InFlightTracker } from './in-flight';
import type { ObserveOptions } from './job-observe';
import type { AskToSend } from './send-grant';
import type { StreamSinkFunction } from './stream-sink';
import type { TaskLooks } from './task-looks';

export interface JobActivityContext {
  client: Pick<ServiceClient, 'jobs'> & Partial<Pick<ServiceClient, 'rateLimit'>>;
  /** The same client, counting each /status as a poll (the wait loop's looks). */
  pollingClient: Pick<ServiceClient, 'jobs'>;
  metrics: LibraryMetrics;
  inFlight: InFlightTracker;
  webhookUrlFor?: ((workflowId: string, options?: { ttlMs?: number }) => string) | undefined;
  askToSend?: AskToSend | undefined;
  /** The jobs a workflow task of this worker is looking at itself (task-looks.ts). */
  taskLooks: TaskLooks;
  /** The request a requestRef names: its manifest line, checked like a batch's items. */
  requestAt(ref: RequestRef): Promise<unknown>;
  /** How a look reports a job (its output inline or stored, its progress, its cost). */
  observeOptions(inlineMaxBytes: number | undefined, endpointId: string): ObserveOptions;
  streamDir: string;
  /** Where `file` stream sinks put their chunks instead of streamDir (a bucket). */
  streamStore?: StreamStore | undefined;
  streamSinks?: Record<string, StreamSinkFunction> | undefined;
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
