/**
 * What the job workflow's signals leave in its state: webhook hints (claims, checked with /status
 * before they count) and ttl extension requests. Both are bounded: a signal never makes the
 * workflow keep more than a few.
 */
import { log } from '@temporalio/workflow';
import type { Run } from './job-run';

/** Bounds on what signals can make the workflow keep. */
const MAX_PENDING_HINTS = 50;
const MAX_STRAY_IDS = 20;

export function receiveHint(run: Run, hint: unknown): void {
  const { jobId, status } = (hint ?? {}) as { jobId?: unknown; status?: unknown };
  if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 1024) return;
  run.s.webhooks += 1;
  // Duplicates of a hint still waiting add nothing.
  if (run.hints.some((h) => h.jobId === jobId && h.status === status)) return;
  run.hints.push({ jobId, status: typeof status === 'string' ? status : '' });
  if (run.hints.length > MAX_PENDING_HINTS) run.hints.shift();
}

export function receiveTtlRequest(run: Run, request: unknown): void {
  const ttl = (request as { ttl?: unknown } | undefined)?.ttl;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 10_000 || ttl > 7 * 86_400_000) {
    run.s.ttlExtensionError = 'ttl must be an integer between 10000 and 604800000 ms';
    return;
  }
  run.ttlRequests.push(ttl);
}

/** A webhook named a job this workflow does not follow: kept (a few) for the snapshot, and logged. */
export function noteStray(run: Run, jobId: string): void {
  const { s } = run;
  if (s.jobIds.includes(jobId) || s.strayJobIds.includes(jobId)) return;
  log.warn('a webhook named a job this workflow does not follow: an orphan of an uncertain submit?', {
    jobId,
  });
  if (s.strayJobIds.length < MAX_STRAY_IDS) s.strayJobIds.push(jobId);
}
