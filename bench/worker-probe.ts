/**
 * What a bench needs to see inside the worker that runWorker creates: the Worker itself
 * (getStatus(): activity slots in use, cached workflows; its compiled slot settings) and every
 * activity task it runs, per workflow and activity type, with how many run at once.
 *
 * runWorker takes no interceptors and does not hand out its Worker, so this wraps Worker.create in
 * the process that runs the worker and adds one activity interceptor. Every task goes through it:
 * each attempt of an activity (a `waitForJobChange` look that ends in JobUnchanged included) is one
 * `execute`. Install it before runWorker creates its worker. Benchmarks only.
 */
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import { Worker, type WorkerOptions } from '@temporalio/worker';

export interface WorkerProbe {
  /** The worker runWorker created, once it has. */
  worker(): Worker | undefined;
  /** Activity tasks (attempts) started, per workflow id, then per activity type. */
  readonly tasks: Map<string, Map<string, number>>;
  /** Activity tasks started, per activity type, in all. */
  readonly tasksByType: Map<string, number>;
  /** Activity tasks running now (inside the interceptor), and the most since the last resetPeak(). */
  running(): number;
  peak(): number;
  resetPeak(): void;
  /** The worker's activity slots (the tuner's fixed size), when it has a fixed-size supplier. */
  activitySlots(): number | undefined;
  /** The worker's sticky workflow cache size. */
  maxCachedWorkflows(): number | undefined;
}

export function installWorkerProbe(): WorkerProbe {
  let created: Worker | undefined;
  const tasks = new Map<string, Map<string, number>>();
  const tasksByType = new Map<string, number>();
  let running = 0;
  let peak = 0;

  const counting: ActivityInterceptorsFactory = (context) => {
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        const type = context.info.activityType;
        const workflowId = context.info.workflowExecution?.workflowId ?? '(none)';
        const mine = tasks.get(workflowId) ?? new Map<string, number>();
        mine.set(type, (mine.get(type) ?? 0) + 1);
        tasks.set(workflowId, mine);
        tasksByType.set(type, (tasksByType.get(type) ?? 0) + 1);
        running += 1;
        peak = Math.max(peak, running);
        try {
          return await next(input);
        } finally {
          running -= 1;
        }
      },
    };
    return { inbound };
  };

  const create = Worker.create.bind(Worker);
  Worker.create = async (options: WorkerOptions) => {
    const interceptors = options.interceptors ?? {};
    const worker = await create({
      ...options,
      interceptors: { ...interceptors, activity: [...(interceptors.activity ?? []), counting] },
    });
    created = worker;
    return worker;
  };

  return {
    worker: () => created,
    tasks,
    tasksByType,
    running: () => running,
    peak: () => peak,
    resetPeak: () => {
      peak = running;
    },
    activitySlots: () => {
      const supplier = created?.options.tuner.activityTaskSlotSupplier as
        | { type?: string; numSlots?: number }
        | undefined;
      return supplier?.type === 'fixed-size' ? supplier.numSlots : undefined;
    },
    maxCachedWorkflows: () => created?.options.maxCachedWorkflows,
  };
}

/** Tasks of one activity type for one workflow (0 when none ran). */
export function tasksOf(probe: WorkerProbe, workflowId: string, type?: string): number {
  const mine = probe.tasks.get(workflowId);
  if (!mine) return 0;
  if (type !== undefined) return mine.get(type) ?? 0;
  let sum = 0;
  for (const count of mine.values()) sum += count;
  return sum;
}
