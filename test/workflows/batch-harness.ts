/**
 * Plumbing of the batch workflow tests: a time-skipping server, the batch workflow's bundle, and a
 * fake service behind mocked batch activities. Each item's fate is scripted by `plan(index,
 * attempt)`; jobs that are `held` stay IN_PROGRESS until the test releases them.
 */
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { BatchActivities } from '../../activities/batch';
import type { BatchResultLine, ItemChange, SubmitItemResult } from '../../workflows/batch-input';
import { bundleWorkflows } from '../support/workflow-harness';

export { timeSkippingEnv } from '../support/temporal';
export { failureOf, quietRuntime, withWorker } from '../support/workflow-harness';

export function bundleBatchWorkflow(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(require.resolve('../../workflows/batch.ts'));
}

/** What happens to an item's job on one attempt; `submit` overrides the submit's answer. */
export type Fate = 'COMPLETED' | 'FAILED' | 'TIMED_OUT' | 'held' | { submit: 'uncertain' | 'rejected' };

interface FakeJob {
  i: number;
  id: string;
  status: string;
  attempt: number;
}

export function fakeService(
  total: number,
  plan: (index: number, attempt: number) => Fate = () => 'COMPLETED',
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

  const live = () => [...jobs.values()].filter((job) => job.status === 'IN_PROGRESS').length;
  function fateNow(job: FakeJob): string {
    const fate = plan(job.i, job.attempt);
    if (fate === 'held') return releaseAll || released.has(job.i) ? 'COMPLETED' : 'IN_PROGRESS';
    return typeof fate === 'string' ? fate : 'COMPLETED';
  }

  const activities: BatchActivities = {
    async stageBatchItems() {
      return { batchKey: 'batch-test', manifestKey: 'batch-test/items.jsonl', total };
    },
    async submitBatchPage({ indexes }) {
      const results: SubmitItemResult[] = indexes.map((i) => {
        const submits = (submitsPerItem.get(i) ?? 0) + 1;
        submitsPerItem.set(i, submits);
        const attempt = (byItem.get(i)?.reduce((n, job) => n + job.attempt, 0) ?? 0) + 1;
        const fate = plan(i, attempt);
        if (typeof fate === 'object' && fate.submit === 'uncertain')
          return { i, uncertain: 'the answer was lost', armed: false };
        if (typeof fate === 'object' && fate.submit === 'rejected')
          return { i, rejected: { type: 'BadRequest', message: 'no', retryable: false } };
        const job: FakeJob = { i, id: `job-${i}-${nextId++}`, status: 'IN_PROGRESS', attempt };
        jobs.set(job.id, job);
        byItem.set(i, [...(byItem.get(i) ?? []), job]);
        return { i, id: job.id };
      });
      maxInFlight = Math.max(maxInFlight, live());
      return { results };
    },
    async watchBatchJobs({ items }) {
      const changes: ItemChange[] = [];
      for (const [i, id] of items) {
        const job = jobs.get(id);
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
        });
      }
      if (changes.length === 0) {
        throw ApplicationFailure.create({
          type: 'JobUnchanged',
          message: 'nothing finished',
          nextRetryDelay: 1_000,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      return { changes, running: live() };
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
    release(i: number) {
      released.add(i);
    },
    releaseAll() {
      releaseAll = true;
    },
    live,
    maxInFlight: () => maxInFlight,
  };
}
