/**
 * Many workloads on one endpoint, one worker, the worker's /run limit at 20 requests per 10 s
 * (the emulator at time scale 1: the limits are counted in real seconds on both sides). The
 * endpoint's gate (workflows/endpoint/endpoint-gate.ts) holds one window for all of them:
 * - three batches and single jobs started together, offering three times what a window holds, all
 *   finish, each item submitted once (each batch booking the whole window for itself stalled);
 * - a priority-1 job beside a priority-5 backfill of the same tenant goes in the next window, ahead
 *   of the backfill's pages that asked before it, whether started on the backfill's task queue or
 *   on another the worker polls with a Temporal worker of its own (TEMPORAL_EXTRA_TASK_QUEUES);
 * - two tenants of weights 1 and 3 share the window one to three;
 * - a burst of jobs started at once, more than the server lets wait on one workflow, all go once;
 * - once the endpoint has all its workers, the service's queue holds one job per worker, so a
 *   priority-1 job sent beside a backfill waits behind at most that many;
 * - a job or a batch on a paused endpoint waits in its workflow, trying again as long as the pause
 *   lasts, and goes once the endpoint resumes.
 * Each waits on the gate's own view (its query), never on time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBatch, cancelBatch, startBatch } from '../../client/batches';
import { getEndpointLimits, setEndpointLimits } from '../../client/endpoint-limits';
import { awaitJob } from '../../client/jobs';
import type { GateView } from '../../contracts/endpoint-gate';
import { eventually, type JobStack, startJobStack } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

const RUN_LIMIT = 20;
const BATCHES = 3;
const ITEMS = 20;
const JOBS = 3;
// A task queue the worker also polls (TEMPORAL_EXTRA_TASK_QUEUES), with a Temporal worker of its own.
const LANE = uniqueTaskQueue('shared-endpoint-lane');

describe('many workloads on one endpoint', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({
      name: 'shared-endpoint',
      timeScale: 1,
      webhooks: true,
      workerEnv: {
        SERVERLESS_RATE_LIMITS: JSON.stringify({ run: { perTenSeconds: RUN_LIMIT } }),
        TEMPORAL_EXTRA_TASK_QUEUES: LANE,
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  // Repeated with more, smaller batches: together each mix offers twice what a window holds.
  it.each([
    { batchCount: BATCHES, items: ITEMS, jobCount: JOBS },
    { batchCount: 10, items: 4, jobCount: 5 },
  ])(
    '$batchCount batches and $jobCount single jobs started together all finish, each item submitted once',
    async ({ batchCount, items, jobCount }) => {
      const endpointId = stack.endpoint({ workersMin: 10, workersMax: 10 });
      const batches = await Promise.all(
        Array.from({ length: batchCount }, (_, batch) =>
          startBatch(
            stack.client,
            {
              endpointId,
              items: {
                inline: Array.from({ length: items }, (_, i) => ({
                  input: { sleepMs: 50, output: { batch, i } },
                })),
              },
              maxConcurrency: items,
            },
            { workflowId: `shared-endpoint-${batch}-${Date.now()}`, taskQueue: stack.taskQueue },
          ),
        ),
      );
      const jobs = await Promise.all(
        Array.from({ length: jobCount }, (_, job) =>
          stack.start(
            { endpointId, request: { input: { sleepMs: 50, output: { job } } } },
            { label: 'single' },
          ),
        ),
      );

      const summaries = await Promise.all(batches.map((batch) => awaitBatch(stack.client, { batch })));
      for (const summary of summaries) {
        expect(summary).toMatchObject({ total: items, counts: { completed: items }, submissions: items });
      }
      const outputs = await Promise.all(jobs.map((job) => awaitJob(stack.client, { job })));
      expect(outputs.map((output) => output.output)).toEqual(
        Array.from({ length: jobCount }, (_, job) => ({ job })),
      );
      expect(stack.control.submissions(endpointId)).toBe(batchCount * items + jobCount);
    },
    240_000,
  );

  it('takes a burst of jobs started at once on one endpoint, more than the server lets wait on one workflow: each submitted once', async () => {
    // The Temporal server holds at most 10 updates in flight on one workflow: the gate answers each
    // ask at once, and its callers ask again when it says (or, refused, a moment later).
    const endpointId = stack.endpoint({ workersMin: 10, workersMax: 10 });
    const burst = 2 * RUN_LIMIT + 5;
    const jobs = await Promise.all(
      Array.from({ length: burst }, (_, job) =>
        stack.start({ endpointId, request: { input: { sleepMs: 50, output: { job } } } }, { label: 'burst' }),
      ),
    );
    const results = await Promise.all(jobs.map((job) => awaitJob(stack.client, { job })));
    expect(results.map((result) => result.output)).toEqual(
      Array.from({ length: burst }, (_, job) => ({ job })),
    );
    expect(stack.control.submissions(endpointId)).toBe(burst);
  }, 240_000);

  it('keeps a job started on a paused endpoint waiting in its workflow, each try leaving its worker slot at once, and sends it once the endpoint resumes', async () => {
    const endpointId = stack.endpoint({ workersMin: 1, workersMax: 1 });
    await setEndpointLimits(stack.client, endpointId, { paused: true }, { taskQueue: stack.taskQueue });
    const job = await stack.start(
      { endpointId, request: { input: { sleepMs: 50, output: { paused: 'then resumed' } } } },
      { label: 'paused' },
    );
    // Each try is a submit activity that the gate answered "paused" at once: it left its worker
    // slot and failed, and the workflow tries again later.
    const pausedTries = () =>
      job
        .fetchHistory()
        .then(
          (history) =>
            (history.events ?? []).filter((event) =>
              event.activityTaskFailedEventAttributes?.failure?.message?.includes('is paused at its gate'),
            ).length,
        );
    await eventually(
      async () => ((await pausedTries()) >= 3 ? true : undefined),
      60_000,
      'three tries while paused',
    );
    expect(stack.control.submissions(endpointId)).toBe(0);
    await setEndpointLimits(stack.client, endpointId, { paused: false }, { taskQueue: stack.taskQueue });
    expect((await awaitJob(stack.client, { job })).output).toEqual({ paused: 'then resumed' });
    expect(stack.control.submissions(endpointId)).toBe(1);
  }, 120_000);

  it('holds a batch started on a paused endpoint in its workflow, each page leaving its worker slot at once, and sends each item once the endpoint resumes', async () => {
    const endpointId = stack.endpoint({ workersMin: 2, workersMax: 2 });
    await setEndpointLimits(stack.client, endpointId, { paused: true }, { taskQueue: stack.taskQueue });
    const items = 4;
    const batch = await startBatch(
      stack.client,
      {
        endpointId,
        items: {
          inline: Array.from({ length: items }, (_, i) => ({ input: { sleepMs: 50, output: { i } } })),
        },
        pageSize: 2,
      },
      { workflowId: `shared-endpoint-paused-batch-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    // While paused, every page comes back unsent at the gate's first answer.
    const pagesAnswered = async () => {
      const events = (await batch.fetchHistory()).events ?? [];
      const pages = new Set(
        events
          .filter(
            (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'submitBatchPage',
          )
          .map((event) => event.eventId?.toString()),
      );
      return events.filter((event) =>
        pages.has(event.activityTaskCompletedEventAttributes?.scheduledEventId?.toString()),
      ).length;
    };
    await eventually(
      async () => ((await pagesAnswered()) >= 3 ? true : undefined),
      60_000,
      'three pages answered while paused',
    );
    expect(stack.control.submissions(endpointId)).toBe(0);
    await setEndpointLimits(stack.client, endpointId, { paused: false }, { taskQueue: stack.taskQueue });
    expect(await awaitBatch(stack.client, { batch })).toMatchObject({
      total: items,
      counts: { completed: items },
      submissions: items,
    });
    expect(stack.control.submissions(endpointId)).toBe(items);
  }, 120_000);

  /** The gate's view once `check` holds for it. */
  const gateWhen = (endpointId: string, check: (view: GateView) => boolean, what: string) =>
    eventually(
      async () => {
        const view = await getEndpointLimits(stack.client, endpointId);
        return view !== undefined && check(view) ? view : undefined;
      },
      60_000,
      what,
    );
  const keyOf = (view: GateView, key: string) => view.keys.find((entry) => entry.fairnessKey === key);

  // The job started on the worker's extra task queue: the endpoint's one gate holds the window for
  // the work of every queue.
  it.each([
    { where: 'on the same task queue', lane: false },
    { where: 'on a task queue of its own', lane: true },
  ])(
    "sends a priority-1 job $where in the next window, ahead of a backfill's pages that asked before it",
    async ({ lane }) => {
      const endpointId = stack.endpoint({ workersMin: 10, workersMax: 10 });
      const backfill = await startBatch(
        stack.client,
        {
          endpointId,
          items: {
            inline: Array.from({ length: 3 * RUN_LIMIT }, (_, i) => ({
              input: { sleepMs: 50, output: { i } },
            })),
          },
          pageSize: RUN_LIMIT,
          maxConcurrency: 3 * RUN_LIMIT,
          priority: 5,
          fairnessKey: 'tenant-a',
        },
        { workflowId: `shared-endpoint-backfill-${Date.now()}`, taskQueue: stack.taskQueue },
      );
      // The first window is the backfill's; its next page waits for the next.
      await gateWhen(
        endpointId,
        (view) =>
          (keyOf(view, 'tenant-a')?.granted ?? 0) >= RUN_LIMIT && (view.waitingByPriority['5'] ?? 0) > 0,
        'the backfill has the first window and waits for the next',
      );
      const job = await stack.start(
        {
          endpointId,
          request: { input: { sleepMs: 50, output: { interactive: true } } },
          priority: 1,
          fairnessKey: 'tenant-a',
        },
        { label: 'interactive', ...(lane ? { taskQueue: LANE } : {}) },
      );
      await gateWhen(
        endpointId,
        (view) => (view.waitingByPriority['1'] ?? 0) > 0,
        'the job waits at the gate',
      );
      await awaitJob(stack.client, { job });
      await awaitBatch(stack.client, { batch: backfill });

      const jobs = stack.control.jobs(endpointId);
      const interactive = jobs.find(
        (entry) =>
          (entry.input as { output?: unknown }).output !== undefined &&
          'interactive' in (entry.input as { output: object }).output,
      );
      expect(interactive).toBeDefined();
      const before = jobs.filter(
        (entry) => entry !== interactive && entry.submittedAt < (interactive?.submittedAt ?? 0),
      );
      // In the second window: behind the first window's 20, ahead of at least one of the second's
      // page (first come, first served would have sent the whole page, then the job in the third).
      expect(before.length).toBeGreaterThanOrEqual(RUN_LIMIT);
      expect(before.length).toBeLessThan(2 * RUN_LIMIT);
    },
    240_000,
  );

  it("holds the service's queue to one job per worker once the endpoint has all its workers: a priority-1 job waits behind at most that", async () => {
    // Two workers and jobs of 2 s take 10 jobs a window; the window grants 20. Without the queue
    // held the backfill's jobs pile up at the service, and a job sent later waits behind them all.
    const workers = 2;
    const endpointId = stack.endpoint({ workersMin: workers, workersMax: workers });
    const backfill = await startBatch(
      stack.client,
      {
        endpointId,
        items: {
          inline: Array.from({ length: 26 }, (_, i) => ({ input: { sleepMs: 2_000, output: { i } } })),
        },
        pageSize: RUN_LIMIT,
        maxConcurrency: 26,
        priority: 5,
      },
      { workflowId: `shared-endpoint-saturated-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    // The gate lets the service hold a job per idle worker and one more per worker in its queue,
    // and holds the rest of the backfill in Temporal.
    await gateWhen(
      endpointId,
      (view) =>
        view.serviceQueue?.room !== undefined &&
        view.serviceQueue.inQueue <= workers &&
        (view.waitingByPriority['5'] ?? 0) > 0,
      "the backfill waits at the gate while the service's queue is full",
    );
    const job = await stack.start(
      { endpointId, request: { input: { sleepMs: 50, output: { interactive: true } } }, priority: 1 },
      { label: 'interactive' },
    );
    await awaitJob(stack.client, { job });
    await awaitBatch(stack.client, { batch: backfill });

    const jobs = stack.control.jobs(endpointId);
    const interactive = jobs.find(
      (entry) => 'interactive' in ((entry.input as { output?: object }).output ?? {}),
    );
    expect(interactive).toBeDefined();
    const sentAt = interactive?.submittedAt ?? 0;
    // The jobs waiting at the service when it was sent: the ones it waited behind for a worker.
    const ahead = jobs.filter(
      (entry) =>
        entry !== interactive && entry.submittedAt < sentAt && (entry.startedAt ?? Infinity) > sentAt,
    );
    expect(ahead.length).toBeLessThanOrEqual(workers);
    expect(stack.control.submissions(endpointId)).toBe(27);
  }, 240_000);

  it('shares the window between two tenants by their weights, one to three', async () => {
    const endpointId = stack.endpoint({ workersMin: 10, workersMax: 10 });
    const tenants = [
      ['tenant-light', 1],
      ['tenant-heavy', 3],
    ] as const;
    const batches = await Promise.all(
      tenants.map(([fairnessKey, fairnessWeight]) =>
        startBatch(
          stack.client,
          {
            endpointId,
            items: {
              inline: Array.from({ length: 200 }, (_, i) => ({ input: { sleepMs: 50, output: { i } } })),
            },
            // Each tenant asks for more than a window holds (two pages of a window each), so that
            // the gate, not the tenants' own pace, decides the shares.
            pageSize: RUN_LIMIT,
            maxConcurrency: 200,
            fairnessKey,
            fairnessWeight,
          },
          { workflowId: `shared-endpoint-${fairnessKey}-${Date.now()}`, taskQueue: stack.taskQueue },
        ),
      ),
    );
    const total = (gate: GateView) => gate.keys.reduce((sum, key) => sum + key.granted, 0);
    const granted = (gate: GateView, key: string) => keyOf(gate, key)?.granted ?? 0;
    // The first windows settle who starts where (a key that comes second starts level with the
    // first); the shares are read over the next four windows.
    const from = await gateWhen(endpointId, (gate) => total(gate) >= 2 * RUN_LIMIT, 'two windows granted');
    const to = await gateWhen(endpointId, (gate) => total(gate) >= total(from) + 4 * RUN_LIMIT, 'four more');
    await Promise.all(batches.map((batch) => cancelBatch(stack.client, { batch })));
    const light = granted(to, 'tenant-light') - granted(from, 'tenant-light');
    const heavy = granted(to, 'tenant-heavy') - granted(from, 'tenant-heavy');
    expect(heavy / (light + heavy)).toBeLessThanOrEqual(0.825);
  }, 240_000);
});
