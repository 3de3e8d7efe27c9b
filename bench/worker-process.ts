/**
 * The parent's side of bench/worker-child.ts: forks the worker with its environment, waits until it
 * polls, and asks it for figures. Benchmarks only.
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import type { ChildFigures } from './worker-child';

export type { ChildFigures } from './worker-child';

export interface WorkerProcess {
  pid: number;
  /** The worker's figures; `gc` collects garbage first, for a steadier heap and RSS. */
  figures(options?: { gc?: boolean }): Promise<ChildFigures>;
  /** Starts a new sampling window: peaks, means and task counts from now on. */
  reset(): void;
  /** Drains the worker and waits for the process to exit. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, nothing drained. */
  kill(): Promise<void>;
}

export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const child = fork(path.join(__dirname, 'worker-child.ts'), [], {
    // BENCH_WORKER_NODE_ARGS: node flags for the worker only (--heapsnapshot-signal=SIGUSR2, --heap-prof).
    execArgv: [
      '--import',
      'tsx',
      '--expose-gc',
      ...(process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean),
    ],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const pending = new Map<number, (figures: ChildFigures) => void>();
  let nextId = 1;
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (message: { type: string; id?: number; figures?: ChildFigures }) => {
      if (message.type === 'ready') resolve();
      if (message.type === 'status' && message.id !== undefined && message.figures) {
        pending.get(message.id)?.(message.figures);
        pending.delete(message.id);
      }
    });
    exited.then((code) => reject(new Error(`the bench worker exited with ${code} before it was ready`)));
  });
  await ready;
  return {
    pid: child.pid as number,
    figures: (options = {}) =>
      new Promise<ChildFigures>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, resolve);
        child.send({ type: 'status', id, gc: options.gc === true });
        exited.then(() => reject(new Error('the bench worker exited')));
      }),
    reset: () => {
      child.send({ type: 'reset' });
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.send({ type: 'stop' });
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}
