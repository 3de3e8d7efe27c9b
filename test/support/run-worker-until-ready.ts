/**
 * The library's worker (runWorker) in this process, awaited until it is ready: tests and benches
 * both start it so.
 */
import type { WorkerConfig } from '../../worker/config';
import { type RunWorkerOptions, runWorker, type WorkerReadyInfo } from '../../worker/run-worker';

/**
 * Runs a worker (runWorker) and resolves once it is ready, with what it reported; rejects if it
 * stops first. `running` settles when the worker has stopped (abort `options.signal` to stop it).
 */
export async function runWorkerUntilReady(
  config: WorkerConfig,
  options: Omit<RunWorkerOptions, 'onReady'>,
): Promise<{ info: WorkerReadyInfo; running: Promise<void> }> {
  let ready!: (info: WorkerReadyInfo) => void;
  const isReady = new Promise<WorkerReadyInfo>((resolve) => {
    ready = resolve;
  });
  const running = runWorker(config, { ...options, onReady: ready });
  running.catch(() => undefined); // awaited by the caller when it stops the worker
  const info = await Promise.race([
    isReady,
    running.then(() => Promise.reject(new Error('the worker stopped before it was ready'))),
  ]);
  return { info, running };
}
