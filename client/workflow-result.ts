/**
 * A workflow's result, waited for through a busy or restarting Temporal server. Waiting on a result
 * holds a long poll on the frontend, and a namespace allows only so many at once (the frontend's
 * `frontend.namespaceCount`): a caller awaiting 10,000 jobs at once meets
 * RESOURCE_EXHAUSTED, and a server restart meets UNAVAILABLE. The SDK's client retries those about
 * ten times (a minute or so) and then throws, which would turn a job that completes into an error
 * for its caller. The result is durable on the server; waiting for it again is always safe, so these
 * two are waited out for as long as the caller waits (its signal, if any, ends the wait).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError } from '@temporalio/client';

/**
 * gRPC's RESOURCE_EXHAUSTED (8) and UNAVAILABLE (14), fixed by the gRPC spec: "the server cannot
 * answer now", never anything about the workflow.
 */
const WAIT_OUT = new Set<number>([8, 14]);

const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 30_000;

export interface ResultWaitOptions {
  /** Ends the wait (the pauses between tries; a try in progress runs to its own end). */
  signal?: AbortSignal;
  /** Told of each try that met a busy or unavailable server, before its pause. */
  onBusy?: (error: Error, pauseMs: number) => void;
  /** The pause before the try after `tries` refusals (default busyPauseMs). */
  pauseMs?: (tries: number) => number;
}

/** True for an error of a busy or unavailable server (the SDK wraps the gRPC error as its cause). */
export function isServerBusy(error: unknown): error is Error {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (isGrpcServiceError(current) && WAIT_OUT.has(current.code)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * The pause before try `tries + 1`: doubling from 1 s to 30 s, jittered (a half to all of it) so
 * thousands of waiters refused together do not come back together.
 */
export function busyPauseMs(tries: number, random: () => number = Math.random): number {
  const ceiling = Math.min(LONGEST_PAUSE_MS, FIRST_PAUSE_MS * 2 ** tries);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export async function waitForResult<T>(
  handle: { result(): Promise<T> },
  options: ResultWaitOptions = {},
): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await handle.result();
    } catch (error) {
      if (!isServerBusy(error) || options.signal?.aborted) throw error;
      const pause = (options.pauseMs ?? busyPauseMs)(tries);
      options.onBusy?.(error, pause);
      await sleep(pause, undefined, options.signal ? { signal: options.signal } : undefined);
    }
  }
}
