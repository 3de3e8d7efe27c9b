/**
 * The batch watcher with the webhook reports of its process (activities/batch-job-reports.ts):
 * while webhooks reach the process it looks at the jobs reported ended and leaves the others to a
 * later full look; without reports it looks at every job, as before.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import { createBatchJobReports } from '../../activities/batch-job-reports';
import type { WatchedItem } from '../../contracts/batch-types';
import { JOB_UNCHANGED } from '../../contracts/failures';
import { tempDir } from '../support/temp-dir';
import { activityEnv, rejection, type StubClient, stubClient } from './job-stub';

const polling = { initialIntervalMs: 1_000, maxIntervalMs: 10_000, backoffCoefficient: 1.5 };
const items: WatchedItem[] = [
  [0, 'job-a', 'IN_QUEUE', 1, 0],
  [1, 'job-b', 'IN_QUEUE', 1, 0],
];
const watch = { endpointId: 'ep-1', batchKey: 'batch-1', items, polling, returnAfter: 1, holdMs: 0 };

/** Resolves when the watcher first waits between looks; `count()` says how many waits it began. */
function onWait(reports: ReturnType<typeof createBatchJobReports>): {
  waiting: Promise<void>;
  count(): number;
} {
  let waits = 0;
  const wait = reports.waitForEnd.bind(reports);
  const waiting = new Promise<void>((resolve) => {
    reports.waitForEnd = (jobIds, ms, signal) => {
      waits++;
      resolve();
      return wait(jobIds, ms, signal);
    };
  });
  return { waiting, count: () => waits };
}

describe('batch job reports', () => {
  it('remembers watched and ended jobs, and whether an end was reported lately', () => {
    let now = 1_000;
    const reports = createBatchJobReports(() => now);
    expect(reports.active(10_000)).toBe(false);
    reports.watching(['job-a']);
    reports.ended('job-b');
    expect([reports.isWatched('job-a'), reports.isWatched('job-b')]).toEqual([true, false]);
    expect([reports.hasEnded('job-a'), reports.hasEnded('job-b')]).toEqual([false, true]);
    now += 10_000;
    expect(reports.active(10_000)).toBe(true);
    now += 1;
    expect(reports.active(10_000)).toBe(false);
  });

  it('wakes a waiter when one of its jobs is reported ended, and not for another job', async () => {
    const reports = createBatchJobReports();
    let woken = false;
    const waiting = reports.waitForEnd(new Set(['job-a']), 60_000).then(() => {
      woken = true;
    });
    reports.ended('job-z');
    await Promise.resolve();
    expect(woken).toBe(false);
    reports.ended('job-a');
    await waiting;
    expect(woken).toBe(true);
  });

  it('ends a wait when its signal aborts', async () => {
    const reports = createBatchJobReports();
    const abort = new AbortController();
    const waiting = reports.waitForEnd(new Set(['job-a']), 60_000, abort.signal);
    abort.abort();
    await waiting;
    expect(abort.signal.aborted).toBe(true);
  });

  it('forgets the end of a job sent again', () => {
    const reports = createBatchJobReports();
    reports.ended('job-a');
    reports.forget('job-a');
    expect(reports.hasEnded('job-a')).toBe(false);
  });
});

