/**
 * The pipeline workflow on the time-skipping server with mocked activities (a fake service per
 * stage's endpoint): a stage's failures past its tolerance stop every stage (pieces waiting end
 * not started, items never read are counted) and fail the pipeline with its summary; within the
 * tolerance every piece ends with its line, its stage named; a transform's failure ends its piece
 * at its stage; a webhook is adopted as an orphan only by the stage its job belongs to. End to end on
 * the emulator: test/integration/pipeline.test.ts.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchActivities } from '../../activities/batch';
import type { ItemChange, SubmitItemResult } from '../../contracts/batch-types';
import type { PipelineInput } from '../../contracts/pipeline-input';
import type { PipelineResultLine, PipelineSummary } from '../../contracts/pipeline-types';
import { batchWebhooksSignal } from '../../workflows/batch/batch-definitions';
import type { serverlessPipeline } from '../../workflows/pipeline/pipeline';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows, failureOf, quietRuntime, withWorker } from '../support/workflow-harness';

quietRuntime();

/** Items 0..total-1; `fails(stage endpoint, origin)`: its job FAILED there; transforms by `parts`. */
function fakeStages(
  total: number,
  fails: (endpointId: string, origin: number) => boolean,
  parts: (origin: number) => number | 'throws' = () => 1,
) {
  const lines: PipelineResultLine[] = [];
  /** Per endpoint, the pieces submitted ("origin" or "origin.part"). */
  const submits = new Map<string, string[]>();
  /** The item each job was submitted for, by job id. */
  const origins = new Map<string, number>();
  const never = async () => {
    throw new Error('not used by these pipelines');
  };
  const activities: BatchActivities = {
    async stageBatchItems() {
      return { batchKey: 'pipeline-test', manifestKey: 'pipeline-test/items.jsonl', total };
    },
    async submitBatchPage({ endpointId, indexes, pipeline }) {
      expect(pipeline?.pieces).toHaveLength(indexes.length);
      const pieces = (pipeline?.pieces ?? []).map((piece) => piece.join('.'));
      submits.set(endpointId, [...(submits.get(endpointId) ?? []), ...pieces]);
      indexes.forEach((i, k) => {
        origins.set(`${endpointId}-${i}`, pipeline?.pieces[k]?.[0] as number);
      });
      return { results: indexes.map((i): SubmitItemResult => ({ i, id: `${endpointId}-${i}` })) };
    },
    async watchBatchJobs({ endpointId, items, linePerItem }) {
      expect(linePerItem).toBe(true);
      const changes = items.map(
        ([i, jobId]): ItemChange => ({
          i,
          status: fails(endpointId, origins.get(jobId) as number) ? 'FAILED' : 'COMPLETED',
          at: Date.now(),
          // Each run's estimated cost: 1.
          cost: 1,
        }),
      );
      return { changes, running: 0 };
    },
    async transformPipelinePieces({ pieces }) {
      const answers = pieces.map(({ origin }) => {
        const made = parts(origin);
        return made === 'throws'
          ? { failed: `transform "split": item ${origin} has no scenes` }
          : { parts: made };
      });
      return { answers };
    },
    async recordPipelineLines({ lines: written }) {
      lines.push(...written);
    },
    extendBatchLeases: never,
    retryBatchJobs: never,
    cancelBatchJobs: never,
    recordBatchResults: never,
    stagePipelineRedrive: never,
    readPipelineRedriveList: never,
  } as BatchActivities;
  return { activities, lines, submits };
}

const JOB = { submitLease: false, polling: { initialInterval: 100, maxInterval: 100 } } as const;

const input = (extra: Partial<PipelineInput> = {}): PipelineInput => ({
  items: { manifest: { key: 'items.jsonl' } },
  stages: [
    { name: 'detect', endpointId: 'ep-detect', maxConcurrency: 4, job: JOB },
    {
      name: 'crop',
      endpointId: 'ep-crop',
      maxConcurrency: 2,
      buffer: 2,
      job: JOB,
      transform: { name: 'split' },
    },
    {
      name: 'upscale',
      endpointId: 'ep-upscale',
      maxConcurrency: 2,
      job: JOB,
      map: { input: '$.previous.output' },
    },
  ],
  pageSize: 2,
  ...extra,
});

