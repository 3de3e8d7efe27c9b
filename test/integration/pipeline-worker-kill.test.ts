/**
 * A pipeline on the dev server while its worker process is SIGKILLed mid-flow (every stage with
 * jobs at the service: the first still submitting, the last started), a second worker process
 * started after the kill and finishing it: every item completes through the three stages with its
 * own output, one result line each, and each stage's endpoint made exactly one job per item (one
 * /run acted on per item, counted per item from the service's jobs, deleted ones too) that ran once.
 *
 * Nothing is mocked: the emulator over HTTP, the shared dev server, the worker and the webhook
 * gateway as processes of the sources (`npm run worker`, `npm run gateway`), configured through the
 * environment, as in batch-worker-kill.test.ts. The kill cuts each stage's submit pages in flight;
 * as a batch's, their orphans report themselves by webhook through the gateway and are adopted,
 * and an item whose request never reached the service is sent once its lease is over.
 */

import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  finishedPipelineSummary,
  type PipelineInput,
  type PipelineResultLine,
  readPipelineResults,
  startPipeline,
} from '../../client/pipelines';
import type { JobState } from '../../emulator';
import {
  type ManagedProcess,
  type Stack,
  startProcessStack,
  until,
  untilAnswered,
} from '../support/process-stack';

const ITEMS = 200;
/** Each stage's endpoint: its warm workers, and the stage's maxConcurrency. */
const WORKERS = 20;
const STAGES = ['transcribe', 'translate', 'speak'];
/** The kill: once the service has acted on this many of the last stage's submissions. */
const KILL_AT_LAST_STAGE = 10;

const JOB = {
  polling: { initialInterval: 500, maxInterval: 2_000, backoffCoefficient: 1.5 },
  // As batch-worker-kill.test.ts: a lease as a duration applies to the items of a page cut by the
  // kill whose requests never reported; it outlasts the cut page noticed (submitTimeout), a new
  // worker up (it bundles the workflows from the sources) and an orphan's webhook adopted.
  submitLease: '60 seconds',
  submitTimeout: 15_000,
  maxSubmissions: 5,
} as const;

/** The item a service job belongs to: its webhook URL names its piece (the item here: no split), else its input. */
const itemOfJob = (job: JobState): number | undefined => {
  const fromUrl = job.webhook ? new URL(job.webhook).searchParams.get('item') : null;
  if (fromUrl !== null && /^\d+$/.test(fromUrl)) return Number(fromUrl);
  const item = (job.input?.output as { i?: unknown } | undefined)?.i;
  return typeof item === 'number' ? item : undefined;
};

describe('the worker SIGKILLed mid-pipeline (dev server, emulator over HTTP, worker and gateway processes)', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Service time is real time: the lease and the webhook retries are the spec's.
    stack = await startProcessStack({
      name: 'pipeline-worker-kill',
      timeScale: 1,
      temporal: { address: inject('temporalAddress'), namespace: 'default' },
      entries: 'sources',
      dirPrefix: 'integration',
    });
  }, 300_000);
  afterAll(async () => {
    await stack?.close();
  }, 120_000);

  it(`a SIGKILL mid-flow of ${ITEMS} items through ${STAGES.length} stages: nothing lost, nothing run twice`, async () => {
    const workers: ManagedProcess[] = [stack.startWorker()];
    await workers[0]?.running;
    const endpoints = STAGES.map(() => stack.endpoint({ workersMin: WORKERS, workersMax: WORKERS }));
    // Item i sleeps 0.5 to 1.5 s at each stage and carries { i } through every stage.
    const input: PipelineInput = {
      items: {
        inline: Array.from({ length: ITEMS }, (_, i) => ({
          input: { sleepMs: 500 + (i % 5) * 250, output: { i } },
        })),
      },
      stages: STAGES.map((name, k) => ({
        name,
        endpointId: endpoints[k] as string,
        maxConcurrency: WORKERS,
        job: JOB,
        ...(k > 0
          ? { map: { 'input.output': '$.previous.output', 'input.sleepMs': '$.item.input.sleepMs' } }
          : {}),
      })),
    };
    const handle = await startPipeline(stack.client, input, {
      workflowId: `pipeline-worker-kill-${Date.now()}`,
      taskQueue: stack.taskQueue,
    });
    const submissions = () => endpoints.map((endpoint) => stack.control.submissions(endpoint));

    await until(
      `the service acted on ${KILL_AT_LAST_STAGE} of the last stage's submissions`,
      () => (submissions()[2] ?? 0) >= KILL_AT_LAST_STAGE,
    );
    const atKill = submissions();
    await workers[0]?.kill();
    expect(workers[0]?.child.signalCode).toBe('SIGKILL');
    workers.push(stack.startWorker());
    // Mid-flow: the first stage had not submitted every item, and the last stage had begun.
    expect(atKill[0]).toBeLessThan(ITEMS);
    expect(atKill[2]).toBeGreaterThanOrEqual(KILL_AT_LAST_STAGE);

    const summary = await untilAnswered(
      () => finishedPipelineSummary(stack.client, { pipeline: handle }),
      Date.now() + 240_000,
    );
    expect(summary.ended).toEqual({ completed: ITEMS, failed: 0, dropped: 0, notStarted: 0 });
    expect(summary.stages.map((stage) => [stage.name, stage.counts.started, stage.counts.completed])).toEqual(
      STAGES.map((name) => [name, ITEMS, ITEMS]),
    );

    // Every item completed with its own output, one result line each.
    const lines: PipelineResultLine[] = [];
    for await (const line of readPipelineResults(stack.client, { pipeline: summary, store: stack.store }))
      lines.push(line);
    expect(lines).toHaveLength(ITEMS);
    expect(new Set(lines.map((line) => line.origin)).size).toBe(ITEMS);
    for (const line of lines) {
      expect(line).toMatchObject({ stage: 'speak', outcome: 'completed' });
      expect(line.output).toEqual({ i: line.origin });
    }

    // Each stage's endpoint: exactly one /run acted on per item, one job per item, run once.
    expect(submissions()).toEqual(STAGES.map(() => ITEMS));
    for (const endpoint of endpoints) {
      const jobs = stack.control.jobs(endpoint, { removed: true });
      const perItem = new Map<number | undefined, number>();
      for (const job of jobs) perItem.set(itemOfJob(job), (perItem.get(itemOfJob(job)) ?? 0) + 1);
      expect(perItem.has(undefined)).toBe(false);
      expect(perItem.size).toBe(ITEMS);
      expect([...perItem.values()].every((count) => count === 1)).toBe(true);
      expect(jobs.every((job) => job.status === 'COMPLETED' && job.attempts === 1)).toBe(true);
    }
    console.log(
      `[INTEGRATION pipeline-worker-kill] killed at submissions ${atKill.join('/')} per stage; ` +
        `${summary.runs} run(s), ${summary.events} history events ` +
        `(${(summary.events / ITEMS / STAGES.length).toFixed(3)} per item per stage)`,
    );
  }, 300_000);
});
