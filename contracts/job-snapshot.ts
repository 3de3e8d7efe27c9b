/**
 * What the job workflow tells the outside world: the snapshot its query answers and the result it
 * returns. Schemas, so the client facade can check what it receives; pure, so the workflow bundle
 * can carry them.
 */
import { z } from 'zod';
import { jobStatusValueSchema } from '../api/schemas/job';
import { costEstimateSchema } from './cost';
import { resultRefSchema } from './job-types';
import type { RouteHop } from './route';

/** One move of the job to another endpoint of its route (contracts/route.ts RouteHop). */
export const routeHopSchema = z.object({
  from: z.string(),
  to: z.string(),
  /** The job withdrawn (or failed for capacity) on `from`. */
  jobId: z.string(),
  reason: z.enum(['starved', 'capacity-failure']),
  /** Workflow time, epoch ms. */
  at: z.number(),
}) satisfies z.ZodType<RouteHop>;

export const jobPhaseSchema = z.enum([
  /** Sending /run (or /runsync). */
  'submitting',
  /** A submit was uncertain: waiting for the orphan job's webhook to adopt it. */
  'adopting',
  /** The job is queued or running; webhook and polling both armed. */
  'waiting',
  /** FAILED or TIMED_OUT: waiting out the caller's backoff before /retry. */
  'retry-backoff',
  'retrying',
  'cancelling',
  'completed',
  'failed',
  'cancelled',
]);

export const jobSnapshotSchema = z.object({
  /** The endpoint the job is on now (on a route: where its last move took it). */
  endpointId: z.string(),
  mode: z.enum(['async', 'sync', 'runsync']),
  phase: jobPhaseSchema,
  /** The remote job's last confirmed status. */
  status: jobStatusValueSchema.optional(),
  /** The job the workflow follows now. */
  jobId: z.string().optional(),
  /** Every job id the workflow has owned, oldest first. */
  jobIds: z.array(z.string()),
  /** Submissions sent (each one may have created a job), including uncertain ones. */
  submissions: z.int(),
  /** Submits whose outcome was unknown (a lost answer, a 5xx, a worker that died mid-submit). */
  uncertainSubmits: z.int(),
  /** Uncertain submits resolved by adopting the orphan job its webhook named. */
  uncertainAdopted: z.int().default(0),
  /**
   * Uncertain submits resolved by a new submission once the lease (plus the webhook's retry window)
   * had run out, when no orphan could still be live (see contracts/submit-lease.ts).
   */
  resubmittedAfterLease: z.int().default(0),
  /** Jobs whose lease ran out before it could be extended: deleted by the service, submitted again. */
  leaseLapses: z.int().default(0),
  /** The lease ttl the current job went out under, until it is extended to the request's ttl. */
  leaseTtlMs: z.int().optional(),
  /** Whether the current job was adopted from a webhook after an uncertain submit. */
  adopted: z.boolean(),
  /** Runs of the job: one per submission plus one per /retry. */
  attempts: z.int(),
  retries: z.int(),
  /** Webhook signals received, and job ids they named that this workflow does not follow (orphans). */
  webhooks: z.int(),
  strayJobIds: z.array(z.string()),
  /** On a route: the job's moves to another endpoint so far, oldest first (absent: a single endpoint). */
  hops: z.array(routeHopSchema).optional(),
  /** Workflow time, epoch ms. `ttlDeadline`: when the service deletes the job, at the earliest. */
  timings: z.object({
    startedAt: z.number(),
    submittedAt: z.number().optional(),
    runningAt: z.number().optional(),
    finishedAt: z.number().optional(),
    ttlDeadline: z.number().optional(),
    resultsExpireAt: z.number().optional(),
    /** When the workflow completed, failed or was cancelled. */
    endedAt: z.number().optional(),
  }),
  /** From the service (ms as the emulator reports them; the spec leaves the unit open). */
  delayTime: z.number().optional(),
  executionTime: z.number().optional(),
  /** The finished runs' estimated cost (a retried job's runs added up), when the worker has prices (contracts/cost.ts). */
  cost: costEstimateSchema.optional(),
  /** The last progress update the workflow saw (the wait activity's heartbeat has a fresher one). */
  progress: z.unknown().optional(),
  /** The service's error of the last FAILED run. */
  error: z.string().optional(),
  stream: z.object({ chunks: z.int(), error: z.string().optional() }).optional(),
  /** Set when the remote job was cancelled on the workflow's cancellation. */
  remoteCancel: z
    .object({ sent: z.boolean(), status: z.string().optional(), error: z.string().optional() })
    .optional(),
  /** Why the last ttl extension request was refused. */
  ttlExtensionError: z.string().optional(),
  /** The failure the workflow ended with. */
  failure: z.object({ type: z.string(), message: z.string() }).optional(),
});

export const jobResultSchema = z.object({
  /** The endpoint the job completed on (on a route: where its last move took it). */
  endpointId: z.string(),
  jobId: z.string(),
  status: z.literal('COMPLETED'),
  /** The output, or (when larger than the inline limit) `outputRef` to the result store. */
  output: z.unknown().optional(),
  outputRef: resultRefSchema.optional(),
  delayTime: z.number().optional(),
  executionTime: z.number().optional(),
  /** The runs' estimated cost (a retried job's runs added up), when the worker has prices (contracts/cost.ts). */
  cost: costEstimateSchema.optional(),
  attempts: z.int(),
  retries: z.int(),
  submissions: z.int(),
  uncertainSubmits: z.int(),
  /** As in the snapshot (how uncertain submits were resolved, leases that ran out); only when not 0. */
  uncertainAdopted: z.int().optional(),
  resubmittedAfterLease: z.int().optional(),
  leaseLapses: z.int().optional(),
  jobIds: z.array(z.string()),
  /** On a route: every move to another endpoint, oldest first ([] when it stayed on the first). */
  hops: z.array(routeHopSchema).optional(),
  stream: z.object({ chunks: z.int(), error: z.string().optional() }).optional(),
});

export type JobPhase = z.infer<typeof jobPhaseSchema>;
export type JobSnapshot = z.infer<typeof jobSnapshotSchema>;
export type JobResult = z.infer<typeof jobResultSchema>;
