/**
 * Waiting for a workflow's result through a busy or restarting server: RESOURCE_EXHAUSTED (the
 * namespace's long polls used up, as 10,000 awaitJob calls at once meet) and UNAVAILABLE are waited
 * out; anything else, a workflow's own failure included, is thrown at once.
 */
import { describe, expect, it } from 'vitest';
import { busyPauseMs, isServerBusy, waitForResult } from '../../client/workflow-result';

/** An error shaped as the SDK's client throws it: its ServiceError around the gRPC error. */
function grpcError(code: number, details: string): Error {
  const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new Error('Failed to get Workflow execution history', { cause: grpc });
}

const exhausted = () => grpcError(8, 'namespace concurrent poller limit exceeded');
const unavailable = () => grpcError(14, 'connection refused');

function scriptedHandle<T>(script: Array<Error | { value: T }>) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    async result(): Promise<T> {
      const next = script[calls++];
      if (next === undefined) throw new Error('asked once too often');
      if (next instanceof Error) throw next;
      return next.value;
    },
  };
}

describe('waitForResult', () => {
  it('waits out RESOURCE_EXHAUSTED and UNAVAILABLE, however many, and returns the result', async () => {
    const script = [
      ...Array.from({ length: 15 }, exhausted),
      unavailable(),
      exhausted(),
      { value: { jobId: 'j-1' } },
    ];
    const handle = scriptedHandle(script);
    const told: number[] = [];
    const result = await waitForResult(handle, {
      pauseMs: () => 1,
      onBusy: (_error, pause) => told.push(pause),
    });
    expect(result).toEqual({ jobId: 'j-1' });
    expect(handle.calls).toBe(18);
    expect(told).toHaveLength(17);
  });

  it("throws anything else at once: the workflow's failure, NOT_FOUND, a bug", async () => {
    const failed = new Error('Workflow execution failed');
    const handle = scriptedHandle<never>([failed]);
    await expect(waitForResult(handle, { pauseMs: () => 1 })).rejects.toBe(failed);
    expect(handle.calls).toBe(1);
    const notFound = grpcError(5, 'workflow not found');
    await expect(waitForResult(scriptedHandle<never>([notFound]), { pauseMs: () => 1 })).rejects.toBe(
      notFound,
    );
  });

  it('stops waiting when its signal is aborted, with the last refusal or the abort', async () => {
    const controller = new AbortController();
    const handle = scriptedHandle<never>(Array.from({ length: 5 }, exhausted));
    const waiting = waitForResult(handle, {
      signal: controller.signal,
      pauseMs: () => 60_000,
      onBusy: () => controller.abort(),
    });
    await expect(waiting).rejects.toThrow();
    expect(handle.calls).toBe(1);
  });
});

describe('isServerBusy and busyPauseMs', () => {
  it('finds the gRPC code in the chain of causes', () => {
    expect(isServerBusy(exhausted())).toBe(true);
    expect(isServerBusy(unavailable())).toBe(true);
    expect(isServerBusy(grpcError(4, 'deadline'))).toBe(false);
    expect(isServerBusy(new Error('plain'))).toBe(false);
    expect(isServerBusy('not an error')).toBe(false);
  });

  it('doubles from 1 s to 30 s, each pause between half and all of its ceiling', () => {
    const ceilings = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000];
    ceilings.forEach((ceiling, tries) => {
      expect(busyPauseMs(tries, () => 0)).toBe(ceiling / 2);
      expect(busyPauseMs(tries, () => 1)).toBe(ceiling);
    });
  });
});
