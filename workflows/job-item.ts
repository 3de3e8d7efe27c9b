/**
 * The job workflow's one item in the per-item engine (item-engine.ts): every decision about the
 * job (a submit's answer and its backoff, an uncertain submit, the lease, a terminal status, a
 * retry, expiry) is a step of the engine, the same one the batch drives for each of its items.
 * `advanceJob` steps it and keeps the workflow's snapshot (counts, job id, deadline) in step.
 */
import { stepItem } from './item-engine';
import { deadlineOf, type ItemCount, type ItemEvent, type ItemRules, type ItemStep } from './item-state';
import { type Run, setDeadline, submitKind } from './job-run';

/** The engine's rules for this job: the caller's options, one item, no grouping of retries. */
export function jobRules(run: Run): ItemRules {
  const { route } = run.job.options;
  return {
    ...run.job.options,
    submitKind: submitKind(run),
    retryGridMs: 1,
    routeLength: route?.endpoints.length ?? 1,
    capacityFailures: route?.capacityFailures ?? [],
  };
}

const SNAPSHOT_COUNT: Partial<
  Record<ItemCount, 'uncertainSubmits' | 'uncertainAdopted' | 'resubmittedAfterLease' | 'leaseLapses'>
> = {
  uncertainSubmit: 'uncertainSubmits',
  uncertainAdopted: 'uncertainAdopted',
  resubmittedAfterLease: 'resubmittedAfterLease',
  leaseLapse: 'leaseLapses',
};

export function advanceJob(run: Run, event: ItemEvent): ItemStep {
  const result = stepItem(run.item, event, jobRules(run));
  run.item = result.item;
  const { s } = run;
  for (const count of result.counts) {
    const field = SNAPSHOT_COUNT[count];
    if (field) s[field] += 1;
  }
  const item = result.item;
  s.attempts = item.attempts;
  s.submissions = item.submissions;
  s.retries = item.retries;
  if (item.phase === 'running' || item.phase === 'retry-due') {
    if (s.jobId !== item.jobId) ownNewJob(run, item.jobId, item.submittedAt, item.adopted);
    if (item.phase === 'running' && item.lease) s.leaseTtlMs = item.lease.ttlMs;
    else delete s.leaseTtlMs;
    run.job = { ...run.job, ttlMs: item.ttlMs };
    setDeadline(run, deadlineOf(item) - item.submittedAt);
  }
  return result;
}

/** The workflow now follows this job (submitted by it, or adopted from an uncertain submit). */
function ownNewJob(run: Run, jobId: string, submittedAt: number, adopted: boolean): void {
  const { s } = run;
  s.jobId = jobId;
  if (!s.jobIds.includes(jobId)) s.jobIds.push(jobId);
  s.adopted = adopted;
  s.timings.submittedAt = submittedAt;
  delete s.timings.runningAt;
  delete s.progress;
  run.submittedAt = submittedAt;
}
