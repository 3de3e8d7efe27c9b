/**
 * A batch of 2,000 items on the real server on PostgreSQL while (a) the Temporal server is
 * SIGKILLed and started again, (b) PostgreSQL is stopped as in a crash and started again. Every
 * item completes with its output, the results file holds one line per item, and the service acted
 * on at most one /run per item.
 *
 * All items run on one endpoint (200 warm workers), so "submitted twice" is read from the
 * emulator's jobs: each item's input names its index, and two jobs with the same index would be
 * two submissions of that item.
 */
import { isDeepStrictEqual } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { awaitBatch, type BatchResultLine, readBatchResults } from '../../client/batches';
import {
  killTemporalServer,
  startPostgresAgain,
  startTemporalServer,
  stopPostgresAsInACrash,
} from '../../scripts/prod-temporal';
import { expectBatchSummaryAllCompleted, startScriptedBatch } from '../support/batch-scenarios';
import { batchItemOutput, instance, outage, type Stack, startStack, untilAnswered } from './support';

const ITEMS = 2_000;
const STRIKE_AFTER_SUBMISSIONS = 500;
const WORKERS = 200;

interface Cause {
  name: string;
  what: string;
  begin(): Promise<void>;
  end(): Promise<void>;
}

describe('reliability: a batch of 2,000 items through a restart (real server on PostgreSQL)', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  async function batchThrough(cause: Cause): Promise<void> {
    const startedAt = Date.now();
    // Service time is real time: webhook retries are the spec's 10 s apart, longer than a restart.
    stack = await startStack({ name: cause.name, timeScale: 1 });
    const worker = stack.startWorker();
    await worker.running;
    const { endpointId, handle } = await startScriptedBatch(stack, {
      name: cause.name,
      items: ITEMS,
      workers: WORKERS,
      sleepMs: 1_000,
      job: {
        // A page whose submit activity never answered keeps the jobs its heartbeat named; the
        // rest are uncertain: an orphan reports itself by webhook within this wait and is
        // adopted, and an item with no orphan (never sent) is sent again (README "Batches").
        uncertainSubmitWait: 30_000,
        onUncertainSubmit: 'resubmit',
        submitTimeout: 15_000,
      },
    });

    // Mid-batch, chosen by the service's count; down until every job the service has is finished.
    const live = stack;
    const down = await outage(
      live,
      { started: () => live.submissions(), settled: () => live.submissions() - live.runningAtService() },
      STRIKE_AFTER_SUBMISSIONS,
      cause,
    );
    expect(down.runningAtService).toBeGreaterThan(0);

    const summary = await untilAnswered(
      () => awaitBatch(live.client, { batch: handle }),
      Date.now() + 300_000,
    );

    // The service's side: one job per item, none twice, none missing.
    const jobsPerItem = new Map<number, number>();
    for (const job of live.control.jobs(endpointId)) {
      const index = (job.input?.output as { item?: number } | undefined)?.item;
      if (typeof index === 'number') jobsPerItem.set(index, (jobsPerItem.get(index) ?? 0) + 1);
    }
    const submittedTwice = [...jobsPerItem.values()].filter((count) => count > 1).length;
    const neverReached = ITEMS - jobsPerItem.size;

    // The results file: one line per item, each with its own output.
    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(live.client, { batch: summary, store: live.resultDir }))
      lines.push(line);
    const byIndex = new Map(lines.map((line) => [line.index, line]));
    const wrong = lines.filter(
      (line) => line.status !== 'COMPLETED' || !isDeepStrictEqual(line.output, batchItemOutput(line.index)),
    );
    const lost = ITEMS - (byIndex.size - new Set(wrong.map((line) => line.index)).size);

    const seconds = ((Date.now() - startedAt) / 1000).toFixed(0);
    console.log(
      `RELIABILITY ${cause.name}: ${ITEMS.toLocaleString('en-US')} items, ${lost} lost, ${submittedTwice} submitted twice, ${seconds} s ` +
        `(${summary.counts.completed} completed with the right output and one /run; ${cause.what} after ` +
        `${STRIKE_AFTER_SUBMISSIONS} submissions, down ${(down.downMs / 1000).toFixed(1)} s while the ` +
        `${down.runningAtService} running at the service finished; ${summary.submissions} submissions, ` +
        `${summary.uncertainSubmits} uncertain submits, ${summary.runs} run(s), ${summary.historyEvents} history events)`,
    );

    const firstWrong = JSON.stringify(wrong.slice(0, 3));
    expect(submittedTwice).toBe(0);
    expect(neverReached).toBe(0);
    expect(live.control.submissions(endpointId)).toBe(ITEMS);
    expectBatchSummaryAllCompleted(summary, ITEMS);
    expect(lines).toHaveLength(ITEMS);
    expect(byIndex.size).toBe(ITEMS);
    expect(wrong, firstWrong).toHaveLength(0);
    expect(lost).toBe(0);
  }

  it(`the Temporal server SIGKILLed and restarted mid-batch: ${ITEMS} items, none lost, none submitted twice`, async () => {
    await batchThrough({
      name: 'batch-temporal-restart',
      what: 'server SIGKILLed',
      begin: () => killTemporalServer(instance()),
      end: () => startTemporalServer(instance()),
    });
  });

  it(`PostgreSQL stopped as in a crash and started again mid-batch: ${ITEMS} items, none lost, none submitted twice`, async () => {
    await batchThrough({
      name: 'batch-postgres-restart',
      what: 'PostgreSQL stopped (immediate)',
      begin: async () => stopPostgresAsInACrash(instance()),
      end: () => startPostgresAgain(instance()),
    });
  });
});
