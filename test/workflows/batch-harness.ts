/**
 * Plumbing of the batch workflow tests: a time-skipping server, the batch workflow's bundle, and a
 * fake service behind mocked batch activities. Each item's fate is scripted by `plan(index,
 * attempt)`; jobs that are `held` stay IN_PROGRESS until the test releases them.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll } from 'vitest';
import { type BatchActivities, createBatchActivities } from '../../activities/batch';
import type { BatchInput } from '../../contracts/batch-input';
import type { BatchResultLine } from '../../contracts/batch-summary';
import type { ItemChange, SubmitItemResult, WatchedItem } from '../../contracts/batch-types';
import type { BatchStore } from '../../stores/batch-store';
import type { serverlessBatch } from '../../workflows/batch/batch';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows } from '../support/workflow-harness';

export { failureOf, quietRuntime, withWorker } from '../support/workflow-harness';
/** Waits for what the test's fake service or a query shows (no deadline but the test's). */
export { until } from './wait-for';
export { timeSkippingEnv };

export function bundleBatchWorkflow(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(require.resolve('../../workflows/batch/batch.ts'));
}

/**
 * A describe block's time-skipping server and workflow bundle (the batch workflow, or the module
 * at `workflowsPath`), and `start` for a serverlessBatch run with an id of its own.
 */
export function batchSuite(idPrefix: string, workflowsPath?: string) {
  const suite = {
    env: undefined as unknown as TestWorkflowEnvironment,
    bundle: undefined as unknown as WorkflowBundleWithSourceMap,
    start: (taskQueue: string, args: BatchInput) =>
      suite.env.client.workflow.start<typeof serverlessBatch>('serverlessBatch', {
        taskQueue,
        workflowId: `${idPrefix}-${++started}`,
        args: [args],
      }),
  };
  let started = 0;
  beforeAll(async () => {
    suite.env = await timeSkippingEnv();
    suite.bundle = await (workflowsPath ? bundleWorkflows(workflowsPath) : bundleBatchWorkflow());
  });
  afterAll(async () => {
    await suite.env?.teardown();
  });
  return suite;
}

/** What happens to an item's job on one attempt; `submit` overrides the submit's answer. */
export type Fate =
  | 'COMPLETED'
  | 'FAILED'
  | 'TIMED_OUT'
  | 'held'
  /** orphan: the answer is lost but the job was created (held until released). */
  | { submit: 'uncertain' | 'rejected' | 'orphan' }
  /**
   * The request has this ttl (ms; the submit answers it): the job runs until the ttl has passed on
   * the server's clock (the activities' scheduled times, which the time-skipping server moves),
   * then the service deletes it and every look answers 404.
   */
  | { expires: number };

/** The submit lease in the fake: submits answer with it; the extension's answer per job. */
export interface FakeLease {
  ms: number;
  extend?: (index: number, jobId: string) => 'extended' | 'gone' | 'unknown';
}

interface FakeJob {
  i: number;
  id: string;
  status: string;
  attempt: number;
  /** When the service deletes it (server time), for a job whose fate is `expires`. */
  deleteAt?: number;
}

/** The server's time of the running activity attempt (time-skipped on the test server). */
const serverNow = () => Context.current().info.currentAttemptScheduledTimestampMs;

