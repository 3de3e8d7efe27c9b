/**
 * Bulk actions on the real stack (the shared dev server, the real worker, the emulator over HTTP):
 * a cancel by tag over three batches and single jobs leaves no job running at the service and no
 * workflow open, and nothing outside the selection touched; a dry run counts and samples and acts
 * on nothing; a retry starts each failed job exactly once more; a redrive runs the failed items of
 * each selected batch once, in one new batch per batch; a replay sends again exactly the events an
 * automation received in a time range, or only those of them whose runs failed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAutomation } from '../../activities/automation';
import { getAutomationState, sendEvent } from '../../client/automations';
import { awaitBatch, batchFailureOf, startBatch } from '../../client/batches';
import { awaitBulkAction, dryRunBulkAction, startBulkAction } from '../../client/bulk';
import { runCli } from '../../client/cli';
import { startJob } from '../../client/jobs';
import { tagsKey } from '../../workflows/shared/search-attributes';
import {
  eventually,
  HOUR_MS,
  hourLongJob,
  type JobStack,
  jobsInProgress,
  startJobStack,
} from '../support/integration';

const NO_LEASE = { submitLease: false } as const;
const BATCHES = 3;
const ITEMS_PER_BATCH = 50;
const SINGLE_JOBS = 50;

function runInput(data: unknown): Record<string, unknown> {
  const fails = typeof data === 'object' && data !== null && (data as { fail?: boolean }).fail === true;
  return { output: data ?? null, ...(fails ? { fail: 'the event asks its run to fail' } : {}) };
}

/** The endpoint the replayed automation's jobs run on, known once the stack runs. */
let replayEndpoint = '';
const replayed = defineAutomation({
  name: 'bulk-replayed',
  run: (events) => ({
    kind: 'job',
    input: {
      endpointId: replayEndpoint,
      // An event whose data says `fail` makes its job fail at the service.
      request: { input: runInput(events[0]?.data) },
      ...NO_LEASE,
    },
  }),
});

let stack: JobStack;
beforeAll(async () => {
  stack = await startJobStack({ name: 'bulk', timeScale: 1, automations: [replayed] });
  replayEndpoint = stack.endpoint({ workersMin: 0, workersMax: 20 });
}, 300_000);
afterAll(async () => {
  await stack?.close();
});

const uniqueTag = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

async function openWith(tag: string): Promise<number> {
  return (await stack.client.workflow.count(`ServerlessTags = "${tag}" AND ExecutionStatus = "Running"`))
    .count;
}

