/**
 * The batch scenarios that both the integration suite (test/integration/batch-*: a dev server, the
 * TypeScript sources) and the reliability suite (test/reliability/batch-*: the production-shaped
 * server on PostgreSQL, the built package) run, each with its own size, job options and deadlines:
 * the batch of scripted items they start, the worker SIGKILLed at shares of the service's
 * submissions, and the checks on a batch whose every item should have completed from one run.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import {
  type BatchHandle,
  type BatchInput,
  type BatchSummary,
  finishedSummary,
  startBatch,
  writeBatchManifest,
} from '../../client/batches';
import { type BatchTally, batchItemOutput, reportBatch, tallyBatch } from './batch-tally';
import { type ManagedProcess, type Stack, until, untilAnswered } from './process-stack';

/** A scenario's job options (each case gives and explains its own lease, timeouts and limits). */
export type ScenarioJobOptions = NonNullable<BatchInput['job']>;

/** How the batches of these scenarios look at their jobs, unless the case gives its own `polling`. */
const SCENARIO_POLLING = { initialInterval: 500, maxInterval: 2_000, backoffCoefficient: 1.5 };

export interface ScriptedBatchOptions {
  /** The workflow id's prefix (a random suffix follows). */
  name: string;
  items: number;
  /** The endpoint's warm workers, and the batch's concurrency. */
  workers: number;
  /** Item i sleeps `sleepMs + (i % 5) * 250` ms at the service. */
  sleepMs: number;
  job: ScenarioJobOptions;
  /** The items as a manifest written to this store (a directory or a store URL) first, instead of inline. */
  manifestStore?: string;
}

export interface ScriptedBatch {
  endpointId: string;
  handle: BatchHandle;
}

/**
 * A batch of scripted items on a fresh endpoint of its own: item i outputs batchItemOutput(i), so
 * the service's jobs say whose they are (tallyBatch).
 */
export async function startScriptedBatch(
  stack: Stack,
  options: ScriptedBatchOptions,
): Promise<ScriptedBatch> {
  const { items, workers, sleepMs } = options;
  const endpointId = stack.endpoint({ workersMin: workers, workersMax: workers });
  const inline = Array.from({ length: items }, (_, i) => ({
    input: { sleepMs: sleepMs + (i % 5) * 250, output: batchItemOutput(i) },
  }));
  const manifest = options.manifestStore
    ? await writeBatchManifest(inline, {
        store: options.manifestStore,
        key: `inputs/${options.name}-${randomUUID()}.jsonl`,
      })
    : undefined;
  const handle = await startBatch(
    stack.client,
    {
      endpointId,
      items: manifest ? { manifest: { key: manifest.key } } : { inline },
      job: { polling: SCENARIO_POLLING, ...options.job },
      maxConcurrency: workers,
    },
    { workflowId: `${options.name}-${randomUUID()}`, taskQueue: stack.taskQueue },
  );
  return { endpointId, handle };
}

export interface WorkerKillBatchOptions {
  items: number;
  /** The endpoint's warm workers, and the batch's concurrency. */
  workers: number;
  /** The kills, as shares of the items the service has acted on. */
  killAt: number[];
  job: ScenarioJobOptions;
  /** The line reportBatch prints: the case's name, and the suite's prefix (reportBatch's default if none). */
  report: { name: string; prefix?: string };
  /** How long each kill may wait for the service's count (until's default if not given). */
  killWaitMs?: number;
  /** How long the batch may take to finish after the last kill. */
  summaryWaitMs: number;
}

export interface WorkerKill {
  /** The service's count of submissions when the worker was killed. */
  submissions: number;
  runningAtService: number;
}

export interface WorkerKillBatch {
  summary: BatchSummary;
  figures: BatchTally;
  kills: WorkerKill[];
}

/**
 * A batch of scripted items (0.5 to 1.5 s each) while its worker process is SIGKILLed once the
 * service has acted on each share of `killAt` of the items, a new worker process started after
 * each kill; the batch's summary and per-item tally, reported. Asserts that every kill was a
 * SIGKILL and struck mid-batch; the outcome's checks are the case's (expectEveryItemCompletedOnce).
 */
