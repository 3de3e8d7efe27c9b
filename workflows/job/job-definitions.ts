/**
 * Signal and query definitions shared by the job workflow, the webhook gateway and the client
 * facade. Only definitions and types live here, so importing this file never pulls workflow code
 * (or the workflow sandbox's restrictions) into the gateway or the client.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { JobStatusValue } from '../../api/schemas/job';
import type { JobSnapshot } from '../../contracts/job-snapshot';
import { type JobStreamBatch, SIGNAL_NAMES } from '../../contracts/signal-names';

/**
 * The gateway's hint that a job changed; the workflow confirms with /status. `item`: the batch item
 * the webhook URL named (batches only; a hint like the rest, never trusted without /status).
 */
export const jobWebhookSignal =
  defineSignal<[{ jobId: string; status: JobStatusValue | string; item?: number }]>('serverlessJobWebhook');

/** Where the job stands: status, attempts, job ids, timings, last progress, uncertain submits. */
export const jobSnapshotQuery = defineQuery<JobSnapshot>('serverlessJobSnapshot');

/**
 * Asks the workflow to set the job's ttl (ms, counted from submission, 10 s to 7 days) through
 * /status?ttl=. The workflow's deadline moves with it once the service has accepted it; a refusal
 * shows in the snapshot's ttlExtensionError.
 */
export const extendJobTtlSignal = defineSignal<[{ ttl: number }]>('serverlessJobExtendTtl');

/** What a `signal` stream sink sends to the workflow that asked for the chunks (usually the parent). */
export const jobStreamChunksSignal = defineSignal<[JobStreamBatch]>(SIGNAL_NAMES.jobStreamChunks);