describe('bulk actions', () => {
  it('cancel by tag: three batches and single jobs, every remote job cancelled, no workflow open, the rest untouched', async () => {
    const tag = uniqueTag('cancel');
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 400 });
    const batchIds = Array.from({ length: BATCHES }, (_, index) => `bulk-cancel-batch-${index}-${tag}`);
    for (const [index, workflowId] of batchIds.entries()) {
      const inline = Array.from({ length: ITEMS_PER_BATCH }, (_, item) => ({
        input: { sleepMs: HOUR_MS, output: { batch: index, item } },
      }));
      await startBatch(
        stack.client,
        {
          endpointId,
          items: { inline },
          job: NO_LEASE,
          maxConcurrency: ITEMS_PER_BATCH,
          pageSize: ITEMS_PER_BATCH,
        },
        { workflowId, taskQueue: stack.taskQueue, tags: [tag, 'nightly'] },
      );
    }
    for (let index = 0; index < SINGLE_JOBS; index++) {
      await startJob(stack.client, hourLongJob(endpointId, index, undefined), {
        workflowId: `bulk-cancel-job-${index}-${tag}`,
        taskQueue: stack.taskQueue,
        tags: [tag],
      });
    }
    // One job outside the selection (no tag), on the same endpoint: it must keep running.
    const bystander = await startJob(stack.client, hourLongJob(endpointId, 999, undefined), {
      workflowId: `bulk-cancel-bystander-${tag}`,
      taskQueue: stack.taskQueue,
    });
    const total = BATCHES * ITEMS_PER_BATCH + SINGLE_JOBS + 1;
    await jobsInProgress(stack.control, endpointId, total);
    await eventually(
      async () => ((await openWith(tag)) === BATCHES + SINGLE_JOBS ? true : undefined),
      60_000,
    );

    // The dry run, through the CLI: the count and a sample, and nothing cancelled.
    let out = '';
    const code = await runCli(
      ['--task-queue', stack.taskQueue, 'bulk', 'cancel', '--tag', tag, '--dry-run', '--sample', '5'],
      { out: (text) => (out += text), err: () => undefined },
      async () => stack.client,
    );
    expect(code).toBe(0);
    const plan = JSON.parse(out) as { count: number; sample: Array<{ workflowId: string }>; query: string };
    expect(plan.count).toBe(BATCHES + SINGLE_JOBS);
    expect(plan.sample).toHaveLength(5);
    expect(plan.query).toContain(`ServerlessTags = "${tag}"`);
    expect(stack.control.jobs(endpointId).filter((job) => job.status === 'IN_PROGRESS')).toHaveLength(total);

    const handle = await startBulkAction(
      stack.client,
      'cancel',
      { tags: [tag] },
      { taskQueue: stack.taskQueue, pageSize: 20 },
    );
    const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
    expect(progress).toMatchObject({
      done: true,
      seen: BATCHES + SINGLE_JOBS,
      acted: BATCHES + SINGLE_JOBS,
      failed: 0,
    });
    expect(progress.pages).toBeGreaterThanOrEqual(3);

    await eventually(async () => ((await openWith(tag)) === 0 ? true : undefined), 120_000);
    const jobs = stack.control.jobs(endpointId);
    const running = jobs.filter((job) => job.status === 'IN_PROGRESS' || job.status === 'IN_QUEUE');
    // Only the bystander's job runs on; every job of the selection was cancelled at the service.
    expect(running.map((job) => (job.input as { output?: { index?: number } }).output?.index)).toEqual([999]);
    expect(jobs.filter((job) => job.status === 'CANCELLED')).toHaveLength(total - 1);
    expect((await bystander.describe()).status.name).toBe('RUNNING');
    await bystander.cancel();
  }, 600_000);

  it('retry: each failed job of the selection starts once more, under its own id; completed ones are left alone', async () => {
    const tag = uniqueTag('retry');
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 50 });
    const ids = Array.from({ length: 6 }, (_, index) => `bulk-retry-${index}-${tag}`);
    for (const [index, workflowId] of ids.entries()) {
      // Even ones fail (their first attempt at the service), odd ones complete.
      const input = { output: { index }, ...(index % 2 === 0 ? { failTimes: 1 } : {}) };
      const handle = await startJob(
        stack.client,
        { endpointId, request: { input }, ...NO_LEASE },
        { workflowId, taskQueue: stack.taskQueue, tags: [tag] },
      );
      await handle.result().catch(() => undefined);
    }
    const failedIds = ids.filter((_, index) => index % 2 === 0);
    const closed = `ServerlessTags = "${tag}" AND ExecutionStatus != "Running"`;
    await eventually(
      async () => ((await stack.client.workflow.count(closed)).count === ids.length ? true : undefined),
      60_000,
    );
    expect((await dryRunBulkAction(stack.client, 'retry', { tags: [tag] })).count).toBe(failedIds.length);

    const handle = await startBulkAction(
      stack.client,
      'retry',
      { tags: [tag] },
      { taskQueue: stack.taskQueue },
    );
    const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
    expect(progress).toMatchObject({ seen: failedIds.length, acted: failedIds.length, failed: 0 });
    // Each failed job has one run more (its retry, a new job at the service); the others none.
    for (const workflowId of ids) {
      const expected = failedIds.includes(workflowId) ? 2 : 1;
      await eventually(
        async () =>
          (await stack.client.workflow.count(`WorkflowId = "${workflowId}"`)).count === expected
            ? true
            : undefined,
        60_000,
      );
    }
    // The retries run to their end: a new job each at the service.
    for (const workflowId of failedIds) {
      const retried = stack.client.workflow.getHandle(workflowId);
      await retried.result().catch(() => undefined);
      const runs = [];
      for await (const run of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
        runs.push(run.runId);
      expect(new Set(runs).size).toBe(2);
    }
    expect(stack.control.submissions(endpointId)).toBe(ids.length + failedIds.length);
    // A second retry action over the same selection while the retries run (or after they failed
    // again) acts only on runs that are failed and latest: never twice on one run.
    const again = await startBulkAction(
      stack.client,
      'retry',
      { tags: [tag] },
      { taskQueue: stack.taskQueue },
    );
    const second = await awaitBulkAction(stack.client, { workflowId: again.workflowId });
    expect(second.failed).toBe(0);
  }, 300_000);

  it('redrive: the failed items of each selected batch, once, in one new batch per batch', async () => {
    const tag = uniqueTag('redrive');
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 50 });
    const failingPerBatch = [2, 3, 4];
    const batchIds: string[] = [];
    for (const [index, failing] of failingPerBatch.entries()) {
      const inline = Array.from({ length: 10 }, (_, item) => ({
        input: { output: { batch: index, item }, ...(item < failing ? { fail: `item ${item} fails` } : {}) },
      }));
      const workflowId = `bulk-redrive-${index}-${tag}`;
      batchIds.push(workflowId);
      const handle = await startBatch(
        stack.client,
        { endpointId, items: { inline }, job: NO_LEASE, failureTolerance: { count: 100 } },
        { workflowId, taskQueue: stack.taskQueue, tags: [tag] },
      );
      await awaitBatch(stack.client, { batch: handle }).catch((error: unknown) => {
        if (!batchFailureOf(error)) throw error;
      });
    }
    const closed = `ServerlessTags = "${tag}" AND ExecutionStatus != "Running"`;
    await eventually(
      async () => ((await stack.client.workflow.count(closed)).count === 3 ? true : undefined),
      60_000,
    );
    const before = stack.control.submissions(endpointId);
    expect(before).toBe(30);

    const handle = await startBulkAction(
      stack.client,
      'redrive',
      { tags: [tag] },
      { taskQueue: stack.taskQueue },
    );
    const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
    expect(progress).toMatchObject({ seen: 3, acted: 3, failed: 0 });
    for (const [index, batchId] of batchIds.entries()) {
      const redriven = await awaitBatch(stack.client, {
        batch: `${batchId}-redrive-${handle.workflowId}`,
      }).catch((error: unknown) => batchFailureOf(error)?.summary);
      expect(redriven?.total).toBe(failingPerBatch[index]);
    }
    // Exactly the failed items ran again, once each.
    expect(stack.control.submissions(endpointId)).toBe(before + 2 + 3 + 4);
  }, 300_000);

  it('replay: the events an automation received in a time range, sent again once each, and no others', async () => {
    const key = uniqueTag('key');
    // Tags on sendEvent land on the automation's workflow when an event starts it.
    const target = { automation: 'bulk-replayed', key, taskQueue: stack.taskQueue, tags: [key] };
    const received = async (count: number) =>
      eventually(async () => {
        const state = await getAutomationState(stack.client, { automation: 'bulk-replayed', key }).catch(
          () => undefined,
        );
        return state && state.counters.received === count && state.counters.runsStarted === count
          ? state
          : undefined;
      }, 60_000);
    const from = new Date().toISOString();
    for (const id of ['a', 'b', 'c']) await sendEvent(stack.client, { id, data: { id } }, target);
    await received(3);
    const to = new Date().toISOString();
    const automationRun = await stack.client.workflow.getHandle(`automation:bulk-replayed:${key}`).describe();
    expect(automationRun.typedSearchAttributes.get(tagsKey)).toEqual([key]);
    for (const id of ['d', 'e']) await sendEvent(stack.client, { id, data: { id } }, target);
    await received(5);
    await eventually(() => (stack.control.submissions(replayEndpoint) === 5 ? true : undefined), 60_000);

    const handle = await startBulkAction(
      stack.client,
      'replay',
      { automation: 'bulk-replayed', automationKey: key },
      { taskQueue: stack.taskQueue, window: { from, to } },
    );
    const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
    expect(progress).toMatchObject({ seen: 1, acted: 1, failed: 0 });
    const state = await received(8);
    expect(state.counters.duplicates).toBe(0);
    await eventually(() => (stack.control.submissions(replayEndpoint) === 8 ? true : undefined), 60_000);
    // The three replayed, not the two after the range: their jobs answer with the events' data.
    const outputs = stack.control
      .jobs(replayEndpoint, { removed: true })
      .map((job) => (job.input as { output?: { id?: string } }).output?.id)
      .sort();
    expect(outputs).toEqual(['a', 'a', 'b', 'b', 'c', 'c', 'd', 'e']);
  }, 300_000);

  it('replay of failed runs: of the events in a time range, exactly those whose runs failed start again, once each', async () => {
    const key = uniqueTag('key');
    const target = { automation: 'bulk-replayed', key, taskQueue: stack.taskQueue, tags: [key] };
    // Every run has ended (failed or completed), so which failed is known before the replay.
    const ended = async (received: number, failed: number, completed: number) =>
      eventually(async () => {
        const state = await getAutomationState(stack.client, { automation: 'bulk-replayed', key }).catch(
          () => undefined,
        );
        const counters = state?.counters;
        return counters &&
          counters.received === received &&
          counters.runsFailed === failed &&
          counters.runsCompleted === completed
          ? state
          : undefined;
      }, 60_000);
    const from = new Date().toISOString();
    // In the range: a and c fail, b and d complete.
    for (const [id, fail] of [
      ['a', true],
      ['b', false],
      ['c', true],
      ['d', false],
    ] as const)
      await sendEvent(stack.client, { id, data: { id, fail, key } }, target);
    await ended(4, 2, 2);
    const to = new Date().toISOString();
    // After the range: e fails, and is not replayed.
    await sendEvent(stack.client, { id: 'e', data: { id: 'e', fail: true, key } }, target);
    await ended(5, 3, 2);
    const before = stack.control.submissions(replayEndpoint);

    const handle = await startBulkAction(
      stack.client,
      'replay',
      { automation: 'bulk-replayed', automationKey: key },
      { taskQueue: stack.taskQueue, window: { from, to, onlyFailed: true } },
    );
    const progress = await awaitBulkAction(stack.client, { workflowId: handle.workflowId });
    expect(progress).toMatchObject({ seen: 1, acted: 1, failed: 0 });
    // The two failed events run again (and fail again, as their data says): nothing else starts.
    const state = await ended(7, 5, 2);
    expect(state.counters.runsStarted).toBe(7);
    expect(state.counters.duplicates).toBe(0);
    expect(stack.control.submissions(replayEndpoint)).toBe(before + 2);
    const outputs = stack.control
      .jobs(replayEndpoint, { removed: true })
      .map((job) => (job.input as { output?: { id?: string; key?: string } }).output)
      .filter((output) => output?.key === key)
      .map((output) => output?.id)
      .sort();
    expect(outputs).toEqual(['a', 'a', 'b', 'c', 'c', 'd', 'e']);
  }, 300_000);
});