export async function runWorkerKillBatch(
  stack: Stack,
  options: WorkerKillBatchOptions,
): Promise<WorkerKillBatch> {
  const { items } = options;
  const startedAt = Date.now();
  const workers: ManagedProcess[] = [stack.startWorker()];
  await workers[0]?.running;
  const { endpointId, handle } = await startScriptedBatch(stack, {
    name: 'batch-worker-kill',
    items,
    workers: options.workers,
    sleepMs: 500,
    job: options.job,
  });

  const kills: WorkerKill[] = [];
  for (const share of options.killAt) {
    const target = items * share;
    // The service's count: only a live worker submits, so reaching it means the last one runs.
    await until(
      `the service acted on ${target} submissions`,
      () => stack.submissions() >= target,
      options.killWaitMs,
    );
    const worker = workers.at(-1) as ManagedProcess;
    kills.push({ submissions: stack.submissions(), runningAtService: stack.runningAtService() });
    await worker.kill();
    expect(worker.child.signalCode).toBe('SIGKILL');
    workers.push(stack.startWorker());
  }
  const killsDoneAt = Date.now();

  const summary = await untilAnswered(
    () => finishedSummary(stack.client, { batch: handle }),
    Date.now() + options.summaryWaitMs,
  );
  const figures = await tallyBatch(stack, endpointId, summary);
  reportBatch(
    options.report.name,
    figures,
    `${kills.length} SIGKILLs in ${((killsDoneAt - startedAt) / 1000).toFixed(0)} s, at ` +
      `${kills.map((k) => k.submissions).join(', ')} submissions with ` +
      `${kills.map((k) => k.runningAtService).join(', ')} jobs running at the service; ` +
      `${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain submits ` +
      `(${summary.lease.uncertainAdopted} adopted from their webhook, ${summary.lease.resubmittedAfterLease} ` +
      `sent again after the lease), ${summary.lease.leaseLapses} lease lapses; ` +
      `${summary.runs} run(s), ${summary.historyEvents} history events (${(summary.historyEvents / items).toFixed(3)} per item)`,
    startedAt,
    options.report.prefix,
  );

  // Every kill struck mid-batch.
  expect(Math.max(...kills.map((k) => k.submissions))).toBeLessThan(items);
  return { summary, figures, kills };
}

/**
 * The summary of a batch of `items` whose every item completed: none failed, timed out, expired,
 * was cancelled, uncertain or rejected, and every item started. `noLeaseLapses`: and no submit
 * lease lapsed.
 */
export function expectBatchSummaryAllCompleted(
  summary: BatchSummary,
  items: number,
  { noLeaseLapses = false }: { noLeaseLapses?: boolean } = {},
): void {
  expect(summary).toMatchObject({
    total: items,
    counts: {
      completed: items,
      failed: 0,
      timedOut: 0,
      expired: 0,
      cancelled: 0,
      uncertain: 0,
      rejected: 0,
    },
    failures: 0,
    notStarted: 0,
    ...(noLeaseLapses ? { lease: { leaseLapses: 0 } } : {}),
  });
}

/**
 * Every item of a batch of `items` completed with its own output, from the one job of it that ran
 * on the service, one result line each, and the summary says so. `exactlyOneSubmission`: moreover
 * the service made exactly one job per item (one /run acted on per item, deleted jobs counted), and
 * so no submit lease lapsed.
 */
export function expectEveryItemCompletedOnce(
  figures: BatchTally,
  summary: BatchSummary,
  items: number,
  { exactlyOneSubmission = false }: { exactlyOneSubmission?: boolean } = {},
): void {
  // Every job the service made is counted and names its item: the per-item counts see them all.
  expect(figures.serviceJobs).toBe(figures.serviceSubmissions);
  expect(figures.unattributed).toBe(0);
  if (exactlyOneSubmission) {
    // Exactly one submission per item, and so exactly one run.
    expect(figures.submittedTimes, figures.examples).toEqual({ 1: items });
    expect(figures.serviceSubmissions).toBe(items);
  }
  expect(figures.ranTwice, figures.examples).toBe(0);
  expect(figures.neverReached, figures.examples).toBe(0);
  // Every item completed with its own output, from that one job, one result line each.
  expect(figures.completed, figures.examples).toBe(items);
  expect(figures.missing).toBe(0);
  expect(figures.lost, figures.examples).toBe(0);
  expectBatchSummaryAllCompleted(summary, items, { noLeaseLapses: exactlyOneSubmission });
}
