/**
 * One batch run by three worker processes on one task queue, on the real server on PostgreSQL, with
 * one of them SIGKILLed mid-batch. The service's /run limit holds for the workers together: the
 * batch reserves each page's send time in its own state (engine/send-window.ts), so no window of
 * the service's sees more requests than the limit however many processes send its pages, where each
 * process's own limiter would let each of them send the whole limit. The emulator counts every
 * request its limits refuse: no /run is. Its /status looks are shared out among its watchers, and
 * each new watcher takes over the window of the ones before it (engine/look-shares.ts), so the
 * service refuses next to no /status either: at most 1% of the items' worth, the requests a window's
 * edge can catch when their arrival at the service lags their grant by a few milliseconds (each is
 * waited out). Every item completes with its output and none runs twice.
 *
 * 4,000 items of 0.5 to 1.5 s on 200 warm workers at time scale 1: the /run limit (1,000 per 10 s)
 * is most of the time, and three workers starting together would send three windows' worth at once.
 */
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishedSummary } from '../../client/batches';
import { expectEveryItemCompletedOnce, startScriptedBatch } from '../support/batch-scenarios';
import { reportBatch, tallyBatch } from '../support/batch-tally';
import { type ManagedProcess, type Stack, startStack, until, untilAnswered } from './support';

const ITEMS = 4_000;
const WORKERS = 200;
const PROCESSES = 3;
/** The kill, as the share of the items the service has acted on. */
const KILL_AT = 0.4;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The worker identities that started the batch's submit pages, from a run's history. */
function submitIdentities(events: HistoryEvent[]): Set<string> {
  const submits = new Set<string>();
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'submitBatchPage') submits.add(String(event.eventId));
  }
  const identities = new Set<string>();
  for (const event of events) {
    const started = event.activityTaskStartedEventAttributes;
    if (started && submits.has(String(started.scheduledEventId)) && started.identity)
      identities.add(started.identity);
  }
  return identities;
}

describe('reliability: one batch on three workers, one SIGKILLed (real server on PostgreSQL)', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Service time is real time: the emulator's rate windows are 10 real seconds, as the client's.
    stack = await startStack({ name: 'batch-scale-out', timeScale: 1 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`${PROCESSES} workers share a batch of ${ITEMS} items within the service's /run and /status limits; a SIGKILL loses nothing`, async () => {
    const startedAt = Date.now();
    const workers: ManagedProcess[] = Array.from({ length: PROCESSES }, () => stack.startWorker());
    await Promise.all(workers.map((worker) => worker.running));
    const { endpointId, handle } = await startScriptedBatch(stack, {
      name: 'batch-scale-out',
      items: ITEMS,
      workers: WORKERS,
      sleepMs: 500,
      job: {
        // As in batch-worker-kill: a page cut by the kill is noticed within submitTimeout; the jobs
        // its last heartbeat named are kept, an orphan is adopted from its webhook, and an item with
        // none goes out again once the lease is over.
        submitLease: '60 seconds',
        submitTimeout: 15_000,
        maxSubmissions: 5,
      },
    });

    await until(
      `the service acted on ${ITEMS * KILL_AT} submissions`,
      () => stack.submissions() >= ITEMS * KILL_AT,
    );
    const killedAt = stack.submissions();
    const victim = workers[1] as ManagedProcess;
    await victim.kill();
    expect(victim.child.signalCode).toBe('SIGKILL');

    const summary = await untilAnswered(
      () => finishedSummary(stack.client, { batch: handle }),
      Date.now() + 600_000,
    );
    const figures = await tallyBatch(stack, endpointId, summary);
    const throttled = stack.emulator.control.throttled(endpointId);
    const refusedBy = stack.emulator.control.throttledBy(endpointId);
    const identities = submitIdentities((await handle.fetchHistory()).events ?? []);
    reportBatch(
      'batch-scale-out',
      figures,
      `${PROCESSES} worker processes, one SIGKILLed at ${killedAt} submissions; pages sent by ` +
        `${identities.size} of them in the last run; 429s from the service: ${JSON.stringify(refusedBy)}; ` +
        `${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain submits; ` +
        `${summary.runs} run(s), ${summary.historyEvents} history events (${(summary.historyEvents / ITEMS).toFixed(3)} per item)`,
      startedAt,
    );

    // The kill struck mid-batch, and more than one worker sent its pages.
    expect(killedAt).toBeLessThan(ITEMS);
    expect(identities.size).toBeGreaterThan(1);
    // The service refused no /run: the batch's sends stayed within its limit, all workers together.
    expect(throttled.run ?? 0).toBe(0);
    // Nor, but for a window's edge, /status: the watchers hand their windows on.
    expect(throttled.status ?? 0).toBeLessThan(ITEMS / 100);
    expectEveryItemCompletedOnce(figures, summary, ITEMS);
  }, 900_000);
});
