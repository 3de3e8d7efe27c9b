/**
 * submitBatchPage: POST /run for a page of items to one endpoint (with that endpoint's input
 * overrides over a route), under the client's rate limiter and the page's share of the /run window.
 * Never retried by Temporal: per item it answers the job id, a certain failure or "uncertain".
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ServiceError, ValidationError } from '../api/errors';
import { createRateLimiter } from '../api/rate-limit';
import { JOB_LIMITS, type JobRequestInput } from '../api/schemas/job';
import type { PageSend, SubmitItemResult } from '../contracts/batch-types';
import { SUBMIT_NOT_SENT } from '../contracts/failures';
import type { StagePageSource } from '../contracts/pipeline-types';
import { requestFor } from '../contracts/route';
import type { SubmitBeat } from '../contracts/submit-beat';
import {
  leaseApplies,
  leaseRequest,
  looksExtendLease,
  type SubmitLeaseSetting,
} from '../contracts/submit-lease';
import { requestOf } from './batch-items';
import { type BatchShared, batchContext } from './batch-shared';
import { extendLeaseInSubmit, extensionsNotAfter } from './lease-extend';
import { type StageRequestLine, stageRequestLines } from './pipeline-requests';
import { grantToSend } from './send-grant';
import { beatBeforeSending, submitBeats } from './submit-beat';

export function submitPageActivities(shared: BatchShared) {
  const { deps, client, store, metrics, inFlight } = shared;
  return {
    /** POST /run for each item of the page, at once, paced by the client's rate limiter. */
    async submitBatchPage(input: {
      endpointId: string;
      manifestKey: string;
      indexes: number[];
      /** Name a webhook (per item) in each request. */
      webhook?: boolean;
      /** The batch's submitLease setting; absent: no lease (batches started before it). */
      submitLease?: SubmitLeaseSetting;
      /** Fields set in every job's input on this endpoint of the batch's route. */
      inputOverrides?: Record<string, unknown>;
      /**
       * How its requests go out: `concurrent` at a time, each within the room the endpoint's gate
       * grants (workflows/endpoint/endpoint-gate.ts) under the batch's priority and fairness key; one that
       * cannot go within its grant's time is not sent, and comes back unsent.
       */
      send?: PageSend;
      /** A pipeline stage's page: its requests are made from its pieces (activities/pipeline-requests.ts). */
      pipeline?: StagePageSource;
    }): Promise<{ results: SubmitItemResult[]; unsent?: number[]; paused?: true }> {
      const { workflowId } = batchContext();
      // The attempt's start, as near as this code knows it: its deadlines count from here, the
      // wait for the gate's grant included.
      const startedAt = Date.now();
      let lines: StageRequestLine[];
      try {
        lines = input.pipeline
          ? await stageRequestLines(shared, input.pipeline, input.indexes)
          : await store.readLines(input.manifestKey, input.indexes);
      } catch (error) {
        // Nothing was sent: the workflow queues the page's items again (the stage has read every
        // line once, so what fails here is the store, not the manifest).
        throw ApplicationFailure.create({
          type: SUBMIT_NOT_SENT,
          message: `nothing was sent: the batch store could not be read (${(error as Error).message})`,
          nonRetryable: false,
        });
      }
      const send = input.send;
      // The endpoint's gate grants room for some or all of the page now; the rest goes back to the
      // batch's queue, unsent, for a page of its own.
      // A paused endpoint answers at once: the page comes back unsent, and the batch holds its
      // pages until a while later rather than hold this worker slot.
      const grant = await grantToSend(
        { client, askToSend: deps.askToSend, metrics },
        input.endpointId,
        input.indexes.length,
        send?.scheduling,
      );
      if (grant.paused) return { results: [], unsent: input.indexes.slice(), paused: true };
      const granted = new Set(input.indexes.slice(0, grant.count));
      const gate = createRateLimiter(
        send ? { run: { perTenSeconds: Number.POSITIVE_INFINITY, concurrent: send.concurrent } } : false,
      );
      const unsent: number[] = [];
      const webhookUrlFor = input.webhook === false ? undefined : deps.webhookUrlFor;
      const webhook = webhookUrlFor !== undefined;
      // The jobs created so far ride in the heartbeat: if this worker dies, the workflow reads them
      // from the timeout and only the rest of the page counts as uncertain.
      const created: NonNullable<SubmitBeat['created']> = [];
      const ctx = Context.current();
      const notAfter = extensionsNotAfter(startedAt, ctx.info.startToCloseTimeoutMs);
      // Every beat repeats that requests may be out, with the jobs made so far; each request goes
      // out right after a beat the server recorded (submit-beat.ts).
      const beats = submitBeats(() => ({ sending: true, created }), startedAt);
      const beat = beats.beat;
      await beatBeforeSending(beats);
      const results = await Promise.all(
        input.indexes.map(async (i, k): Promise<SubmitItemResult | undefined> => {
          if (!granted.has(i)) {
            unsent.push(i);
            return undefined;
          }
          let request: JobRequestInput;
          const line = lines[k] as StageRequestLine;
          // A map or a stage input that could not be made: the piece fails at its stage.
          if (typeof line !== 'string')
            return { i, rejected: { type: 'BadRequest', message: line.failed, retryable: false } };
          try {
            request = requestFor(requestOf(line, i), {
              endpointId: input.endpointId,
              ...(input.inputOverrides === undefined ? {} : { inputOverrides: input.inputOverrides }),
            });
          } catch (error) {
            return {
              i,
              rejected: { type: 'BadRequest', message: (error as Error).message, retryable: false },
            };
          }
          const ttl = request.policy?.ttl;
          // The item rides in the URL (bound by its token) so that an orphan of an uncertain submit
          // names its item; a pipeline's piece has a job at each stage, so its URL names the stage too.
          const armed = webhookUrlFor
            ? {
                ...request,
                webhook: webhookUrlFor(workflowId, {
                  item: i,
                  ...(input.pipeline === undefined ? {} : { stage: input.pipeline.stage }),
                  ttlMs: ttl ?? JOB_LIMITS.ttlDefaultMs,
                }),
              }
            : request;
          const lease =
            input.submitLease === undefined
              ? undefined
              : leaseRequest(input.submitLease, 'async', ttl ?? JOB_LIMITS.ttlDefaultMs);
          const leaseTtl = leaseApplies(lease, webhook) ? lease.ttlMs : undefined;
          const leased = leaseTtl === undefined ? {} : { lease: leaseTtl };
          const body =
            leaseTtl === undefined ? armed : { ...armed, policy: { ...armed.policy, ttl: leaseTtl } };
          // Past `by` (here or in the client's limiter) the client sends nothing: see the catch.
          const release = await gate.acquire(input.endpointId, 'run');
          const sentAt = Date.now();
          // Set when the server did not record a beat before a try: this one was not sent.
          let attemptMayBeOver = false;
          const readyToSend = () =>
            beats.readyToSend().catch((error: unknown) => {
              attemptMayBeOver = true;
              throw error;
            });
          try {
            const submitted = await client.jobs
              .run(input.endpointId, body, {
                ...(grant.sendBy === undefined ? {} : { sendBy: grant.sendBy }),
                beforeSend: readyToSend,
              })
              .finally(release);
            metrics.submission('accepted');
            inFlight.started(input.endpointId, submitted.id);
            deps.batchJobReports?.created(submitted.id);
            const result: NonNullable<SubmitBeat['created']>[number] = {
              i,
              id: submitted.id,
              ...(ttl === undefined ? {} : { ttl }),
              ...leased,
            };
            created.push(result);
            // The lease extended here, as the job's submit does (activities/job.ts): the answer
            // then says no lease, and the workflow has nothing to extend. A long lease is left to
            // the job's watcher, whose looks carry the ttl (contracts/submit-lease.ts says why).
            // The extension first has the server record the job, which `created` now names.
            const extendHere = leaseTtl !== undefined && !looksExtendLease(leaseTtl);
            if (!extendHere) beat();
            if (
              extendHere &&
              (await extendLeaseInSubmit(
                client,
                {
                  endpointId: input.endpointId,
                  jobId: submitted.id,
                  leaseTtlMs: leaseTtl,
                  callerTtlMs: ttl,
                  sentAt,
                  notAfter,
                },
                beats,
              ))
            ) {
              delete result.lease;
              beat();
            }
            return result;
          } catch (error) {
            // Not sent because this attempt may be over (the beat before it was not recorded): it
            // goes back to the queue, as a request the service never saw.
            if (attemptMayBeOver && error instanceof ServiceError && !error.mayHaveReachedService) {
              unsent.push(i);
              return undefined;
            }
            // Its page's time to send was over: sent later, it could crowd a window the batch gave to
            // others. It goes back to the queue.
            if (
              grant.sendBy !== undefined &&
              error instanceof ServiceError &&
              error.kind === 'Aborted' &&
              !error.mayHaveReachedService &&
              Date.now() > grant.sendBy
            ) {
              unsent.push(i);
              return undefined;
            }
            if (error instanceof ValidationError) {
              metrics.submission('refused');
              return { i, rejected: { type: 'BadRequest', message: error.message, retryable: false } };
            }
            if (error instanceof ServiceError && !error.mayHaveReachedService) {
              metrics.submission('refused');
              return {
                i,
                rejected: {
                  type: error.kind,
                  message: error.message,
                  retryable: error.retryable,
                  ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
                },
              };
            }
            metrics.submission('uncertain');
            const message = error instanceof Error ? error.message : String(error);
            return {
              i,
              uncertain: message,
              armed: webhook,
              ...leased,
              ...(ttl === undefined ? {} : { ttl }),
            };
          }
        }),
      );
      const answered = results.filter((result) => result !== undefined);
      return unsent.length === 0 ? { results: answered } : { results: answered, unsent };
    },
  };
}
