/**
 * The batch's /retry of its FAILED and TIMED_OUT jobs (retryBatchJobs in
 * activities/batch-job-actions.ts, with activities/job-retry.ts): an unanswered call is tried again
 * later, a refusal of a job already re-queued is that job's run, a 404 is a job gone, and a job
 * still FAILED after a refusal fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import type { ServiceClient } from '../../api/client';
import { activityEnv, serviceError } from './job-stub';

type Jobs = ServiceClient['jobs'];

/** Per job: what /retry does (answer or throw), and what /status says after a refusal. */
function jobsAnswering(script: Record<string, { retry: Error | 'IN_QUEUE'; status?: string }>): Jobs {
  const jobs = {
    async retry(_endpointId: string, jobId: string) {
      const answer = script[jobId]?.retry;
      if (answer instanceof Error) throw answer;
      return { id: jobId, status: answer };
    },
    async status(_endpointId: string, jobId: string) {
      return { id: jobId, status: script[jobId]?.status };
    },
  };
  return jobs as unknown as Jobs;
}

describe('retryBatchJobs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'batch-retry-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('tells each job apart: retried, unanswered (5xx, timeout), already re-queued, gone, refused', async () => {
    const refused = serviceError({ kind: 'BadRequest', status: 400, operation: 'retry' });
    const jobs = jobsAnswering({
      'job-a': { retry: 'IN_QUEUE' },
      'job-b': {
        retry: serviceError({ kind: 'ServerError', status: 503, operation: 'retry', retryable: true }),
      },
      'job-c': { retry: serviceError({ kind: 'Timeout', operation: 'retry', retryable: true }) },
      'job-d': { retry: refused, status: 'IN_PROGRESS' },
      'job-e': { retry: refused, status: 'COMPLETED' },
      'job-f': { retry: serviceError({ kind: 'NotFound', status: 404, operation: 'retry' }) },
      'job-g': { retry: refused, status: 'FAILED' },
    });
    const activities = createBatchActivities({ client: { jobs }, resultStoreDir: dir });
    const { results } = await activityEnv().call(activities.retryBatchJobs, {
      endpointId: 'ep-1',
      items: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((letter, i) => [i, `job-${letter}`] as [number, string]),
    });
    expect(results).toEqual([
      { i: 0, status: 'IN_QUEUE' },
      { i: 1, unanswered: true },
      { i: 2, unanswered: true },
      { i: 3, status: 'IN_PROGRESS' },
      { i: 4, status: 'COMPLETED' },
      { i: 5, gone: true },
      { i: 6, error: expect.stringContaining('BadRequest') },
    ]);
  });
});
