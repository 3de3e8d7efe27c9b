/**
 * The batch's child mode on the time-skipping server, with a fake serverlessJob bundled beside the
 * batch (batch-children-workflows.ts): the window (never more than maxConcurrency children open),
 * the tolerance by count, the summary and the results lines, pause / resume / a concurrency change,
 * cancel (the children are cancelled), and that no request or output enters the batch's history.
 * Continuing as new with children open is on the dev server
 * (test/integration/batch-children-continue.test.ts).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { type BatchInput, parseBatchInput } from '../../contracts/batch-input';
import type { BatchSummary } from '../../contracts/batch-summary';
import { parseJobWorkflowInput } from '../../contracts/job-input';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchConcurrencyUpdate,
} from '../../workflows/batch/batch-definitions';
import { historyText } from '../support/history';
import { failureOf, quietRuntime, withWorker } from '../support/workflow-harness';
import { fakeChildren } from './batch-children-fake';
import { type ChildFate, releaseChildSignal } from './batch-children-workflows';
import { batchSuite } from './batch-harness';
import { until } from './wait-for';

quietRuntime();

const input = (extra: Partial<BatchInput> = {}): BatchInput => ({
  endpointId: 'ep-1',
  items: { manifest: { key: 'items.jsonl' } },
  mode: 'children',
  ...extra,
});

describe('batch workflow: child mode', () => {
  const suite = batchSuite('batch-children', require.resolve('./batch-children-workflows.ts'));
  const { start } = suite;

  const broken = (i: number) => i % 7 === 3;
  const fates = (i: number): ChildFate => ({
    kind: broken(i) ? 'FAILED' : 'COMPLETED',
    ms: 1_000 + (i % 5) * 700,
  });

  it('runs a job workflow per item in a window of maxConcurrency, within the tolerance', async () => {
    const fake = fakeChildren(30, fates);
    const failing = Array.from({ length: 30 }, (_, i) => i).filter(broken);
    const { summary, history, batchId } = await withWorker(
      suite.env,
      suite.bundle,
      fake.activities,
      async (queue) => {
        const handle = await start(
          queue,
          input({ maxConcurrency: 4, failureTolerance: { count: failing.length } }),
        );
        const result = await handle.result();
        return { summary: result, history: await handle.fetchHistory(), batchId: handle.workflowId };
      },
    );
    expect(summary).toMatchObject({
      total: 30,
      counts: { completed: 30 - failing.length, failed: failing.length, uncertain: 0, rejected: 0 },
      failures: failing.length,
      notStarted: 0,
      submissions: 30,
      retries: failing.length,
      toleranceExceeded: false,
      cancelled: false,
      results: { key: 'batch-test' },
      cost: { amount: 0.25 * (30 - failing.length), currency: 'USD', items: 30 - failing.length },
    });
    // The window: full, never more.
    expect(fake.most()).toBe(4);
    expect(fake.started.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));

    // One line per item: completed ones with the output's reference, failed ones with the error.
    expect(fake.lines).toHaveLength(30);
    expect(new Set(fake.lines.map((line) => line.index)).size).toBe(30);
    for (const line of fake.lines) {
      if (broken(line.index)) {
        expect(line).toMatchObject({
          status: 'FAILED',
          jobId: `job-${line.index}`,
          attempts: 2,
          submissions: 1,
        });
        expect(line.error).toContain(`item ${line.index} is broken`);
      } else {
        expect(line).toMatchObject({
          status: 'COMPLETED',
          jobId: `job-${line.index}`,
          outputRef: { key: `out-${line.index}` },
          attempts: 1,
          submissions: 1,
          cost: 0.25,
        });
      }
    }

    // Each child: the batch's per-item options, its request by reference, outputs to the store.
    const child = fake.inputs.get(5) as Record<string, unknown>;
    expect(child).toMatchObject({
      endpointId: 'ep-1',
      requestRef: { manifestKey: 'batch-test/items.jsonl', index: 5 },
      outputInlineMaxBytes: 0,
    });
    expect(child).not.toHaveProperty('request');
    expect(parseJobWorkflowInput(child).ok).toBe(true);

    // The batch's history names children and references, never a request or an output.
    const text = historyText(history);
    expect(text).toContain(`${batchId}/item-29`);
    expect(text).toContain('"requestRef"');
    expect(text).toContain('"outputRef"');
    expect(text).not.toContain('"request"');
    expect(text).not.toContain('"output"');
  });

  it('on a route, hands the route to every child (each falls back on its own) and says where each ran', async () => {
    const fake = fakeChildren(6, () => ({ kind: 'COMPLETED', ms: 500 }));
    const route = {
      endpoints: [
        { endpointId: 'ep-dear', pricePerSecond: 0.002 },
        { endpointId: 'ep-cheap', pricePerSecond: 0.001 },
      ],
      queueDelayLimit: '30 seconds',
    };
    const { endpointId: _single, ...routed } = input({ maxConcurrency: 3 });
    const summary = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      (await start(queue, { ...routed, route })).result(),
    );
    expect(summary).toMatchObject({ total: 6, counts: { completed: 6 }, endpointId: 'ep-cheap' });
    const child = fake.inputs.get(2) as Record<string, unknown>;
    expect(child).not.toHaveProperty('endpointId');
    expect(child.route).toMatchObject({
      endpoints: [{ endpointId: 'ep-cheap' }, { endpointId: 'ep-dear' }],
      queueDelayLimit: 30_000,
    });
    expect(parseJobWorkflowInput(child).ok).toBe(true);
    expect(fake.lines.map((line) => line.endpointId)).toEqual(Array(6).fill('ep-cheap'));
  });

  it('fails past the tolerance with the summary; items not started are counted, every line kept', async () => {
    const fake = fakeChildren(30, fates);
    const failure = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      failureOf((await start(queue, input({ maxConcurrency: 3, failureTolerance: { count: 1 } }))).result()),
    );
    expect(failure.type).toBe('BatchToleranceExceeded');
    const carried = failure.details?.[0] as BatchSummary;
    expect(carried).toMatchObject({
      total: 30,
      toleranceExceeded: true,
      stoppedBecause: 'failure-tolerance',
    });
    expect(carried.counts.failed).toBeGreaterThanOrEqual(2);
    expect(carried.notStarted).toBeGreaterThan(0);
    expect(carried.counts.completed + carried.failures + carried.notStarted).toBe(30);
    expect(fake.lines).toHaveLength(carried.counts.completed + carried.failures);
    expect(fake.started).toHaveLength(carried.counts.completed + carried.failures);
  });

  it("stops starting children once the children's estimated cost reaches the budget", async () => {
    const fake = fakeChildren(10, () => ({ kind: 'COMPLETED', ms: 1_000 }));
    const failure = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      failureOf((await start(queue, input({ maxConcurrency: 2, budget: 1 }))).result()),
    );
    expect(failure.type).toBe('BatchBudgetExceeded');
    const carried = failure.details?.[0] as BatchSummary;
    // 0.25 a child: the fourth reaches the budget; the two in flight then still finish.
    expect(carried).toMatchObject({ budget: 1, budgetExceeded: true, stoppedBecause: 'budget', failures: 0 });
    expect(carried.counts.completed).toBeGreaterThanOrEqual(4);
    expect(carried.counts.completed).toBeLessThanOrEqual(5);
    expect(carried.cost.amount).toBe(0.25 * carried.counts.completed);
    expect(carried.notStarted).toBe(10 - carried.counts.completed);
  });

  it('lets no child start that would pass the budget, counting the children open at the mean cost', async () => {
    // Child 0 ends at once (0.25); children 1 to 7 stay open. Budget 1: the seven open are
    // expected to cost 1.75 more, so no child starts after them (the activities mode's rule).
    const fake = fakeChildren(12, (i) => ({ kind: 'COMPLETED', ms: i === 0 ? 1_000 : 60_000 }));
    const failure = await withWorker(suite.env, suite.bundle, fake.activities, async (queue) =>
      failureOf((await start(queue, input({ maxConcurrency: 8, budget: 1 }))).result()),
    );
    expect(failure.type).toBe('BatchBudgetExceeded');
    const carried = failure.details?.[0] as BatchSummary;
    expect(fake.started.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(carried).toMatchObject({
      budget: 1,
      budgetExceeded: true,
      stoppedBecause: 'budget',
      counts: { completed: 8 },
      notStarted: 4,
      cost: { amount: 2, items: 8 },
    });
  });

  it('pauses, resumes and changes its window while running', async () => {
    let hold = true;
    const fake = fakeChildren(10, () => (hold ? { kind: 'held', ms: 0 } : { kind: 'COMPLETED', ms: 500 }));
    await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ maxConcurrency: 2 }));
      await until(() => fake.open.size === 2, 'two children open');
      await handle.signal(pauseBatchSignal);
      // The window's rule holds for updates too.
      const refused = await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [5_000] }).then(
        () => undefined,
        (error: Error) => error,
      );
      expect(String((refused?.cause as Error | undefined)?.message)).toMatch(
        /at most 1000 in mode 'children'/,
      );
      expect(await handle.executeUpdate(setBatchConcurrencyUpdate, { args: [4] })).toBe(2);
      const first = [...fake.open];
      for (const index of first)
        await suite.env.client.workflow
          .getHandle(`${handle.workflowId}/item-${index}`)
          .signal(releaseChildSignal);
      await until(async () => (await handle.query(batchProgressQuery)).done === 2, 'the first two done');
      // Paused: nothing new started.
      expect(fake.started).toHaveLength(2);
      expect(await handle.query(batchProgressQuery)).toMatchObject({
        inFlight: 0,
        paused: true,
        maxConcurrency: 4,
      });
      hold = false;
      await handle.signal(resumeBatchSignal);
      const summary = await handle.result();
      expect(summary).toMatchObject({ total: 10, counts: { completed: 10 }, submissions: 10 });
    });
    expect(fake.most()).toBe(4);
  });

  it('cancelling the batch cancels its children and records them', async () => {
    const fake = fakeChildren(6, () => ({ kind: 'held', ms: 0 }));
    await withWorker(suite.env, suite.bundle, fake.activities, async (queue) => {
      const handle = await start(queue, input({ maxConcurrency: 3 }));
      await until(() => fake.open.size === 3, 'three children open');
      await handle.cancel();
      const error = await handle.result().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(WorkflowFailedError);
      expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
      for (const index of fake.started) {
        const child = await suite.env.client.workflow
          .getHandle(`${handle.workflowId}/item-${index}`)
          .describe();
        expect(child.status.name).toBe('CANCELLED');
      }
    });
    expect(fake.open.size).toBe(0);
    expect(fake.lines.map((line) => line.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  });

  it('refuses a window too large for child workflows, naming the field', () => {
    expect(parseBatchInput(input({ maxConcurrency: 1_001 }))).toMatchObject({
      ok: false,
      field: 'maxConcurrency',
      rule: expect.stringContaining("at most 1000 in mode 'children'"),
    });
    expect(parseBatchInput(input({ mode: 'activities', maxConcurrency: 5_000 })).ok).toBe(true);
    expect(parseBatchInput({ ...input(), mode: 'child' })).toMatchObject({ ok: false, field: 'mode' });
    expect(parseBatchInput(input({ job: { outputInlineMaxBytes: 100 } }))).toMatchObject({
      ok: false,
      field: 'job.outputInlineMaxBytes',
    });
    expect(
      parseJobWorkflowInput({
        endpointId: 'ep-1',
        request: { input: {} },
        requestRef: { manifestKey: 'k/items.jsonl', index: 0 },
      }),
    ).toMatchObject({
      ok: false,
      field: 'request',
      rule: 'exactly one of request and requestRef is required',
    });
    expect(
      parseJobWorkflowInput({ endpointId: 'ep-1', requestRef: { manifestKey: '../x', index: 0 } }),
    ).toMatchObject({ ok: false, field: 'requestRef.manifestKey' });
  });
});