describe('watchBatchJobs with webhook reports', () => {
  let stub: StubClient;
  let dir: string;
  beforeEach(() => {
    stub = stubClient();
    dir = tempDir('batch-watch-reports');
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Timers stand still: the watcher's own wait never ends; only a report can wake it. */
  const stopTimers = () =>
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });

  /** One try of the watcher, begun `intoPeriodMs` after its attempt was scheduled. */
  function watchOnce(
    reports: ReturnType<typeof createBatchJobReports> | undefined,
    intoPeriodMs = 0,
    extend?: Array<[number, number, number?]>,
  ) {
    const activities = createBatchActivities({
      client: stub.client,
      resultStoreDir: dir,
      ...(reports ? { batchJobReports: reports } : {}),
    });
    return activityEnv({ scheduledTimestampMs: Date.now() - intoPeriodMs }).call(
      activities.watchBatchJobs,
      extend ? { ...watch, extend } : watch,
    );
  }

  it('looks only at the job reported ended, and tells the workflow it finished', async () => {
    const reports = createBatchJobReports();
    // Followed here before (an earlier watcher): no first look at every job.
    reports.watching(['job-a', 'job-b']);
    reports.ended('job-b');
    stub.answer('status', { id: 'job-b', status: 'COMPLETED', output: { ok: true } });
    const { changes } = await watchOnce(reports);
    expect(changes.map((change) => [change.i, change.status])).toEqual([[1, 'COMPLETED']]);
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-b']);
    // Both jobs are now known as watched here: their webhooks need no query to the batch.
    expect([reports.isWatched('job-a'), reports.isWatched('job-b')]).toEqual([true, true]);
  });

  it('looks at once at a job whose lease it extends, unreported, and sets its ttl with that look', async () => {
    const reports = createBatchJobReports();
    reports.watching(['job-a', 'job-b']);
    reports.ended('job-b');
    stub.answer(
      'status',
      { id: 'job-a', status: 'IN_PROGRESS' },
      { id: 'job-b', status: 'COMPLETED', output: { ok: true } },
    );
    const { changes, extended } = await watchOnce(reports, 0, [[0, 3_600_000]]);
    expect(
      stub.named('status').map(([, jobId, options]) => [jobId, (options as { ttl?: number }).ttl]),
    ).toEqual([
      ['job-a', 3_600_000],
      ['job-b', undefined],
    ]);
    expect(changes.map((change) => [change.i, change.status])).toEqual([[1, 'COMPLETED']]);
    // The workflow hears that the lease is extended: it has nothing more to extend.
    expect(extended).toEqual([0]);
  });

  it('looks at a job whose lease it extends by the time given, not before, and answers with the extension', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const reports = createBatchJobReports();
    reports.watching(['job-a', 'job-b']);
    reports.ended('job-of-another-batch');
    const { waiting } = onWait(reports);
    stub.answer('status', { id: 'job-a', status: 'IN_PROGRESS' });
    const watched = watchOnce(reports, 2_000, [[0, 3_600_000, Date.now() + 1_000]]);
    await waiting;
    expect(stub.named('status')).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    const { changes, extended } = await watched;
    expect(
      stub.named('status').map(([, jobId, options]) => [jobId, (options as { ttl?: number }).ttl]),
    ).toEqual([['job-a', 3_600_000]]);
    // Nothing finished, but the workflow must hear of the extension (another try would repeat it).
    expect(changes).toEqual([]);
    expect(extended).toEqual([0]);
  });

  it('a watcher waiting between looks is woken by the report of its job and looks at once', async () => {
    stopTimers();
    const reports = createBatchJobReports();
    reports.watching(['job-a', 'job-b']);
    reports.ended('job-of-another-batch');
    const { waiting } = onWait(reports);
    stub.answer('status', { id: 'job-b', status: 'COMPLETED', output: { ok: true } });
    // Two seconds into its period: no full look is due when it wakes.
    const watched = watchOnce(reports, 2_000);
    await waiting;
    expect(stub.named('status')).toEqual([]);
    reports.ended('job-b');
    const { changes } = await watched;
    expect(changes.map((change) => [change.i, change.status])).toEqual([[1, 'COMPLETED']]);
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-b']);
  });

  it('a watcher that began before any webhook turns to the reported job once the first one comes', async () => {
    stopTimers();
    const reports = createBatchJobReports();
    const waits = onWait(reports);
    stub.answer(
      'status',
      { id: 'job-a', status: 'IN_PROGRESS' },
      { id: 'job-b', status: 'IN_PROGRESS' },
      { id: 'job-b', status: 'COMPLETED', output: { ok: true } },
    );
    // Two seconds into its period: on its polling schedule alone, a full look would be due again.
    const watched = watchOnce(reports, 2_000);
    await waits.waiting;
    // Nothing heard yet: its first look was at every job.
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-a', 'job-b']);
    reports.ended('job-b');
    const { changes } = await watched;
    expect(changes.map((change) => [change.i, change.status])).toEqual([[1, 'COMPLETED']]);
    // Webhooks are now heard: the look it woke for is at the reported job alone.
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-a', 'job-b', 'job-b']);
    expect(waits.count()).toBe(1);
  });

  it('with no report for its jobs, sends nothing (waiting inline in short steps) and tries again soon', async () => {
    const reports = createBatchJobReports();
    reports.watching(['job-a', 'job-b']);
    reports.ended('job-of-another-batch');
    const error = await rejection(watchOnce(reports));
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(JOB_UNCHANGED);
    expect((error as ApplicationFailure).nextRetryDelay).toBe(500);
    expect(stub.named('status')).toEqual([]);
  });

  it('looks at the jobs no watcher here followed before in its first round, once, webhooks heard or not', async () => {
    const reports = createBatchJobReports();
    reports.watching(['job-a']);
    reports.ended('job-of-another-batch');
    stub.answer('status', { id: 'job-b', status: 'COMPLETED', output: { ok: true } });
    const { changes } = await watchOnce(reports);
    expect(changes.map((change) => [change.i, change.status])).toEqual([[1, 'COMPLETED']]);
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-b']);
  });

  it('before any webhook is heard here, its first try looks at every job', async () => {
    stub.answer('status', { id: 'job-a', status: 'IN_PROGRESS' });
    const reports = createBatchJobReports();
    const error = await rejection(watchOnce(reports));
    expect((error as ApplicationFailure).type).toBe(JOB_UNCHANGED);
    expect(
      stub
        .named('status')
        .slice(0, 2)
        .map((args) => args[1]),
    ).toEqual(['job-a', 'job-b']);
  });

  it('without reports (no webhooks here), looks at every job', async () => {
    stub.answer('status', { id: 'job-a', status: 'IN_PROGRESS' });
    const error = await rejection(watchOnce(undefined));
    expect((error as ApplicationFailure).type).toBe(JOB_UNCHANGED);
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-a', 'job-b']);
  });
});
