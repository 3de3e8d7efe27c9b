/**
 * job_runs_finished_total and estimated_cost_total take each run once per worker, however often
 * its final status is read (a poll and a webhook's confirming look, a retried activity, a batch
 * watcher's repeated attempt), while every look still hands the estimate back to the workflow.
 * The job and batch activities in Temporal's mock environment against a stub API client.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import type { EstimateCost } from '../../activities/cost-estimator';
import { createInFlightTracker } from '../../activities/in-flight';
import { createJobActivities } from '../../activities/job';
import type { BatchStore } from '../../stores/batch-store';
import { createPrometheusMetrics } from '../../worker/metrics';
import { activityEnv, type StubClient, serviceError, stubClient } from '../activities/job-stub';
import { tempDir } from '../support/temp-dir';
import { sampleSum } from './counting-proxy';

const estimateCost: EstimateCost = async (_endpointId, executionTimeMs) => ({
  amount: executionTimeMs / 1000,
  currency: 'EUR',
  tier: 'AMPERE_16',
  seconds: executionTimeMs / 1000,
});

function memoryStore(): BatchStore {
  const files = new Map<string, readonly string[]>();
  return {
    name: 'memory',
    async countLines(key) {
      return files.get(key)?.length ?? 0;
    },
    async readLines(key, indexes) {
      return indexes.map((i) => files.get(key)?.[i] ?? '');
    },
    async writeLines(key, lines) {
      files.set(key, [...lines]);
    },
    async list() {
      return [];
    },
  };
}

describe('the in-flight tracker', () => {
  it('says "first" once per run, again after a retry, and after a run left unseen', () => {
    const gauge: number[] = [];
    const tracker = createInFlightTracker({ jobsInFlight: (_endpoint, delta) => gauge.push(delta) });
    tracker.started('ep', 'job-1');
    expect(tracker.finished('ep', 'job-1')).toBe(true);
    expect(tracker.finished('ep', 'job-1')).toBe(false);
    // Retried under the same id: a new run.
    tracker.started('ep', 'job-1');
    expect(tracker.finished('ep', 'job-1')).toBe(true);
    // A cancel's answer lowers the gauge; the look at the final status that follows still counts.
    tracker.started('ep', 'job-2');
    tracker.left('ep', 'job-2');
    tracker.left('ep', 'job-2');
    expect(tracker.finished('ep', 'job-2')).toBe(true);
    expect(tracker.finished('ep', 'job-2')).toBe(false);
    // Submitted by another worker: this one counts the run it saw finish.
    expect(tracker.finished('ep', 'job-3')).toBe(true);
    expect(gauge).toEqual([1, -1, 1, -1, 1, -1, -1]);
  });
});

describe('finished runs and estimated cost in the metrics', () => {
  let stub: StubClient;
  let dir: string;
  beforeEach(() => {
    stub = stubClient();
    dir = tempDir('finished-runs');
  });

  it('counts a job run once when its final status is read twice, and returns the estimate both times', async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    const activities = createJobActivities({
      client: stub.client,
      resultStoreDir: dir,
      metrics,
      estimateCost,
    });
    stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
    stub.answer('status', { id: 'job-1', status: 'COMPLETED', executionTime: 2_000, output: 'ok' });
    await activityEnv().call(activities.submitJob, { endpointId: 'ep', request: { input: {} } });
    // The poller's look, then a webhook's confirming look (or a retried activity).
    const looks = [
      await activityEnv().call(activities.fetchJobStatus, { endpointId: 'ep', jobId: 'job-1' }),
      await activityEnv().call(activities.fetchJobStatus, { endpointId: 'ep', jobId: 'job-1' }),
    ];
    for (const look of looks) expect(look.cost).toMatchObject({ amount: 2, tier: 'AMPERE_16' });
    const text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_job_runs_finished_total', { status: 'COMPLETED' })).toBe(1);
    expect(sampleSum(text, 'durable_serverless_estimated_cost_total', { tier: 'AMPERE_16' })).toBe(2);
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(0);
  });

  it("counts a cancelled run once, at the look after the cancel's answer", async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    const activities = createJobActivities({
      client: stub.client,
      resultStoreDir: dir,
      metrics,
      estimateCost,
    });
    stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
    stub.answer('cancel', { id: 'job-1', status: 'CANCELLED' });
    stub.answer('status', { id: 'job-1', status: 'CANCELLED', executionTime: 1_000 });
    await activityEnv().call(activities.submitJob, { endpointId: 'ep', request: { input: {} } });
    await activityEnv().call(activities.cancelJob, { endpointId: 'ep', jobId: 'job-1' });
    expect(sampleSum(await registry.metrics(), 'durable_serverless_jobs_in_flight')).toBe(0);
    for (let look = 0; look < 2; look++)
      await activityEnv().call(activities.fetchJobStatus, { endpointId: 'ep', jobId: 'job-1' });
    const text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_job_runs_finished_total', { status: 'CANCELLED' })).toBe(1);
    expect(sampleSum(text, 'durable_serverless_estimated_cost_total')).toBe(1);
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(0);
  });

  it("counts a batch item's run once when a retried watcher sees it finished again", async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    const activities = createBatchActivities({
      client: stub.client,
      resultStoreDir: dir,
      batchStore: memoryStore(),
      metrics,
      estimateCost,
    });
    stub.answer('status', { id: 'job-7', status: 'FAILED', executionTime: 3_000, error: 'boom' });
    const watch = () =>
      activityEnv({ activityId: 'watch-1' }).call(activities.watchBatchJobs, {
        endpointId: 'ep',
        batchKey: 'b1',
        items: [[0, 'job-7', 'IN_PROGRESS', 1, 0]],
        polling: { initialIntervalMs: 10, maxIntervalMs: 10, backoffCoefficient: 1 },
        returnAfter: 1,
        holdMs: 0,
      });
    // The same attempt twice: its answer was lost and Temporal ran it again.
    for (const answer of [await watch(), await watch()])
      expect(answer.changes).toEqual([expect.objectContaining({ i: 0, status: 'FAILED', cost: 3 })]);
    const text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_job_runs_finished_total', { status: 'FAILED' })).toBe(1);
    expect(sampleSum(text, 'durable_serverless_estimated_cost_total', { tier: 'AMPERE_16' })).toBe(3);
  });

  it('leaves a job that expired unseen out of the finished runs', async () => {
    const { metrics, registry } = createPrometheusMetrics({ processMetrics: false });
    const activities = createJobActivities({
      client: stub.client,
      resultStoreDir: dir,
      metrics,
      estimateCost,
    });
    stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
    stub.answer('cancel', serviceError({ kind: 'NotFound', status: 404, operation: 'cancel' }));
    await activityEnv().call(activities.submitJob, { endpointId: 'ep', request: { input: {} } });
    expect(await activityEnv().call(activities.cancelJob, { endpointId: 'ep', jobId: 'job-1' })).toEqual({
      gone: true,
    });
    const text = await registry.metrics();
    expect(sampleSum(text, 'durable_serverless_job_runs_finished_total')).toBe(0);
    expect(sampleSum(text, 'durable_serverless_jobs_in_flight')).toBe(0);
  });
});
