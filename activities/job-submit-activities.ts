/**
 * The job's submit activities (the policy is job.ts's header): the request, read by its ref when
 * it has one, with its endpoint's input overrides and this workflow's webhook; the lease it goes
 * out under; room in the endpoint's /run window; the send itself, beating so that a worker dying
 * mid-submit is noticed; and, under a lease, its extension to the caller's ttl.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import { ServiceError, ValidationError } from '../api/errors';
import type { LibraryMetrics } from '../api/metrics';
import type { JobSubmitted } from '../api/schemas/job';
import { SUBMIT_UNCERTAIN } from '../contracts/failures';
import {
  type RequestRef,
  type RunJobSyncInput,
  requestRefSchema,
  runJobSyncInputSchema,
  type SubmitJobInput,
  type SubmitResult,
  submitJobInputSchema,
  submitRequestSchema,
} from '../contracts/job-types';
import { type RouteEndpoint, requestFor } from '../contracts/route';
import type { SubmitBeat } from '../contracts/submit-beat';
import { leaseApplies } from '../contracts/submit-lease';
import { parsed, toApplicationFailure } from './failures';
import { currentWorkflowId, type JobActivityContext } from './job-context';
import { observe } from './job-observe';
import { extendLeaseInSubmit, extensionsNotAfter } from './lease-extend';
import { grantToSend, windowFull } from './send-grant';
import { beatBeforeSending, type SubmitBeats, submitBeats } from './submit-beat';

type SubmitBody = z.input<typeof submitRequestSchema>;

/** A submit's error as the policy says: certain ones keep their type, the rest are uncertain. */
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

/**
 * The caller's request (given, or read by its ref) with its endpoint's input overrides (a route's)
 * plus this workflow's webhook; checked before anything is sent.
 */
async function requestWithWebhook(
  context: JobActivityContext,
  given: unknown,
  ref: RequestRef | undefined,
  endpoint?: RouteEndpoint,
): Promise<{ body: SubmitBody; webhookArmed: boolean }> {
  const request = ref ? await context.requestAt(ref) : given;
  parsed(submitRequestSchema, request, 'request');
  const asGiven = request as SubmitBody;
  const body = endpoint ? requestFor(asGiven, endpoint) : asGiven;
  const ttlMs = (body as { policy?: { ttl?: number } }).policy?.ttl;
  const webhook = context.webhookUrlFor?.(currentWorkflowId(), ttlMs === undefined ? {} : { ttlMs });
  return webhook
    ? { body: { ...body, webhook } as typeof body, webhookArmed: true }
    : { body, webhookArmed: false };
}

/** The body that goes out (under a lease: the lease's ttl) and the beat that says it may be out. */
function leasedRequest(
  armed: { body: SubmitBody; webhookArmed: boolean },
  lease: SubmitJobInput['lease'],
): { body: SubmitBody; beat: SubmitBeat; leaseTtlMs?: number } {
  const { webhookArmed } = armed;
  // Whether a lease needs a webhook is known only here, where the webhook URL is.
  const leaseTtlMs = lease && leaseApplies(lease, webhookArmed) ? lease.ttlMs : undefined;
  const body =
    leaseTtlMs === undefined
      ? armed.body
      : { ...armed.body, policy: { ...armed.body.policy, ttl: leaseTtlMs } };
  const beat: SubmitBeat = {
    sending: true,
    webhookArmed,
    ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
  };
  return { body, beat, ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }) };
}

