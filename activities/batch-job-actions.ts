/**
 * What the batch asks of its jobs, a list at a time: extendBatchLeases (/status?ttl=),
 * retryBatchJobs (/retry) and cancelBatchJobs (/cancel).
 */
import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { ServiceError } from '../api/errors';
import { type BatchShared, TERMINAL } from './batch-shared';
import { retryJobOnService } from './job-retry';
import { extendJobTtl } from './lease-extend';

export function jobActionActivities(shared: BatchShared) {
  const { deps, client, shorten, inFlight } = shared;
  return {
    /**
     * /status?ttl= for each job submitted under a lease: its ttl becomes the caller's (the service
     * counts it from submission). Each is tried, at the client's /status pace, until `until` (when
     * its lease would end): extended, gone (a 404: the lease ran out) or neither (every try failed;
     * the watcher's next looks tell which).
     */
    async extendBatchLeases(input: {
      endpointId: string;
      items: Array<[index: number, jobId: string, ttl: number, until: number]>;
    }): Promise<{ results: Array<{ i: number; extended?: true; gone?: true }> }> {
      const ctx = Context.current();
      const signal = ctx.cancellationSignal;
      setMaxListeners(2 * input.items.length + 10, signal);
      let done = 0;
      // A try can wait out 429s for longer than the heartbeat timeout: the beat says "alive", not
      // "progress", so a dead worker is still noticed within it.
      const beat = setInterval(() => ctx.heartbeat(done), 1_000);
      const results = await Promise.all(
        input.items.map(async ([i, jobId, ttl, until]) => {
          const extension = await extendJobTtl(
            client,
            { endpointId: input.endpointId, jobId, ttl, until, signal },
            undefined,
            (ms) => ctx.sleep(ms).catch(() => undefined),
          );
          ctx.heartbeat(++done);
          if (extension === 'extended') return { i, extended: true as const };
          return extension === 'gone' ? { i, gone: true as const } : { i };
        }),
      ).finally(() => clearInterval(beat));
      if (signal.aborted) throw new CancelledFailure('activity cancelled');
      return { results };
    },

    /**
     * POST /retry for each job (same id, original input), harmless to repeat (see job-retry.ts). A
     * job whose /retry went unanswered in a way a later try may fix (a 5xx, a timeout, a dropped
     * connection: the service may have acted or not) is `unanswered`, and is tried again.
     */
    async retryBatchJobs(input: { endpointId: string; items: Array<[number, string]> }): Promise<{
      results: Array<{ i: number; status?: string; gone?: boolean; unanswered?: boolean; error?: string }>;
    }> {
      const results = await Promise.all(
        input.items.map(async ([i, jobId]) => {
          try {
            // Whether an earlier call tried this job is not known here: a refusal with the job
            // FAILED again ends the item as failed, which it is either way.
            const answer = await retryJobOnService(client.jobs, input.endpointId, jobId, {
              triedBefore: false,
            });
            const status = answer.retried === 'now' ? answer.status : answer.now.status;
            if (!TERMINAL.has(status)) inFlight.started(input.endpointId, jobId);
            // Its next end sends a webhook of its own; the earlier one must not make it look ended.
            deps.batchJobReports?.forget(jobId);
            return { i, status };
          } catch (error) {
            if (error instanceof ServiceError && error.kind === 'NotFound') return { i, gone: true };
            if (error instanceof ServiceError && error.retryable) return { i, unanswered: true };
            return { i, error: shorten(error instanceof Error ? error.message : String(error)) };
          }
        }),
      );
      return { results };
    },

    /** POST /cancel for each job, within the /cancel limits (the client's limiter paces them). */
    async cancelBatchJobs(input: {
      endpointId: string;
      items: Array<[number, string]>;
    }): Promise<{ results: Array<{ i: number; status?: string; gone?: boolean; error?: string }> }> {
      let done = 0;
      const results = await Promise.all(
        input.items.map(async ([i, jobId]) => {
          try {
            const answer = await client.jobs.cancel(input.endpointId, jobId);
            if (TERMINAL.has(answer.status)) inFlight.left(input.endpointId, jobId);
            return { i, status: answer.status };
          } catch (error) {
            if (error instanceof ServiceError && error.kind === 'NotFound') {
              inFlight.left(input.endpointId, jobId);
              return { i, gone: true };
            }
            return { i, error: shorten(error instanceof Error ? error.message : String(error)) };
          } finally {
            Context.current().heartbeat(++done);
          }
        }),
      );
      return { results };
    },
  };
}
