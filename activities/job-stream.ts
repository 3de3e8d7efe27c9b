/**
 * Drains /stream into a sink. /stream hands out each chunk once, so every batch goes to the sink
 * before the next call asks for more, and the count is heartbeated only after the sink has it: a
 * worker that dies in between loses at most the one batch it held (the service cannot give it
 * back). Chunks never return to the workflow; the final output still comes from /status.
 *
 * The stream ends when the job is finished and one last call finds nothing more. With the spec's
 * bare-array answer the job's status is not in the answer, so an empty batch is followed by a
 * look at /status; the hosted service's `{ status, stream }` answer saves that call.
 */
import { Context } from '@temporalio/activity';
import type { ServiceClient } from '../api/client';
import { isTerminalStatus, type JobStatusValue } from '../api/schemas/job';
import {
  type StreamHeartbeat,
  type StreamJobInput,
  type StreamResult,
  streamHeartbeatSchema,
} from '../contracts/job-types';
import { toApplicationFailure } from './failures';
import type { StreamSinkFunction } from './stream-sink';

function resumed(details: unknown, input: StreamJobInput): StreamHeartbeat | undefined {
  const parsed = streamHeartbeatSchema.safeParse(details);
  if (!parsed.success) return undefined;
  return parsed.data.jobId === input.jobId && parsed.data.firstIndex === input.firstIndex
    ? parsed.data
    : undefined;
}

export async function drainStream(
  client: Pick<ServiceClient, 'jobs'>,
  input: StreamJobInput,
  deliver: StreamSinkFunction,
): Promise<StreamResult> {
  const context = Context.current();
  const signal = context.cancellationSignal;
  const workflowId = context.info.workflowExecution?.workflowId ?? '';
  const progress: StreamHeartbeat = resumed(context.info.heartbeatDetails, input) ?? {
    jobId: input.jobId,
    firstIndex: input.firstIndex,
    chunks: 0,
    batches: 0,
  };
  const { initialIntervalMs, maxIntervalMs, backoffCoefficient } = input.polling;
  let intervalMs = initialIntervalMs;
  // Set once the job is seen finished; the stream ends at the next empty answer after that.
  let finished: JobStatusValue | undefined;

  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw toApplicationFailure(error, { jobOperation: true, signal });
    }
  };

  for (;;) {
    const answer = await call(() => client.jobs.stream(input.endpointId, input.jobId, { signal }));
    if (answer.chunks.length > 0) {
      await call(() =>
        deliver({
          workflowId,
          jobId: input.jobId,
          firstIndex: input.firstIndex + progress.chunks,
          chunks: answer.chunks,
        }),
      );
      progress.chunks += answer.chunks.length;
      progress.batches += 1;
      context.heartbeat({ ...progress });
      intervalMs = initialIntervalMs;
      continue;
    }
    if (finished) return { chunks: progress.chunks, batches: progress.batches, finalStatus: finished };

    const status =
      answer.status ??
      (await call(() => client.jobs.status(input.endpointId, input.jobId, { signal }))).status;
    if (isTerminalStatus(status)) {
      // Chunks may have arrived between the empty answer and the status: one more call collects them.
      finished = status;
      continue;
    }
    context.heartbeat({ ...progress });
    await context.sleep(intervalMs);
    intervalMs = Math.min(Math.round(intervalMs * backoffCoefficient), maxIntervalMs);
  }
}
