/**
 * A real worker (runWorker, configured from the environment exactly as `npm run worker` is) in a
 * process of its own, forked by a bench with an IPC channel (bench/worker-process.ts), so that its
 * memory and CPU are its own and not the emulator's or the load generator's. The worker probe
 * (bench/worker-probe.ts) is installed first; the parent asks for figures over IPC:
 *
 *   { type: 'status', id, gc? }  -> { type: 'status', id, figures: ChildFigures }
 *   { type: 'reset' }            -> starts a new sampling window (peaks, means, task counts)
 *   { type: 'stop' }             -> drains the worker and exits 0
 *
 * The child sends { type: 'ready' } once the worker polls its task queue. Benchmarks only.
 */
import { Runtime } from '@temporalio/worker';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { installWorkerProbe } from './worker-probe';

/** What the child reports; counts and samples are since the last reset. */
export interface ChildFigures {
  /** Activity slots the worker has (the SDK's default is 100) and its workflow cache size. */
  activitySlots?: number;
  maxCachedWorkflows?: number;
  /** getStatus().numInFlightActivities, sampled every SAMPLE_MS: now, most and mean over the window. */
  inFlightNow: number;
  inFlightMax: number;
  inFlightMean: number;
  samples: number;
  /** Activity tasks running inside the interceptor: the most at once over the window. */
  runningPeak: number;
  cachedWorkflows: number;
  /** Activity tasks started over the window, per type, and the window's length. */
  tasksByType: Record<string, number>;
  windowMs: number;
  rssBytes: number;
  /** The most RSS the process ever had (getrusage's maxrss), not only over the window. */
  maxRssBytes: number;
  heapUsedBytes: number;
}

const SAMPLE_MS = 100;

type Message = { type: 'status'; id: number; gc?: boolean } | { type: 'reset' } | { type: 'stop' };

function main(): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('bench/worker-child.ts runs as a forked child with an IPC channel');
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
    shutdownSignals: [],
  });
  const probe = installWorkerProbe();
  const config = loadWorkerConfig(process.env);
  const stop = new AbortController();

  let windowStart = Date.now();
  let baseline = new Map<string, number>();
  let inFlightMax = 0;
  let inFlightSum = 0;
  let samples = 0;
  const inFlight = () => probe.worker()?.getStatus().numInFlightActivities ?? 0;
  const sampler = setInterval(() => {
    const now = inFlight();
    inFlightMax = Math.max(inFlightMax, now);
    inFlightSum += now;
    samples += 1;
  }, SAMPLE_MS);
  sampler.unref();

  const reset = () => {
    windowStart = Date.now();
    baseline = new Map(probe.tasksByType);
    inFlightMax = inFlight();
    inFlightSum = 0;
    samples = 0;
    probe.resetPeak();
  };

  process.on('message', (message: Message) => {
    if (message.type === 'stop') stop.abort();
    else if (message.type === 'reset') reset();
    else if (message.type === 'status') {
      if (message.gc) (globalThis as { gc?: () => void }).gc?.();
      const tasksByType: Record<string, number> = {};
      for (const [type, count] of probe.tasksByType) tasksByType[type] = count - (baseline.get(type) ?? 0);
      const memory = process.memoryUsage();
      const status = probe.worker()?.getStatus();
      const slots = probe.activitySlots();
      const cache = probe.maxCachedWorkflows();
      const figures: ChildFigures = {
        ...(slots !== undefined ? { activitySlots: slots } : {}),
        ...(cache !== undefined ? { maxCachedWorkflows: cache } : {}),
        inFlightNow: status?.numInFlightActivities ?? 0,
        inFlightMax,
        inFlightMean: samples > 0 ? inFlightSum / samples : 0,
        samples,
        runningPeak: probe.peak(),
        cachedWorkflows: status?.numCachedWorkflows ?? 0,
        tasksByType,
        windowMs: Date.now() - windowStart,
        rssBytes: memory.rss,
        maxRssBytes: process.resourceUsage().maxRSS * 1024,
        heapUsedBytes: memory.heapUsed,
      };
      send({ type: 'status', id: message.id, figures });
    }
  });

  runWorker(config, {
    signal: stop.signal,
    logger: createLogger({ level: 'error', secrets: [config.service.apiKey] }),
    onReady: () => send({ type: 'ready' }),
    // The gateway binds port 0 and the worker hands out the URL it got: no port picked ahead.
    publicUrlFromGateway: process.env.WEBHOOK_PORT === '0',
  }).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error('[bench worker] failed:', error);
      process.exit(1);
    },
  );
}

main();
