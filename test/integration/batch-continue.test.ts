/**
 * The batch workflow continues as new, carrying its cursor, its jobs in flight and its counters,
 * while pause, resume and concurrency changes arrive: one pause and one change land while a run is
 * continuing as new (it has reached maxEventsPerRun and waits for a submit the test holds), and
 * every one of them holds in the runs after. On the dev server (the time-skipping test server
 * mishandles updates racing a continue-as-new), with a fake service; each step waits on the
 * progress query for its effect. The watchers out when a run continues as new are cancelled, and
 * their shares of the /status limit count against the next run’s first watchers.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchInput } from '../../contracts/batch-input';
import type { LookShare } from '../../contracts/batch-types';
import type { LookLog } from '../../contracts/look-log';
import type { serverlessBatch } from '../../workflows/batch/batch';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../../workflows/batch/batch-definitions';
import { devServerEnv } from '../support/temporal';
import {
  bundleBatchWorkflow,
  fakeService,
  quietRuntime,
  until,
  withWorker,
} from '../workflows/batch-harness';

quietRuntime();

type FakeService = ReturnType<typeof fakeService>;
type WatchRequest = Parameters<FakeService['activities']['watchBatchJobs']>[0];
const sum = (log: LookLog | undefined) => (log ?? []).reduce((total, [, looks]) => total + looks, 0);

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  ...extra,
});

describe('batch workflow: continue-as-new', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await devServerEnv();
    bundle = await bundleBatchWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, args: BatchInput) =>
    env.client.workflow.start<typeof serverlessBatch>('serverlessBatch', {
      taskQueue,
      workflowId: `batch-can-${taskQueue}`,
      args: [args],
    });

  it('continues as new carrying cursor, jobs in flight and counters; a pause and a change sent while it does hold', async () => {
    const total = 200;
    const maxEventsPerRun = 200;
    const fake = fakeService(total, (i, attempt) => (i % 40 === 0 && attempt === 1 ? 'FAILED' : 'held'));
    // The submit of the page holding item 40 waits for the test: the run that sent it cannot
    // continue as new before it answers, so what reaches that run once it is full lands while it
    // is continuing as new.
    const gated = 40;
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let gateHeld = false;
    const activities = {
      ...fake.activities,
      async submitBatchPage(args: Parameters<typeof fake.activities.submitBatchPage>[0]) {
        if (args.indexes.includes(gated)) {
          gateHeld = true;
          await gate;
        }
        return fake.activities.submitBatchPage(args);
      },
    };
    // A failing step opens the gate too: the worker cannot shut down while the submit waits.
    await withWorker(env, bundle, activities, async (queue) => steps(queue).finally(openGate));

    async function steps(queue: string) {
      const handle = await start(
        queue,
        input({
          maxConcurrency: 20,
          pageSize: 5,
          maxEventsPerRun,
          // Durations in both forms: the next run starts from the caller's input, which the input
          // schema takes again (the parsed form, in milliseconds, it would refuse).
          job: {
            retry: { maxRetries: 1, initialInterval: '1 second' },
            polling: { initialInterval: 1_000, maxInterval: '2 seconds' },
          },
        }),
      );
      const progress = () => handle.query(batchProgressQuery);
      const runLength = async () => (await handle.describe()).historyLength;
      /** What each change answered: the value before it (a lost change breaks the chain). */
      const previous: number[] = [];
      const setConcurrency = async (value: number) => {
        previous.push(await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [value] }));
        await until(async () => (await progress()).maxConcurrency === value, `maxConcurrency ${value}`);
      };
      const setPaused = async (paused: boolean) => {
        await handle.signal(paused ? pauseBatchSignal : resumeBatchSignal);
        await until(async () => (await progress()).paused === paused, paused ? 'paused' : 'resumed');
      };

      await until(async () => (await progress()).submissions >= 20, '20 submitted');
      await setPaused(true);
      await setConcurrency(25);
      await setPaused(false);

      // The jobs in flight finish, a round at a time (each waits for them), until the run holding
      // the gated submit has reached maxEventsPerRun: from then on it is continuing as new.
      const released = new Set<number>();
      const draining = async () => gateHeld && (await runLength()) >= maxEventsPerRun;
      for (let round = 0; !(await draining()); round++) {
        if (round >= 60) throw new Error('the run holding the gated submit never filled up');
        const before = (await progress()).done;
        const next = fake
          .inFlight()
          .filter((i) => !released.has(i))
          .slice(0, 20);
        for (const i of next) {
          released.add(i);
          fake.release(i);
        }
        await until(
          async () => (await progress()).done >= before + next.length || (await draining()),
          `${next.length} more done`,
        );
      }
      const full = await progress();
      const { runId } = await handle.describe();

      await setPaused(true);
      await setConcurrency(30);
      // Both reached the run that is continuing as new: it still waits for the gated submit.
      expect((await handle.describe()).runId).toBe(runId);
      expect((await progress()).runs).toBe(full.runs);

      openGate();
      await until(async () => (await progress()).runs === full.runs + 1, 'the next run');
      const carried = await progress();
      expect(carried).toMatchObject({ paused: true, maxConcurrency: 30 });
      expect(carried.cursor).toBeGreaterThanOrEqual(full.cursor);
      expect(carried.done).toBeGreaterThanOrEqual(full.done);
      expect((await handle.describe()).runId).not.toBe(runId);

      // The first steps of the new run.
      await setPaused(false);
      await setConcurrency(35);
      fake.releaseAll();
      const summary = await handle.result();

      expect(previous).toEqual([20, 25, 30]);
      expect(summary.runs).toBeGreaterThan(full.runs);
      expect(summary).toMatchObject({
        total,
        counts: { completed: total, failed: 0 },
        submissions: total,
        retries: total / 40,
        notStarted: 0,
      });
      const completed = new Set(
        fake.lines.filter((line) => line.status === 'COMPLETED').map((line) => line.index),
      );
      expect(completed.size).toBe(total);
      for (const [, submits] of fake.submitsPerItem) expect(submits).toBe(1);
      expect(fake.submitsPerItem.size).toBe(total);
      expect(fake.maxInFlight()).toBeLessThanOrEqual(35);
      expect(await progress()).toMatchObject({ paused: false, maxConcurrency: 35, done: total });
    }
  });

  it('counts the share of a watcher cancelled as the run continues as new against the next run’s watchers', async () => {
    const total = 200;
    const fake = fakeService(total);
    const watchers: Array<{ runId: string; share: LookShare | undefined; seed: LookLog | undefined }> = [];
    let firstRunId: string | undefined;
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const activities = {
      ...fake.activities,
      async stageBatchItems(args: Parameters<FakeService['activities']['stageBatchItems']>[0]) {
        return { ...(await fake.activities.stageBatchItems(args)), statusLimit: { perTenSeconds: 400 } };
      },
      async watchBatchJobs(request: WatchRequest) {
        const runId = Context.current().info.workflowExecution?.runId ?? '';
        firstRunId ??= runId;
        watchers.push({ runId, share: request.share, seed: request.seed });
        // The first run's watchers after the first two wait until the run, full, cancels them: it
        // continues as new while they are out. None hands looks back (none could be counted twice).
        if (runId === firstRunId && watchers.length > 2) {
          const { cancellationSignal } = Context.current();
          await Promise.race([
            released,
            new Promise((resolve) => cancellationSignal.addEventListener('abort', resolve)),
          ]);
          throw new CancelledFailure('cancelled');
        }
        const { looks: _looks, ...answer } = await fake.activities.watchBatchJobs(request);
        return answer;
      },
    };
    const input: BatchInput = {
      endpointId: 'ep-1',
      items: { manifest: { key: 'items.jsonl' } },
      pageSize: 1,
      maxConcurrency: 200,
      maxEventsPerRun: 200,
    };
    const summary = await withWorker(env, bundle, activities, async (queue) => {
      const handle = await start(queue, input);
      // The cancelled watchers never heartbeat, so they learn of it only here.
      return handle.result().finally(release);
    });
    expect(summary).toMatchObject({ counts: { completed: total }, submissions: total });
    expect(summary.runs).toBeGreaterThan(1);
    const cancelledShares = watchers
      .filter((watcher) => watcher.runId === firstRunId)
      .slice(2)
      .reduce((looks, watcher) => looks + (watcher.share?.perTenSeconds ?? 0), 0);
    expect(cancelledShares).toBeGreaterThan(0);
    // The next run's first watcher starts from the cancelled ones' shares, up to its own.
    const next = watchers.find((watcher) => watcher.runId !== firstRunId);
    expect(sum(next?.seed)).toBe(Math.min(next?.share?.perTenSeconds ?? 0, cancelledShares));
    expect(next?.seed?.every(([, , source]) => source === 'cancelled')).toBe(true);
  });
});
