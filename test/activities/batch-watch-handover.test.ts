/**
 * A watcher's window handed from one watcher to the next (contracts/look-log.ts): a first attempt
 * starts from the looks it took over, a later attempt from its own heartbeat details, and the
 * answer hands its window back to the batch.
 */
import { ActivityCancelledError, ActivityNotFoundError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBatchActivities } from '../../activities/batch';
import type { WatchedItem } from '../../contracts/batch-types';
import { type LookLog, looksInWindow } from '../../contracts/look-log';
import { tempDir } from '../support/temp-dir';
import { activityEnv, type StubClient, stubClient } from './job-stub';

const polling = { initialIntervalMs: 1_000, maxIntervalMs: 10_000, backoffCoefficient: 1.5 };
const items: WatchedItem[] = [
  [0, 'job-a', 'IN_PROGRESS', 1, 0],
  [1, 'job-b', 'IN_PROGRESS', 1, 0],
];
/** Two looks per 10 s: the watcher's two jobs fill it. */
const share = { perTenSeconds: 2, concurrent: 2 };
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0, 500);
const second = Math.floor(NOW / 1_000);

describe('watchBatchJobs: the window handed over between watchers', () => {
  let stub: StubClient;
  let dir: string;
  beforeEach(() => {
    stub = stubClient();
    dir = tempDir('batch-watch-handover');
    // Time stands still until the test moves it: the limiter's window and its waits follow it.
    vi.useFakeTimers({
      now: NOW,
      toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    });
    stub.answer(
      'status',
      { id: 'job-a', status: 'COMPLETED', output: { a: 1 } },
      { id: 'job-b', status: 'COMPLETED', output: { b: 1 } },
    );
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function watch(
    seed: LookLog | undefined,
    {
      heartbeatDetails,
      serverSays,
      pollingMs,
    }: { heartbeatDetails?: unknown; serverSays?: Error; pollingMs?: number } = {},
  ) {
    const activities = createBatchActivities({ client: stub.client, resultStoreDir: dir });
    return activityEnv(
      {
        scheduledTimestampMs: NOW,
        ...(heartbeatDetails === undefined ? {} : { heartbeatDetails, attempt: 2 }),
      },
      serverSays,
    ).call(activities.watchBatchJobs, {
      endpointId: 'ep-1',
      batchKey: 'batch-1',
      items,
      polling: pollingMs === undefined ? polling : { ...polling, initialIntervalMs: pollingMs },
      returnAfter: 2,
      holdMs: 0,
      share,
      ...(seed === undefined ? {} : { seed }),
    });
  }

  it('a first attempt waits for the looks it took over to leave the window before its own', async () => {
    // The watcher before it, in another process, looked twice in this second: its share is full
    // until that second's end + 10 s.
    const answer = watch([[second, 2, 'another-process']]);
    await vi.advanceTimersByTimeAsync(9_000);
    expect(stub.named('status')).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000);
    const { changes, looks } = await answer;
    expect(stub.named('status').map((args) => args[1])).toEqual(['job-a', 'job-b']);
    expect(changes.map((change) => change.status)).toEqual(['COMPLETED', 'COMPLETED']);
    // It hands back its own two looks, which still count.
    expect(looksInWindow(looks ?? [], Date.now())).toBe(2);
  });

  it('a later attempt starts from its own heartbeat details, not from the seed again', async () => {
    const answer = watch([[second, 2, 'another-process']], { heartbeatDetails: { looks: [] } });
    await vi.advanceTimersByTimeAsync(0);
    await answer;
    expect(stub.named('status')).toHaveLength(2);
  });

  it('without a seed, looks at once and hands back what it looked, naming its client', async () => {
    const { looks } = await watch(undefined);
    expect(stub.named('status')).toHaveLength(2);
    expect(looks).toEqual([[second, 2, expect.any(String)]]);
  });

  it('leaves out of its window the looks its own client made: its client counts those already', async () => {
    const first = await watch(undefined);
    const source = first.looks?.[0]?.[2] as string;
    const answer = watch([[second, 2, source]]);
    await vi.advanceTimersByTimeAsync(0);
    await answer;
    // The second watcher looked at once: four looks in all.
    expect(stub.named('status')).toHaveLength(4);
  });

  it.each([
    ['it was cancelled', new ActivityCancelledError('cancelled')],
    ['its run is over', new ActivityNotFoundError('Not found')],
  ])('stops looking within two seconds of the server saying %s', async (_, serverSays) => {
    stub.answer('status', { id: 'job-a', status: 'IN_PROGRESS' });
    // It looks every half second, waiting in the attempt, and its share lets it look at its two
    // jobs once per 10 s. The SDK's own heartbeats would carry the cancel only every 24 s (0.8 of
    // the 30 s timeout): the watcher asks the server itself.
    const answer = watch(undefined, { serverSays, pollingMs: 500 });
    const settled = answer.then(
      () => 'answered',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(2_100);
    expect(await Promise.race([settled, Promise.resolve('still looking')])).toBeInstanceOf(CancelledFailure);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(stub.named('status')).toHaveLength(2);
  });
});
