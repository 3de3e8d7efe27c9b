/**
 * A batch under a submit lease on the real stack (dev server, emulator over HTTP, real worker with
 * its webhook gateway, no mocks), under the fault mix (emulator/fault-mix.ts). Every
 * item completes with its own output, every uncertain submit is resolved (adopted or submitted
 * again after its lease), and the emulator shows exactly one completed job per item and no job
 * still live that the batch does not own. The jobs run longer than their lease, so a job whose
 * lease lapsed (deleted by the service) cannot have completed.
 *
 * BATCH_LEASE_ITEMS (default 200) sets the size; `npm run bench:batch -- --faults` runs 2,000.
 * Temporal's timers run in real time: the lease is the spec's minimum, 10 s, so the wait after an
 * uncertain submit (lease + webhook retry window + margin) is 40 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitBatch,
  type BatchResultLine,
  getBatchProgress,
  readBatchResults,
  startBatch,
} from '../../client/batches';
import { injectLeaseFaultMix } from '../../emulator/fault-mix';
import { eventually, type JobStack, startJobStack } from '../support/integration';

const ITEMS = Number(process.env.BATCH_LEASE_ITEMS ?? 200);
// Longer than the lease: a job deleted at its lease never completes.
const JOB_MS = 12_000;

describe('a batch under a submit lease (dev server, emulator over HTTP, real worker with webhooks)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'batch-lease', timeScale: 1, webhooks: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it(`the issue's fault mix on a batch of ${ITEMS}: every item completes with its output, none twice`, async () => {
    const { control } = stack;
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: ITEMS, flashBootType: 'FLASHBOOT' });
    const removeFaults = injectLeaseFaultMix(control, endpointId);
    const summary = await (async () => {
      const handle = await startBatch(
        stack.client,
        {
          endpointId,
          items: {
            inline: Array.from({ length: ITEMS }, (_, index) => ({
              input: { sleepMs: JOB_MS, output: { index } },
            })),
          },
          // Three uncertain submits in a row (0.1% each) would otherwise fail one item in a thousand.
          job: { submitLease: '10 seconds', maxSubmissions: 6 },
          maxConcurrency: ITEMS,
        },
        { workflowId: `batch-lease-${Date.now()}`, taskQueue: stack.taskQueue },
      );
      return awaitBatch(stack.client, { batch: handle });
    })().finally(removeFaults);

    expect(summary).toMatchObject({ total: ITEMS, counts: { completed: ITEMS }, failures: 0 });
    const { uncertainAdopted, resubmittedAfterLease, leaseLapses } = summary.lease;
    // Every uncertain submit was resolved: adopted, or sent again after its lease.
    expect(uncertainAdopted + resubmittedAfterLease).toBe(summary.uncertainSubmits);
    // 10% of /run dropped before processing: uncertain submits, all resolved by a new one.
    expect(summary.uncertainSubmits).toBeGreaterThan(0);

    const lines: BatchResultLine[] = [];
    for await (const line of readBatchResults(stack.client, {
      batch: summary,
      store: stack.workerEnv.RESULT_STORE_DIR as string,
    }))
      lines.push(line);
    expect(lines).toHaveLength(ITEMS);
    for (const line of lines)
      expect(line).toMatchObject({ status: 'COMPLETED', output: { index: line.index } });

    // The service: per item (its webhook URL names it) one completed job; nothing else still live;
    // every other job it made was deleted at its lease, unfinished.
    const live = control.jobs(endpointId);
    const completedPerItem = new Map<string, number>();
    for (const job of live) {
      if (job.status !== 'COMPLETED') continue;
      const key = job.webhook ?? job.id;
      completedPerItem.set(key, (completedPerItem.get(key) ?? 0) + 1);
    }
    expect(completedPerItem.size).toBe(ITEMS);
    expect([...completedPerItem].filter(([, n]) => n > 1)).toEqual([]);
    expect(live.filter((job) => job.status !== 'COMPLETED')).toEqual([]);
    expect(control.submissions(endpointId) - live.length).toBe(leaseLapses);
    console.log(
      `batch of ${ITEMS} under the fault mix: ${summary.elapsedMs} ms; completed ${summary.counts.completed}, ` +
        `failed ${summary.failures}; uncertain ${summary.uncertainSubmits} (adopted ${uncertainAdopted}, ` +
        `resubmitted after the lease ${resubmittedAfterLease}); lease lapses ${leaseLapses}; ` +
        `submissions ${summary.submissions} (${(summary.submissions / ITEMS).toFixed(3)} per item), ` +
        `emulator submissions ${control.submissions(endpointId)}`,
    );
  }, 600_000);

  it('a service-side delay: orphans that finish inside the lease are adopted, the others deleted and sent again', async () => {
    const { control } = stack;
    control.freeze();
    try {
      const quick = stack.endpoint({ workersMin: 3, workersMax: 3, flashBootType: 'FLASHBOOT' });
      const slow = stack.endpoint({ workersMin: 3, workersMax: 3, flashBootType: 'FLASHBOOT' });
      control.advance(1_000); // the workers boot
      // Every item's first submit is processed and its answer lost: three orphans per endpoint.
      control.injectFault({ operation: 'run', endpointId: quick, kind: 'drop-after', times: 3 });
      control.injectFault({ operation: 'run', endpointId: slow, kind: 'drop-after', times: 3 });
      const start = (endpointId: string, sleepMs: number) =>
        startBatch(
          stack.client,
          {
            endpointId,
            items: {
              inline: [0, 1, 2].map((index) => ({ input: { sleepMs, output: { endpointId, index } } })),
            },
            job: { submitLease: '10 seconds' },
          },
          { workflowId: `batch-delay-${endpointId}`, taskQueue: stack.taskQueue },
        );
      const adopted = await start(quick, 5_000);
      const resent = await start(slow, 30_000);
      for (const handle of [adopted, resent])
        await eventually(
          async () => (await getBatchProgress(stack.client, { batch: handle })).uncertainSubmits === 3,
        );
      expect(control.submissions(quick)).toBe(3);
      expect(control.submissions(slow)).toBe(3);
      const orphans = control.jobs(slow).map((job) => job.id);
      expect(orphans).toHaveLength(3);

      // 5 s of service time: the quick orphans finish inside their 10 s lease and report.
      control.advance(5_000);
      const adoptedSummary = await awaitBatch(stack.client, { batch: adopted });
      expect(adoptedSummary).toMatchObject({
        counts: { completed: 3 },
        submissions: 3,
        uncertainSubmits: 3,
        lease: { uncertainAdopted: 3, resubmittedAfterLease: 0 },
      });
      expect(control.submissions(quick)).toBe(3);

      // The lease ends: the slow orphans are deleted mid-run. After the webhook window the batch
      // sends again (a real 40 s timer), and the new jobs are extended at once by their submit.
      control.advance(5_000);
      for (const id of orphans)
        expect(control.job(id)).toMatchObject({ deleted: true, removedReason: 'ttl' });
      await eventually(() => control.submissions(slow) === 6, 120_000);
      await eventually(() => control.jobs(slow).every((job) => job.policy.ttl > 10_000), 30_000);
      control.advance(30_000);
      const resentSummary = await awaitBatch(stack.client, { batch: resent });
      expect(resentSummary).toMatchObject({
        counts: { completed: 3 },
        submissions: 6,
        uncertainSubmits: 3,
        lease: { uncertainAdopted: 0, resubmittedAfterLease: 3, leaseLapses: 0 },
      });
      const lines: BatchResultLine[] = [];
      for await (const line of readBatchResults(stack.client, {
        batch: resentSummary,
        store: stack.workerEnv.RESULT_STORE_DIR as string,
      }))
        lines.push(line);
      expect(lines.map((line) => line.index).sort()).toEqual([0, 1, 2]);
      for (const line of lines) {
        expect(line).toMatchObject({ status: 'COMPLETED', output: { endpointId: slow, index: line.index } });
        expect(orphans).not.toContain(line.jobId);
      }
      // The deleted orphans never completed; one completed job per item.
      for (const id of orphans) expect(control.job(id)?.status).toBe('IN_PROGRESS');
      expect(control.jobs(slow).filter((job) => job.status === 'COMPLETED')).toHaveLength(3);
    } finally {
      control.resume();
    }
  }, 300_000);
});
