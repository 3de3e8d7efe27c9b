/**
 * The places streamed chunks can go. /stream drains what it returns, so a batch must be in its
 * sink before the stream activity asks for more (and before it heartbeats the new count): a
 * worker that dies in between loses only the batch it was holding.
 *
 * Chunks never go into the job workflow's history; a `signal` sink puts them into the history of
 * the workflow that asked for them, in batches small enough for a signal's payload.
 */
import { Context } from '@temporalio/activity';
import type { StreamChunk } from '../api/schemas/job';
import type { StreamSink } from '../contracts/job-types';
import { type JobStreamBatch, SIGNAL_NAMES } from '../contracts/signal-names';
import { createLocalStreamStore, type StreamStore } from '../stores/stream-store';

export type { JobStreamBatch } from '../contracts/signal-names';

/** A sink function the worker registers by name; it must finish with the batch before it resolves. */
export type StreamSinkFunction = (batch: JobStreamBatch) => Promise<void>;

export interface StreamSinkDeps {
  /** Where `file` sinks write, when no streamStore is given. */
  streamDir: string;
  /** Where `file` sinks put their chunks (a bucket); default: files in streamDir. */
  streamStore?: StreamStore;
  /** The `function` sinks, by name. */
  streamSinks?: Record<string, StreamSinkFunction>;
}

/** Signals stay well under Temporal's payload limit; a single larger chunk still goes alone. */
export const SIGNAL_BATCH_MAX_BYTES = 256_000;

export class StreamSinkError extends Error {
  override readonly name = 'StreamSinkError';
}

function splitForSignals(batch: JobStreamBatch): JobStreamBatch[] {
  const parts: JobStreamBatch[] = [];
  let chunks: StreamChunk[] = [];
  let bytes = 0;
  let firstIndex = batch.firstIndex;
  for (const chunk of batch.chunks) {
    const size = Buffer.byteLength(JSON.stringify(chunk));
    if (chunks.length > 0 && bytes + size > SIGNAL_BATCH_MAX_BYTES) {
      parts.push({ ...batch, firstIndex, chunks });
      firstIndex += chunks.length;
      chunks = [];
      bytes = 0;
    }
    chunks.push(chunk);
    bytes += size;
  }
  if (chunks.length > 0) parts.push({ ...batch, firstIndex, chunks });
  return parts;
}

/** The delivery function for one sink; unknown function names are refused before any chunk is read. */
export function createSinkDelivery(sink: StreamSink, deps: StreamSinkDeps): StreamSinkFunction {
  switch (sink.kind) {
    case 'file': {
      const store = deps.streamStore ?? createLocalStreamStore(deps.streamDir);
      return async (batch) => {
        const lines = batch.chunks.map((chunk, offset) =>
          JSON.stringify({ index: batch.firstIndex + offset, jobId: batch.jobId, ...chunk }),
        );
        await store.write(sink.name, batch.firstIndex, lines);
      };
    }
    case 'signal': {
      const { workflowId, runId } = sink;
      if (!workflowId) throw new StreamSinkError('a signal sink needs the workflow id to signal');
      return async (batch) => {
        const handle = Context.current().client.workflow.getHandle(workflowId, runId);
        for (const part of splitForSignals(batch))
          await handle.signal<[JobStreamBatch]>(SIGNAL_NAMES.jobStreamChunks, part);
      };
    }
    case 'function': {
      const fn = deps.streamSinks?.[sink.name];
      if (!fn) {
        const known = Object.keys(deps.streamSinks ?? {});
        throw new StreamSinkError(
          `no stream sink function named ${sink.name} is registered on this worker (known: ${known.join(', ') || 'none'})`,
        );
      }
      return fn;
    }
  }
}