describe('pipeline workflow', () => {
  let env: Awaited<ReturnType<typeof timeSkippingEnv>>;
  let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  let started = 0;
  beforeAll(async () => {
    env = await timeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('../../workflows/pipeline/pipeline.ts'));
  });
  afterAll(async () => {
    await env?.teardown();
  });
  const start = (taskQueue: string, args: PipelineInput) =>
    env.client.workflow.start<typeof serverlessPipeline>('serverlessPipeline', {
      taskQueue,
      workflowId: `pipeline-wf-${++started}`,
      args: [args],
    });

  it('ends every piece with its line: a split, a transform failure and a job failure within tolerance', async () => {
    // Item 1 splits in three, item 2's transform fails, item 3's crop job fails.
    const fake = fakeStages(
      5,
      (endpointId, origin) => endpointId === 'ep-crop' && origin === 3,
      (origin) => (origin === 1 ? 3 : origin === 2 ? 'throws' : 1),
    );
    const tolerant = input();
    const stages = tolerant.stages.map((stage) =>
      stage.name === 'crop' ? { ...stage, failureTolerance: { count: 1 } } : stage,
    );
    const summary = await withWorker(env, bundle, fake.activities, async (queue) =>
      (await start(queue, { ...tolerant, stages })).result(),
    );
    expect(summary.ended).toEqual({ completed: 5, failed: 2, dropped: 0, notStarted: 0 });
    const ends = fake.lines
      .map(({ origin, part, stage, outcome, status }) => ({ origin, part, stage, outcome, status }))
      .sort((a, b) => a.origin - b.origin || String(a.part).localeCompare(String(b.part)));
    expect(ends).toEqual([
      { origin: 0, stage: 'upscale', outcome: 'completed', status: undefined, part: undefined },
      { origin: 1, part: [0], stage: 'upscale', outcome: 'completed', status: undefined },
      { origin: 1, part: [1], stage: 'upscale', outcome: 'completed', status: undefined },
      { origin: 1, part: [2], stage: 'upscale', outcome: 'completed', status: undefined },
      { origin: 2, stage: 'crop', outcome: 'failed', status: 'TRANSFORM_FAILED', part: undefined },
      { origin: 3, stage: 'crop', outcome: 'failed', status: 'FAILED', part: undefined },
      { origin: 4, stage: 'upscale', outcome: 'completed', status: undefined, part: undefined },
    ]);
    expect(fake.lines.find((line) => line.origin === 2)?.reason).toMatch(/no scenes/);
    // Each stage submitted each piece that reached it once.
    expect(fake.submits.get('ep-detect')?.sort()).toEqual(['0', '1', '2', '3', '4']);
    expect(fake.submits.get('ep-crop')?.sort()).toEqual(['0', '1.0', '1.1', '1.2', '3', '4']);
    expect(fake.submits.get('ep-upscale')?.sort()).toEqual(['0', '1.0', '1.1', '1.2', '4']);
  });

  it("stops every stage past a stage's tolerance and fails with the summary: nothing lost", async () => {
    // Every crop job fails; no tolerance: the first failure stops the pipeline.
    const fake = fakeStages(40, (endpointId) => endpointId === 'ep-crop');
    const failure = await withWorker(env, bundle, fake.activities, async (queue) =>
      failureOf((await start(queue, input())).result()),
    );
    expect(failure.type).toBe('PipelineToleranceExceeded');
    const summary = failure.details?.[0] as PipelineSummary;
    expect(summary.stopped).toBe('tolerance');
    expect(summary.stages.every((stage) => stage.stopped)).toBe(true);
    const read = summary.stages[0]?.counts.started ?? 0;
    expect(read).toBeLessThan(40);
    // Every item read has its one line (failed at crop, or ended waiting for it); the rest were never read.
    expect(fake.lines).toHaveLength(read);
    expect(new Set(fake.lines.map((line) => line.origin)).size).toBe(read);
    expect(fake.lines.every((line) => line.stage === 'crop')).toBe(true);
    expect(summary.ended.failed + summary.ended.notStarted).toBe(read);
    expect(fake.submits.get('ep-upscale')).toBeUndefined();
  });

  it("measures a stage's failure percentage against the pipeline's items, not the pieces started so far", async () => {
    // Two of twenty items fail crop early: 10% of the items, within a tolerance of 10%.
    const fake = fakeStages(20, (endpointId, origin) => endpointId === 'ep-crop' && origin < 2);
    const stages = input().stages.map((stage) =>
      stage.name === 'crop' ? { ...stage, failureTolerance: { percentage: 10 } } : stage,
    );
    const summary = await withWorker(env, bundle, fake.activities, async (queue) =>
      (await start(queue, { ...input(), stages })).result(),
    );
    expect(summary.ended).toEqual({ completed: 18, failed: 2, dropped: 0, notStarted: 0 });
  });

  it("stops at the pipeline's budget with every stage's cost counted, and at a stage's share", async () => {
    const whole = fakeStages(20, () => false);
    const failure = await withWorker(env, bundle, whole.activities, async (queue) =>
      failureOf((await start(queue, input({ budget: 9 }))).result()),
    );
    expect(failure.type).toBe('PipelineBudgetExceeded');
    const summary = failure.details?.[0] as PipelineSummary;
    expect(summary.stopped).toBe('budget');
    // No run starts that would pass it (runs under way counted at the mean cost so far).
    expect(summary.cost.amount).toBeLessThanOrEqual(9);
    expect(summary.stages.reduce((sum, stage) => sum + stage.cost.amount, 0)).toBe(summary.cost.amount);
    const read = summary.stages[0]?.counts.started ?? 0;
    expect(new Set(whole.lines.map((line) => line.seq)).size).toBe(whole.lines.length);
    expect(summary.ended.completed + summary.ended.failed + summary.ended.notStarted).toBe(read);

    // crop may spend a tenth of 40: the stages up to it stop there, upscale finishes what reached it.
    const shared = fakeStages(20, () => false);
    const stages = input().stages.map((stage) =>
      stage.name === 'crop' ? { ...stage, budgetShare: 0.1 } : stage,
    );
    const stopped = await withWorker(env, bundle, shared.activities, async (queue) =>
      failureOf((await start(queue, { ...input(), stages, budget: 40 })).result()),
    );
    expect(stopped.type).toBe('PipelineBudgetExceeded');
    const atShare = stopped.details?.[0] as PipelineSummary;
    expect(atShare.stages[1]?.cost.amount).toBeLessThanOrEqual(4);
    expect(atShare.stages.map((stage) => stage.stopped)).toEqual([true, true, false]);
    expect(atShare.stages[2]?.counts.completed).toBe(atShare.stages[1]?.counts.completed);
  });

  it("adopts only an orphan of the piece's own stage: an earlier stage's late webhook is no orphan", async () => {
    // Item 0's translate page never answers (its worker died mid-send), after two webhooks named
    // the piece: its transcribe job's, late, and its translate orphan's. Only the orphan is adopted.
    const fake = fakeStages(1, () => false);
    const watched = new Map<string, string[]>();
    const translateSubmits: number[][] = [];
    const activities: BatchActivities = {
      ...fake.activities,
      async submitBatchPage(page) {
        if (page.endpointId !== 'ep-translate') return fake.activities.submitBatchPage(page);
        translateSubmits.push(page.indexes);
        if (translateSubmits.length > 1) return fake.activities.submitBatchPage(page);
        const workflowId = Context.current().info.workflowExecution?.workflowId as string;
        await env.client.workflow.getHandle(workflowId).signal(batchWebhooksSignal, {
          hints: [
            { jobId: 'ep-transcribe-0', status: 'COMPLETED', item: 0, stage: 'transcribe' },
            { jobId: 'translate-orphan-0', status: 'COMPLETED', item: 0, stage: 'translate' },
          ],
        });
        throw ApplicationFailure.nonRetryable('the worker died mid-send', 'WorkerLost');
      },
      async watchBatchJobs(watch) {
        watched.set(watch.endpointId, [
          ...(watched.get(watch.endpointId) ?? []),
          ...watch.items.map(([, jobId]) => jobId),
        ]);
        const changes = watch.items.map(
          ([i, jobId]): ItemChange =>
            // A job this endpoint never made is not found there.
            jobId.startsWith('ep-transcribe') && watch.endpointId === 'ep-translate'
              ? { i, status: 'UNKNOWN', gone: true, at: Date.now() }
              : { i, status: 'COMPLETED', at: Date.now(), cost: 1 },
        );
        return { changes, running: 0 };
      },
    };
    const job = { ...JOB, uncertainSubmitWait: '1 minute' } as const;
    const ended = await withWorker(env, bundle, activities, async (queue) =>
      (
        await start(queue, {
          items: { manifest: { key: 'items.jsonl' } },
          stages: [
            { name: 'transcribe', endpointId: 'ep-transcribe', maxConcurrency: 1, job },
            {
              name: 'translate',
              endpointId: 'ep-translate',
              maxConcurrency: 1,
              job,
              map: { input: '$.previous.output' },
            },
          ],
        })
      )
        .result()
        .catch((error: unknown) => error),
    );
    expect(watched.get('ep-translate')).toEqual(['translate-orphan-0']);
    expect(translateSubmits).toEqual([[0]]);
    expect((ended as PipelineSummary).ended).toEqual({ completed: 1, failed: 0, dropped: 0, notStarted: 0 });
  });
});