export function fakeService(
  total: number,
  plan: (index: number, attempt: number) => Fate = () => 'COMPLETED',
  lease?: FakeLease,
  /** Each finished run's estimated cost (the watcher's), in USD; absent: no estimates. */
  costOf?: (index: number, attempt: number) => number,
) {
  const jobs = new Map<string, FakeJob>();
  const byItem = new Map<number, FakeJob[]>();
  const submitsPerItem = new Map<number, number>();
  const lines: BatchResultLine[] = [];
  const cancelled: string[] = [];
  const released = new Set<number>();
  let releaseAll = false;
  let nextId = 0;
  let maxInFlight = 0;
  const extensions: Array<{ i: number; id: string; ttl: number; answer: string }> = [];
  /** Leases the watcher's looks extended (an adopted orphan's, a long lease's). */
  const extensionsByLook: Array<{ i: number; id: string; ttl: number }> = [];
  const orphans: Array<{ i: number; id: string }> = [];
  /** Jobs the service deleted when their ttl passed (fate `expires`). */
  const expired: Array<{ i: number; id: string }> = [];
  /** Every item the watcher was asked about, as the workflow sent it. */
  const watched: WatchedItem[] = [];

  const live = () => [...jobs.values()].filter((job) => job.status === 'IN_PROGRESS').length;
  function fateNow(job: FakeJob): string {
    const fate = plan(job.i, job.attempt);
    if (fate === 'held') return releaseAll || released.has(job.i) ? 'COMPLETED' : 'IN_PROGRESS';
    if (typeof fate === 'object' && 'expires' in fate) return 'IN_PROGRESS';
    return typeof fate === 'string' ? fate : 'COMPLETED';
  }

  const activities: BatchActivities = {
    async stageBatchItems() {
      return { batchKey: 'batch-test', manifestKey: 'batch-test/items.jsonl', total };
    },
    async transformPipelinePieces() {
      throw new Error('a batch runs no pipeline transform');
    },
    async recordPipelineLines() {
      throw new Error('a batch writes no pipeline lines');
    },
    async stagePipelineRedrive() {
      throw new Error('a batch redrives no pipeline');
    },
    async readPipelineRedriveList() {
      throw new Error('a batch redrives no pipeline');
    },
    async submitBatchPage({ indexes, submitLease }) {
      const leased = lease && submitLease !== undefined ? { lease: lease.ms } : {};
      const results: SubmitItemResult[] = indexes.map((i) => {
        const submits = (submitsPerItem.get(i) ?? 0) + 1;
        submitsPerItem.set(i, submits);
        const attempt = (byItem.get(i)?.reduce((n, job) => n + job.attempt, 0) ?? 0) + 1;
        const fate = plan(i, attempt);
        const submit = typeof fate === 'object' && 'submit' in fate ? fate.submit : undefined;
        if (submit === 'uncertain')
          return { i, uncertain: 'the answer was lost', armed: 'lease' in leased, ...leased };
        if (submit === 'orphan') {
          const job: FakeJob = { i, id: `orphan-${i}-${nextId++}`, status: 'IN_PROGRESS', attempt };
          jobs.set(job.id, job);
          byItem.set(i, [...(byItem.get(i) ?? []), job]);
          orphans.push({ i, id: job.id });
          return { i, uncertain: 'the answer was lost', armed: true, ...leased };
        }
        if (submit === 'rejected')
          return { i, rejected: { type: 'BadRequest', message: 'no', retryable: false } };
        const job: FakeJob = { i, id: `job-${i}-${nextId++}`, status: 'IN_PROGRESS', attempt };
        jobs.set(job.id, job);
        byItem.set(i, [...(byItem.get(i) ?? []), job]);
        if (typeof fate === 'object' && 'expires' in fate) {
          job.deleteAt = serverNow() + fate.expires;
          return { i, id: job.id, ttl: fate.expires, ...leased };
        }
        return { i, id: job.id, ...leased };
      });
      maxInFlight = Math.max(maxInFlight, live());
      return { results };
    },
    async watchBatchJobs({ items, extend }) {
      watched.push(...items);
      // A look that carries a ttl extends the job's lease, as /status?ttl= does.
      const extended: number[] = [];
      for (const [i, ttl] of extend ?? []) {
        const id = items.find((item) => item[0] === i)?.[1] ?? '';
        const job = jobs.get(id);
        if (!job) continue;
        delete job.deleteAt;
        extensionsByLook.push({ i, id, ttl });
        extended.push(i);
      }
      const changes: ItemChange[] = [];
      for (const [i, id] of items) {
        const job = jobs.get(id);
        if (job?.deleteAt !== undefined && job.status === 'IN_PROGRESS' && serverNow() >= job.deleteAt) {
          // Its ttl passed: the service deleted it.
          jobs.delete(id);
          expired.push({ i, id });
          changes.push({ i, status: 'GONE', gone: true, at: Date.now() });
          continue;
        }
        if (!job) {
          changes.push({ i, status: 'GONE', gone: true, at: Date.now() });
          continue;
        }
        // Like the service: a finished job is reported on every look (an answer may have been dropped).
        const status = job.status === 'IN_PROGRESS' ? fateNow(job) : job.status;
        if (status === 'IN_PROGRESS') continue;
        job.status = status;
        if (status === 'COMPLETED')
          lines.push({ index: i, jobId: id, status, attempts: job.attempt, submissions: 0 });
        changes.push({
          i,
          status,
          at: Date.now(),
          ...(status === 'FAILED' ? { error: `item ${i} failed` } : {}),
          ...(costOf ? { cost: costOf(i, job.attempt) } : {}),
        });
      }
      // As the watcher does: an extension is news the batch must hear, even with nothing finished.
      if (changes.length === 0 && extended.length === 0) {
        throw ApplicationFailure.create({
          type: 'JobUnchanged',
          message: 'nothing finished',
          nextRetryDelay: 1_000,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      return {
        changes,
        running: live(),
        ...(costOf ? { currency: 'USD' } : {}),
        ...(extended.length === 0 ? {} : { extended }),
      };
    },
    async extendBatchLeases({ items }) {
      return {
        results: items.map(([i, id, ttl]) => {
          const answer = lease?.extend?.(i, id) ?? 'extended';
          extensions.push({ i, id, ttl, answer });
          if (answer === 'gone') jobs.delete(id);
          return answer === 'extended'
            ? { i, extended: true }
            : answer === 'gone'
              ? { i, gone: true }
              : { i };
        }),
      };
    },
    async retryBatchJobs({ items }) {
      return {
        results: items.map(([i, id]) => {
          const job = jobs.get(id) as FakeJob;
          job.attempt += 1;
          job.status = 'IN_PROGRESS';
          return { i, status: 'IN_QUEUE' };
        }),
      };
    },
    async cancelBatchJobs({ items }) {
      return {
        results: items.map(([i, id]) => {
          const job = jobs.get(id) as FakeJob;
          job.status = 'CANCELLED';
          cancelled.push(id);
          return { i, status: 'CANCELLED' };
        }),
      };
    },
    async recordBatchResults({ lines: written }) {
      lines.push(...written);
    },
  };

  return {
    activities,
    lines,
    cancelled,
    jobs,
    submitsPerItem,
    extensions,
    extensionsByLook,
    orphans,
    expired,
    watched,
    release(i: number) {
      released.add(i);
    },
    releaseAll() {
      releaseAll = true;
    },
    live,
    /** The items whose jobs are IN_PROGRESS, lowest first. */
    inFlight: () =>
      [...jobs.values()]
        .filter((job) => job.status === 'IN_PROGRESS')
        .map((job) => job.i)
        .sort((a, b) => a - b),
    maxInFlight: () => maxInFlight,
  };
}

export type FakeService = ReturnType<typeof fakeService>;

/**
 * The fake's activities over a real batch store, as the facade's redrive needs them: the real
 * stage (a manifest, or the items of an earlier batch that did not complete), and the lines of
 * the items that ended written to the store as the real activities write them (COMPLETED ones by
 * the watcher under results/, the others by recordBatchResults under failures/).
 */
export function overStore(fake: FakeService, store: BatchStore, resultStoreDir: string): BatchActivities {
  // The stage and the record never call the service.
  const real = createBatchActivities({
    client: {} as Parameters<typeof createBatchActivities>[0]['client'],
    batchStore: store,
    resultStoreDir,
  });
  return {
    ...fake.activities,
    stageBatchItems: real.stageBatchItems,
    async watchBatchJobs(args) {
      const answer = await fake.activities.watchBatchJobs(args);
      const done = new Set(answer.changes.filter((c) => c.status === 'COMPLETED').map((c) => c.i));
      if (done.size > 0) {
        const { info } = Context.current();
        const lines = fake.lines.filter((line) => line.status === 'COMPLETED' && done.has(line.index));
        await store.writeLines(
          `${args.batchKey}/results/${info.workflowExecution?.runId}-${info.activityId}.jsonl`,
          lines.map((line) => JSON.stringify(line)),
        );
      }
      return answer;
    },
    async recordBatchResults(args) {
      await fake.activities.recordBatchResults(args);
      await real.recordBatchResults(args);
    },
  };
}
