/**
 * Pipelines end to end: the real worker, the dev server, the emulator over HTTP. Three stages on
 * three endpoints: `transcribe` takes the items as they are, `translate` makes its input by a map
 * from the item and transcribe's output, and `speak` takes its input from a transform registered
 * on the worker that splits an item into its scenes (and drops one with none). One item fails
 * translate and ends there, its line naming the stage. Every item is accounted for, and each
 * stage's endpoint saw exactly one submission per piece that reached it. A second pipeline runs
 * with the smallest maxEventsPerRun and continues as new mid-flow, carrying every stage's state.
 * A pipeline whose translate endpoint fails every item is redriven once the endpoint is fixed:
 * each item starts again at translate, never at transcribe; one whose speak endpoint and transform
 * failed is redriven at speak (split parts on the inputs their transform wrote, the failed
 * transform run again); one stopped by a tolerance is redriven with the items it never read; a
 * redrive is redriven again, its inputs made from the first pipeline's outputs.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipelineTransform } from '../../activities/pipeline';
import {
  awaitPipeline,
  cancelPipeline,
  finishedPipelineSummary,
  getPipelineProgress,
  type PipelineInput,
  type PipelineProgress,
  type PipelineResultLine,
  type PipelineSummary,
  pausePipeline,
  readPipelineResults,
  redrivePipeline,
  resumePipeline,
  setPipelineConcurrency,
  startPipeline,
} from '../../client/pipelines';
import { watchPipeline } from '../../client/watch';
import { eventually, type JobStack, jobsInProgress, startJobStack } from '../support/integration';
import { LIBRARY_WORKFLOWS, workflowBundleFile } from '../support/workflow-bundles';
import { currentDetails } from '../support/workflow-metadata';

/** The submit lease off: at time scale 100 its default is too short to extend (see batch.test.ts). */
const JOB = {
  submitLease: false,
  polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 },
} as const;

/** Items the scenes transform fails on, until a test "deploys the fix" by emptying it. */
const brokenScenes = new Set<number>();

/** Splits a piece into its scenes: none drops it. */
const scenes = definePipelineTransform({
  name: 'scenes',
  run({ previous, origin }) {
    if (brokenScenes.has(origin)) throw new Error(`no scenes for item ${origin}`);
    const { text, scenes: count } = previous.output as { text: string; scenes: number };
    return Array.from({ length: count }, (_, scene) => ({ input: { output: { text, scene, origin } } }));
  },
});

/** Item i: its scenes, and whether translate fails it (five failures, no retry: for good). */
const itemOf = (i: number, sceneCount: number, translate: 'fails' | 'hangs' | 'runs' = 'runs') => ({
  input: {
    output: {
      translated: { text: `item ${i}`, scenes: sceneCount },
      ...(translate === 'fails' ? { translateFailures: 5 } : {}),
      // An hour of service time: it runs until cancelled.
      ...(translate === 'hangs' ? { translateSleepMs: 3_600_000 } : {}),
    },
  },
});

function pipelineInput(
  endpoints: string[],
  items: unknown[],
  extra: Partial<PipelineInput> = {},
): PipelineInput {
  const [transcribe, translate, speak] = endpoints;
  return {
    items: { inline: items as never },
    stages: [
      { name: 'transcribe', endpointId: transcribe, maxConcurrency: 4, job: JOB },
      {
        name: 'translate',
        endpointId: translate,
        maxConcurrency: 2,
        buffer: 2,
        job: JOB,
        failureTolerance: { count: 1 },
        map: {
          'input.output': '$.previous.output.translated',
          'input.failTimes': { path: '$.item.input.output.translateFailures', default: 0 },
          'input.sleepMs': { path: '$.previous.output.translateSleepMs', default: 0 },
        },
      },
      { name: 'speak', endpointId: speak, maxConcurrency: 3, job: JOB, transform: { name: 'scenes' } },
    ],
    ...extra,
  };
}