export function submitActivities(context: JobActivityContext) {
  const { client, metrics, inFlight } = context;

  /**
   * POST /run once room in the endpoint's window is granted. No abort signal: a submit cut off
   * after sending is exactly the duplicate risk; it runs to its own timeouts instead (worker
   * shutdown gives it a grace period). Each try goes out only right after the server recorded a
   * beat that says it may be out (submit-beat.ts); beats also say the worker lives while 429s are
   * waited out.
   */
  async function sendRun(
    input: Pick<SubmitJobInput, 'endpointId' | 'hop' | 'scheduling'>,
    body: SubmitBody,
    beats: SubmitBeats,
    beat: SubmitBeat,
  ): Promise<{ submitted: JobSubmitted; sentAt: number }> {
    const { endpointId } = input;
    // Room in the endpoint's /run window, from its gate, before anything can be out.
    const grant = await grantToSend(
      { client, askToSend: context.askToSend, metrics: context.metrics },
      endpointId,
      1,
      input.scheduling,
    );
    if (grant.count === 0) throw windowFull(endpointId, grant.paused === true);
    await beatBeforeSending(beats);
    const sentAt = Date.now();
    try {
      // One request, sent now under the grant; a 429 is waited out by the client as ever (a job's
      // single request later than its grant's slack overlaps the next window by one at most),
      // rather than given up for another ask.
      const submitted = await beats.during(() =>
        client.jobs.run(endpointId, body, { beforeSend: () => beats.readyToSend() }),
      );
      metrics.submission('accepted');
      if (input.hop) metrics.routeHop(input.hop);
      inFlight.started(endpointId, submitted.id);
      return { submitted, sentAt };
    } catch (error) {
      throw submitFailure(error, beat.webhookArmed === true, metrics, beat.leaseTtlMs);
    }
  }

  return {
    /**
     * Whether this worker arms webhooks (and with them an 'auto' lease): asked by a workflow whose
     * submit never reported, to know whether the request carried the lease.
     */
    async webhooksArmed(): Promise<boolean> {
      return context.webhookUrlFor !== undefined;
    },

    /**
     * The ttl of a requestRef's request (the workflow's deadline and lease need it before the
     * submit), and nothing else of it: the request stays out of history.
     */
    async requestTtl(input: { requestRef: RequestRef }): Promise<{ ttl?: number }> {
      const ref = parsed(requestRefSchema, input?.requestRef, 'requestRef');
      const ttl = ((await context.requestAt(ref)) as { policy?: { ttl?: number } }).policy?.ttl;
      return ttl === undefined ? {} : { ttl };
    },

    /** POST /run. Never retried by Temporal: see the submission policy (job.ts). */
    async submitJob(input: SubmitJobInput): Promise<SubmitResult> {
      const startedAt = Date.now();
      const checked = parsed(submitJobInputSchema, input, 'input');
      const { endpointId, inputOverrides } = checked;
      const armed = await requestWithWebhook(
        context,
        checked.request,
        checked.requestRef,
        inputOverrides ? { endpointId, inputOverrides } : undefined,
      );
      const { body, beat, leaseTtlMs } = leasedRequest(armed, checked.lease);
      let details: SubmitBeat = beat;
      const beats = submitBeats(() => details, startedAt);
      const { submitted, sentAt } = await sendRun(checked, body, beats, beat);
      // Its beats name the job from now on: the extension has the server record it first.
      details = { ...beat, jobId: submitted.id };
      const extended =
        leaseTtlMs !== undefined &&
        (await beats.during(() =>
          extendLeaseInSubmit(
            client,
            {
              endpointId,
              jobId: submitted.id,
              leaseTtlMs,
              callerTtlMs: armed.body.policy?.ttl,
              sentAt,
              notAfter: extensionsNotAfter(startedAt, Context.current().info.startToCloseTimeoutMs),
            },
            beats,
          ),
        ));
      return {
        jobId: submitted.id,
        status: submitted.status,
        observedAt: Date.now(),
        webhookArmed: armed.webhookArmed,
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
      const { body, webhookArmed } = await requestWithWebhook(context, request, requestRef);
      const beats = submitBeats(() => ({ sending: true, webhookArmed }));
      await beatBeforeSending(beats);
      let status: Awaited<ReturnType<typeof client.jobs.runSync>>;
      try {
        status = await client.jobs.runSync(endpointId, body, {
          ...(wait === undefined ? {} : { wait }),
          beforeSend: () => beats.readyToSend(),
        });
        metrics.submission('accepted');
        inFlight.started(endpointId, status.id);
      } catch (error) {
        throw submitFailure(error, webhookArmed, metrics);
      }
      return {
        ...(await observe(status.id, status, context.observeOptions(inlineMaxBytes, endpointId))),
        webhookArmed,
      };
    },
  };
}