const byOrigin = (lines: PipelineResultLine[]) =>
  [...lines].sort((a, b) => a.origin - b.origin || String(a.part).localeCompare(String(b.part)));

describe('pipelines on the emulator', () => {
  let stack: JobStack;
  const readAll = async (summary: PipelineSummary) => {
    const lines: PipelineResultLine[] = [];
    const store = stack.workerEnv.RESULT_STORE_DIR as string;
    for await (const line of readPipelineResults(stack.client, { pipeline: summary, store }))
      lines.push(line);
    return lines;
  };
  beforeAll(async () => {
    stack = await startJobStack({ name: 'pipeline', timeScale: 100, transforms: [scenes] });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('moves items through three stages: a map, a split, a drop and a failure at its stage', async () => {
    const endpoints = [stack.endpoint(), stack.endpoint(), stack.endpoint()];
    const items = [itemOf(0, 1), itemOf(1, 3), itemOf(2, 0), itemOf(3, 2), itemOf(4, 2, 'fails')];
    const handle = await startPipeline(stack.client, pipelineInput(endpoints, items), {
      workflowId: `pipeline-${Date.now()}`,
      taskQueue: stack.taskQueue,
    });
    const watched: PipelineProgress[] = [];
    const watching = (async () => {
      for await (const progress of watchPipeline(stack.client, { pipeline: handle, interval: 50 }))
        watched.push(progress);
    })();
    const summary = await awaitPipeline(stack.client, { pipeline: handle });
    expect(summary.ended).toEqual({ completed: 6, failed: 1, dropped: 1, notStarted: 0 });
    // The watch ends with the snapshot the pipeline ended on.
    await watching;
    expect(watched.at(-1)?.stages.map((stage) => stage.counts.completed)).toEqual([5, 4, 6]);
    expect(summary.stages.map((stage) => [stage.name, stage.counts.completed, stage.counts.failed])).toEqual([
      ['transcribe', 5, 0],
      ['translate', 4, 1],
      ['speak', 6, 0],
    ]);
    expect(summary.stages[2]?.counts).toMatchObject({ dropped: 1, split: 2, parts: 5 });

    const lines = byOrigin(await readAll(summary));
    expect(
      lines.map(({ origin, part, stage, outcome }) => ({
        origin,
        ...(part ? { part } : {}),
        stage,
        outcome,
      })),
    ).toEqual([
      { origin: 0, stage: 'speak', outcome: 'completed' },
      { origin: 1, part: [0], stage: 'speak', outcome: 'completed' },
      { origin: 1, part: [1], stage: 'speak', outcome: 'completed' },
      { origin: 1, part: [2], stage: 'speak', outcome: 'completed' },
      { origin: 2, stage: 'speak', outcome: 'dropped' },
      { origin: 3, part: [0], stage: 'speak', outcome: 'completed' },
      { origin: 3, part: [1], stage: 'speak', outcome: 'completed' },
      { origin: 4, stage: 'translate', outcome: 'failed' },
    ]);
    // Each completed piece's output is its scene of its item's text, made by the transform.
    for (const line of lines.filter((line) => line.outcome === 'completed'))
      expect(line.output).toEqual({
        text: `item ${line.origin}`,
        scene: line.part?.[0] ?? 0,
        origin: line.origin,
      });
    // Its job's error text is in the store, named by its line (never in history).
    const broken = lines.find((line) => line.origin === 4);
    expect(broken).toMatchObject({
      status: 'FAILED',
      errorRef: expect.stringContaining('/stages/translate/errors/'),
    });
    // One submission per piece at each stage's endpoint.
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([5, 5, 6]);
    const progress = await getPipelineProgress(stack.client, { pipeline: handle });
    expect(progress.stages.map((stage) => stage.name)).toEqual(['transcribe', 'translate', 'speak']);
  });

  it('continues as new mid-flow, carrying every stage: each piece ends once, each stage submits it once', async () => {
    const endpoints = [stack.endpoint(), stack.endpoint(), stack.endpoint()];
    const ITEMS = 30;
    // Scenes 0 (dropped), 1 and 2 (split) in turn: 30 pieces complete.
    const items = Array.from({ length: ITEMS }, (_, i) => itemOf(i, i % 3));
    const handle = await startPipeline(
      stack.client,
      pipelineInput(endpoints, items, { pageSize: 2, maxEventsPerRun: 200 }),
      { workflowId: `pipeline-continue-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: handle });
    expect(summary.runs).toBeGreaterThan(1);
    expect(summary.ended).toEqual({ completed: 30, failed: 0, dropped: 10, notStarted: 0 });
    const lines = await readAll(summary);
    const pieces = lines.map((line) => `${line.origin}:${line.part ?? ''}`);
    expect(new Set(pieces).size).toBe(40);
    expect(lines.filter((line) => line.outcome === 'completed')).toHaveLength(30);
    expect(new Set(lines.map((line) => line.origin)).size).toBe(ITEMS);
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([30, 30, 30]);
    // The last run (started from the carry) replays on the current code: the workflow is deterministic.
    const history = await handle.fetchHistory();
    await expect(
      Worker.runReplayHistory(
        { workflowBundle: { codePath: await workflowBundleFile(LIBRARY_WORKFLOWS) } },
        history,
        handle.workflowId,
      ),
    ).resolves.toBeUndefined();
  });

  it('redrives failed items at the stage where they failed, not from the beginning', async () => {
    const [transcribe, speak] = [stack.endpoint(), stack.endpoint()];
    // The fail handler fails every job sent to it, until the endpoint runs the scripted one.
    const translate = stack.endpoint({ templateId: 'fail' });
    const endpoints = [transcribe as string, translate, speak as string];
    const items = [itemOf(0, 1), itemOf(1, 2), itemOf(2, 0)];
    const input = pipelineInput(endpoints, items);
    const stages = input.stages.map((stage) =>
      stage.name === 'translate' ? { ...stage, failureTolerance: { count: 3 } } : stage,
    );
    const handle = await startPipeline(
      stack.client,
      { ...input, stages },
      { workflowId: `pipeline-broken-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const broken = await awaitPipeline(stack.client, { pipeline: handle });
    expect(broken.ended).toEqual({ completed: 0, failed: 3, dropped: 0, notStarted: 0 });
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([3, 3, 0]);
    const failedLines = byOrigin(await readAll(broken));
    expect(failedLines.map(({ origin, stage, outcome }) => ({ origin, stage, outcome }))).toEqual([
      { origin: 0, stage: 'translate', outcome: 'failed' },
      { origin: 1, stage: 'translate', outcome: 'failed' },
      { origin: 2, stage: 'translate', outcome: 'failed' },
    ]);

    stack.control.updateEndpoint(translate, { templateId: 'scripted' });
    const redrive = await redrivePipeline(
      stack.client,
      { pipeline: handle },
      { workflowId: `pipeline-redrive-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: redrive });
    expect(summary.ended).toEqual({ completed: 3, failed: 0, dropped: 1, notStarted: 0 });
    // transcribe never ran them again; translate and speak once per piece that reached them.
    expect(summary.stages.map((stage) => stage.counts.started)).toEqual([0, 3, 3]);
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([3, 6, 3]);
    const lines = byOrigin(await readAll(summary));
    expect(
      lines.map(({ origin, part, stage, outcome }) => ({
        origin,
        ...(part ? { part } : {}),
        stage,
        outcome,
      })),
    ).toEqual([
      { origin: 0, stage: 'speak', outcome: 'completed' },
      { origin: 1, part: [0], stage: 'speak', outcome: 'completed' },
      { origin: 1, part: [1], stage: 'speak', outcome: 'completed' },
      { origin: 2, stage: 'speak', outcome: 'dropped' },
    ]);
    // translate's input was made again from transcribe's output in the first pipeline's store.
    for (const line of lines.filter((line) => line.outcome === 'completed'))
      expect(line.output).toEqual({
        text: `item ${line.origin}`,
        scene: line.part?.[0] ?? 0,
        origin: line.origin,
      });
    // Nothing is left to redrive.
    await expect(
      redrivePipeline(stack.client, { pipeline: redrive }, { workflowId: `${redrive.workflowId}-again` }),
    ).rejects.toMatchObject({
      field: 'pipeline',
      rule: 'has no failed or unstarted pieces to redrive',
    });
  });

  it('redrives at the last stage: split parts on the inputs their transform wrote, a failed transform run again', async () => {
    const [transcribe, translate] = [stack.endpoint(), stack.endpoint()];
    const speak = stack.endpoint({ templateId: 'fail' });
    const endpoints = [transcribe as string, translate as string, speak];
    const input = pipelineInput(endpoints, [itemOf(0, 2), itemOf(1, 1), itemOf(2, 1)]);
    const stages = input.stages.map((stage) =>
      stage.name === 'speak' ? { ...stage, failureTolerance: { count: 4 } } : stage,
    );
    brokenScenes.add(2);
    const handle = await startPipeline(
      stack.client,
      { ...input, stages },
      { workflowId: `pipeline-speak-broken-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const broken = await awaitPipeline(stack.client, { pipeline: handle });
    expect(broken.ended).toEqual({ completed: 0, failed: 4, dropped: 0, notStarted: 0 });
    const failedLines = byOrigin(await readAll(broken));
    expect(
      failedLines.map(({ origin, part, status }) => ({ origin, ...(part ? { part } : {}), status })),
    ).toEqual([
      { origin: 0, part: [0], status: 'FAILED' },
      { origin: 0, part: [1], status: 'FAILED' },
      { origin: 1, status: 'FAILED' },
      { origin: 2, status: 'TRANSFORM_FAILED' },
    ]);
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([3, 3, 3]);

    stack.control.updateEndpoint(speak, { templateId: 'scripted' });
    brokenScenes.delete(2);
    const redrive = await redrivePipeline(
      stack.client,
      { pipeline: handle },
      { workflowId: `pipeline-speak-redrive-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: redrive });
    expect(summary.ended).toEqual({ completed: 4, failed: 0, dropped: 0, notStarted: 0 });
    // Only speak ran again: once per piece, item 2 after its transform ran again.
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([3, 3, 7]);
    const lines = byOrigin(await readAll(summary));
    expect(lines.map(({ origin, part, stage }) => ({ origin, ...(part ? { part } : {}), stage }))).toEqual([
      { origin: 0, part: [0], stage: 'speak' },
      { origin: 0, part: [1], stage: 'speak' },
      { origin: 1, stage: 'speak' },
      { origin: 2, stage: 'speak' },
    ]);
    for (const line of lines)
      expect(line.output).toEqual({
        text: `item ${line.origin}`,
        scene: line.part?.[0] ?? 0,
        origin: line.origin,
      });
  });

  it('redrives a redrive: the pieces still failing start again at their stage, from the outputs the first pipeline made', async () => {
    const [transcribe, speak] = [stack.endpoint(), stack.endpoint()];
    const translate = stack.endpoint({ templateId: 'fail' });
    const endpoints = [transcribe as string, translate, speak as string];
    const input = pipelineInput(endpoints, [itemOf(0, 1), itemOf(1, 2)]);
    const stages = input.stages.map((stage) =>
      stage.name === 'translate' ? { ...stage, failureTolerance: { count: 2 } } : stage,
    );
    const first = await startPipeline(
      stack.client,
      { ...input, stages },
      { workflowId: `pipeline-twice-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    await awaitPipeline(stack.client, { pipeline: first });
    // Redriven while translate still fails: they fail there again.
    const again = await redrivePipeline(
      stack.client,
      { pipeline: first },
      { workflowId: `${first.workflowId}-again`, taskQueue: stack.taskQueue },
    );
    expect((await awaitPipeline(stack.client, { pipeline: again })).ended).toMatchObject({ failed: 2 });
    stack.control.updateEndpoint(translate, { templateId: 'scripted' });
    const last = await redrivePipeline(
      stack.client,
      { pipeline: again },
      { workflowId: `${first.workflowId}-last`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: last });
    expect(summary.ended).toEqual({ completed: 3, failed: 0, dropped: 0, notStarted: 0 });
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([2, 6, 3]);
    const lines = byOrigin(await readAll(summary));
    expect(lines.map((line) => line.output)).toEqual([
      { text: 'item 0', scene: 0, origin: 0 },
      { text: 'item 1', scene: 0, origin: 1 },
      { text: 'item 1', scene: 1, origin: 1 },
    ]);
  });

  it('redrives a pipeline stopped by a tolerance: every item ends once, each stage runs it once more at most', async () => {
    const [transcribe, speak] = [stack.endpoint(), stack.endpoint()];
    const translate = stack.endpoint({ templateId: 'fail' });
    const endpoints = [transcribe as string, translate, speak as string];
    const ITEMS = 6;
    const input = pipelineInput(
      endpoints,
      Array.from({ length: ITEMS }, (_, i) => itemOf(i, 1)),
    );
    const handle = await startPipeline(stack.client, input, {
      workflowId: `pipeline-stopped-${Date.now()}`,
      taskQueue: stack.taskQueue,
    });
    // translate tolerates one failure: the second stops the pipeline, with items left unread or waiting.
    const broken = await finishedPipelineSummary(stack.client, { pipeline: handle });
    expect(broken.stopped).toBe('tolerance');
    const failedAtTranslate = broken.stages[1]?.counts.failed as number;
    expect(failedAtTranslate).toBeGreaterThanOrEqual(2);

    stack.control.updateEndpoint(translate, { templateId: 'scripted' });
    const redrive = await redrivePipeline(
      stack.client,
      { pipeline: handle },
      { workflowId: `pipeline-stopped-redrive-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: redrive });
    expect(summary.ended).toEqual({ completed: ITEMS, failed: 0, dropped: 0, notStarted: 0 });
    const lines = await readAll(summary);
    expect(lines.map((line) => line.origin).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // Each item was transcribed once in all; translated once more only if it had failed there.
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([
      ITEMS,
      ITEMS + failedAtTranslate,
      ITEMS,
    ]);
  });

  it('holds a slow stage back-pressured, pauses, resumes, widens a stage and cancels every stage', async () => {
    const endpoints = [stack.endpoint(), stack.endpoint(), stack.endpoint()];
    const items = Array.from({ length: 5 }, (_, i) => itemOf(i, 1, 'hangs'));
    const handle = await startPipeline(stack.client, pipelineInput(endpoints, items), {
      workflowId: `pipeline-cancel-${Date.now()}`,
      taskQueue: stack.taskQueue,
    });
    // translate holds 2 (its window) and its buffer 2: transcribe stops short of the fifth item.
    await jobsInProgress(stack.control, endpoints[1] as string, 2);
    const held = await eventually(async () => {
      const progress = await getPipelineProgress(stack.client, { pipeline: handle });
      return progress.stages[1]?.buffered === 2 && progress;
    });
    expect(held.stages.map((stage) => stage.counts.started)).toEqual([4, 2, 0]);
    // The UI's current details show each stage's row: translate with 2 in its window, 2 buffered.
    const details = await eventually(async () => {
      const text = await currentDetails(handle);
      return text.includes('| translate | 0 | 0 | 2 | 2 |') && text;
    });
    expect(details).toContain('| transcribe | 4 | 0 | 0 | 0 |');
    await pausePipeline(stack.client, { pipeline: handle });
    await eventually(async () => (await getPipelineProgress(stack.client, { pipeline: handle })).paused);
    await resumePipeline(stack.client, { pipeline: handle });
    await eventually(async () => !(await getPipelineProgress(stack.client, { pipeline: handle })).paused);
    // A wider translate window takes one more from its buffer, which lets transcribe read the last item.
    await expect(
      setPipelineConcurrency(stack.client, { pipeline: handle, stage: 'nope', maxConcurrency: 3 }),
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/names no stage of the pipeline/) } });
    expect(
      await setPipelineConcurrency(stack.client, { pipeline: handle, stage: 'translate', maxConcurrency: 3 }),
    ).toBe(2);
    await jobsInProgress(stack.control, endpoints[1] as string, 3);
    await eventually(async () => {
      const progress = await getPipelineProgress(stack.client, { pipeline: handle });
      return progress.stages[0]?.counts.completed === 5 && progress.stages[1]?.buffered === 2;
    });

    await cancelPipeline(stack.client, { pipeline: handle });
    const error = await awaitPipeline(stack.client, { pipeline: handle }).then(
      () => undefined,
      (caught: Error) => caught,
    );
    expect((error?.cause as Error | undefined)?.name).toBe('CancelledFailure');
    const jobs = stack.control.jobs(endpoints[1] as string);
    expect(jobs.map((job) => job.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
    expect(endpoints.map((endpoint) => stack.control.submissions(endpoint))).toEqual([5, 3, 0]);
    // Every item has its line: three cancelled in translate, two ended waiting for it.
    const summary = await finishedPipelineSummary(stack.client, { pipeline: handle });
    expect(summary.ended).toEqual({ completed: 0, failed: 3, dropped: 0, notStarted: 2 });
    const lines = await readAll(summary);
    expect(
      lines
        .map(({ stage, outcome, status }) => ({ stage, outcome, status }))
        .sort((a, b) => a.outcome.localeCompare(b.outcome)),
    ).toEqual([
      { stage: 'translate', outcome: 'failed', status: 'CANCELLED' },
      { stage: 'translate', outcome: 'failed', status: 'CANCELLED' },
      { stage: 'translate', outcome: 'failed', status: 'CANCELLED' },
      { stage: 'translate', outcome: 'not-started', status: undefined },
      { stage: 'translate', outcome: 'not-started', status: undefined },
    ]);
  });

  it('runs a stage over a route: its pages go to the route endpoints, each piece once', async () => {
    const [transcribe, speak] = [stack.endpoint(), stack.endpoint()];
    const near = stack.endpoint({ workersMin: 0, workersMax: 2 });
    const far = stack.endpoint({ workersMin: 0, workersMax: 100 });
    const items = Array.from({ length: 12 }, (_, i) => itemOf(i, 1));
    const input = pipelineInput([transcribe as string, near, speak as string], items);
    const stages = input.stages.map((stage) =>
      stage.name === 'translate'
        ? {
            name: stage.name,
            map: stage.map,
            maxConcurrency: 8,
            job: JOB,
            route: { endpoints: [{ endpointId: near }, { endpointId: far, inputOverrides: { on: 'far' } }] },
          }
        : stage,
    );
    const handle = await startPipeline(
      stack.client,
      { ...input, stages },
      { workflowId: `pipeline-route-${Date.now()}`, taskQueue: stack.taskQueue },
    );
    const summary = await awaitPipeline(stack.client, { pipeline: handle });
    expect(summary.ended).toMatchObject({ completed: 12, failed: 0 });
    expect(stack.control.submissions(near) + stack.control.submissions(far)).toBe(12);
    // The route's windows are sized by each endpoint's workers: the near one's is small, so the far one takes work too.
    expect(stack.control.submissions(far)).toBeGreaterThan(0);
    const farJobs = stack.control.jobs(far).filter((job) => job.input !== undefined);
    expect(farJobs.every((job) => job.input?.on === 'far')).toBe(true);
  });
});
