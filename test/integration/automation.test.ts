/**
 * Automations end to end: the real worker (runWorker with its automations), the dev server, the
 * emulator over HTTP. Events sent by sendEvent, repeats included, start exactly the jobs and
 * batches they should (counted as submissions at the emulator); a batch's end event starts the
 * next step in a second automation (chaining); a group of events starts a pipeline, whose end
 * event starts the next step too.
 *
 * The emulator runs at time scale 100; the submit lease is off (see batch.test.ts for why).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AutomationDefinition, defineAutomation } from '../../activities/automation';
import { type AutomationState, automationWorkflowId, sendEvent } from '../../client/automations';
import { describeAutomation } from '../../contracts/automation-start';
import { automationKeyKey, automationNameKey } from '../../contracts/search-attributes';
import { automationStateQuery } from '../../workflows/automation/automation-definitions';
import { eventually, FAST_POLLING, historyText, type JobStack, startJobStack } from '../support/integration';

const JOB_OPTIONS = { submitLease: false, polling: FAST_POLLING } as const;

/** The endpoints each automation submits to, known once the stack runs. */
const endpoints = { perEvent: '', grouped: '', firstStep: '', nextStep: '', detect: '', upscale: '' };
/** What the second step received: its events' types and data. */
const nextStepEvents: Array<{ type?: string; data: unknown }> = [];

const automations: AutomationDefinition[] = [
  defineAutomation({
    name: 'per-event',
    concurrency: 5,
    run: (events) => ({
      kind: 'job',
      input: {
        endpointId: endpoints.perEvent,
        request: { input: { output: events[0]?.data ?? null } },
        ...JOB_OPTIONS,
      },
    }),
  }),
  defineAutomation({
    name: 'grouped',
    batch: { maxEvents: 5, maxWait: '1 hour' },
    concurrency: 2,
    run: (events) => ({
      kind: 'batch',
      input: {
        endpointId: endpoints.grouped,
        items: { inline: events.map((event) => ({ input: { output: event.data } })) },
        job: JOB_OPTIONS,
      },
    }),
  }),
  defineAutomation({
    name: 'first-step',
    batch: { maxEvents: 3, maxWait: '1 hour' },
    emitOnEnd: { automation: 'next-step' },
    run: (events) => ({
      kind: 'batch',
      input: {
        endpointId: endpoints.firstStep,
        items: { inline: events.map((event) => ({ input: { output: event.data } })) },
        job: JOB_OPTIONS,
      },
    }),
  }),
  defineAutomation({
    name: 'to-pipeline',
    batch: { maxEvents: 2, maxWait: '1 hour' },
    emitOnEnd: { automation: 'next-step' },
    run: (events) => ({
      kind: 'pipeline',
      input: {
        items: { inline: events.map((event) => ({ input: { output: event.data } })) },
        stages: [
          { name: 'detect', endpointId: endpoints.detect, job: JOB_OPTIONS },
          {
            name: 'upscale',
            endpointId: endpoints.upscale,
            job: JOB_OPTIONS,
            map: { 'input.output': '$.previous.output' },
          },
        ],
      },
    }),
  }),
  defineAutomation({
    name: 'next-step',
    run: (events) => {
      for (const event of events)
        nextStepEvents.push({ ...(event.type ? { type: event.type } : {}), data: event.data });
      const summary = events[0]?.data as { total?: number } | null;
      return {
        kind: 'job',
        input: {
          endpointId: endpoints.nextStep,
          request: { input: { output: { after: summary?.total ?? -1 } } },
          ...JOB_OPTIONS,
        },
      };
    },
  }),
];

describe('automations on the emulator', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'automation', timeScale: 100, automations });
    endpoints.perEvent = stack.endpoint({ workersMin: 0, workersMax: 20 });
    endpoints.grouped = stack.endpoint({ workersMin: 0, workersMax: 20 });
    endpoints.firstStep = stack.endpoint({ workersMin: 0, workersMax: 20 });
    endpoints.nextStep = stack.endpoint({ workersMin: 0, workersMax: 20 });
    endpoints.detect = stack.endpoint({ workersMin: 0, workersMax: 20 });
    endpoints.upscale = stack.endpoint({ workersMin: 0, workersMax: 20 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const stateOf = (name: string, key: string) => () =>
    stack.client.workflow.getHandle(automationWorkflowId(name, key)).query(automationStateQuery);
  const when = (name: string, key: string, check: (state: AutomationState) => boolean) =>
    eventually(async () => {
      // Not started yet, or between two runs: the query fails, and the next look tries again.
      const state = await stateOf(name, key)().catch(() => undefined);
      return state && check(state) ? state : undefined;
    }, 60_000);

  it('starts one job per distinct event, and a batch per group of five; repeats start nothing', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `order-${i}`);
    // Every fourth id is sent twice, some of them at once.
    const sends = [...ids, ...ids.filter((_, i) => i % 4 === 0)];
    await Promise.all(
      sends.map((id, i) =>
        sendEvent(
          stack.client,
          { id, type: 'order.created', data: { i } },
          { automation: 'per-event', key: 'tenant-a', taskQueue: stack.taskQueue },
        ),
      ),
    );
    for (const id of sends) {
      await sendEvent(
        stack.client,
        { id, data: { id } },
        { automation: 'grouped', key: 'tenant-a', taskQueue: stack.taskQueue },
      );
    }
    const perEvent = await when('per-event', 'tenant-a', (s) => s.counters.runsCompleted === 20);
    expect(perEvent.counters).toMatchObject({ received: 25, duplicates: 5, runsStarted: 20, runsFailed: 0 });
    expect(stack.control.submissions(endpoints.perEvent)).toBe(20);
    const grouped = await when('grouped', 'tenant-a', (s) => s.counters.runsCompleted === 4);
    expect(grouped.counters).toMatchObject({ received: 25, duplicates: 5, runsStarted: 4, runsFailed: 0 });
    expect(grouped.pending).toBe(0);
    expect(stack.control.submissions(endpoints.grouped)).toBe(20);
    // The batches' item lists went to the store; only the events (capped) entered history.
    const history = await stack.client.workflow
      .getHandle(automationWorkflowId('grouped', 'tenant-a'))
      .fetchHistory();
    expect(historyText(history)).toContain('"manifest"');
    expect(historyText(history)).not.toContain('"inline"');
  });

  it("chains: a batch's end event starts the next step in another automation", async () => {
    for (const id of ['a', 'b', 'c']) {
      await sendEvent(
        stack.client,
        { id, data: { id } },
        { automation: 'first-step', key: 'pipeline-1', taskQueue: stack.taskQueue },
      );
    }
    const first = await when('first-step', 'pipeline-1', (s) => s.counters.runsCompleted === 1);
    expect(first.counters.runsStarted).toBe(1);
    const next = await when('next-step', 'pipeline-1', (s) => s.counters.runsCompleted === 1);
    expect(next.counters).toMatchObject({ received: 1, runsStarted: 1, runsFailed: 0 });
    expect(stack.control.submissions(endpoints.firstStep)).toBe(3);
    expect(stack.control.submissions(endpoints.nextStep)).toBe(1);
    expect(nextStepEvents.filter((e) => e.type === 'batch.completed')).toHaveLength(1);
    expect(nextStepEvents.find((e) => e.type === 'batch.completed')).toMatchObject({
      type: 'batch.completed',
      data: { total: 3, counts: { completed: 3 } },
    });
    // Started by the batch's end event (the emitEvent activity), the next step describes itself
    // as one sendEvent starts does: summary, details, name and key for list queries.
    const started = await stack.client.workflow
      .getHandle(automationWorkflowId('next-step', 'pipeline-1'))
      .describe();
    const expected = describeAutomation('next-step', 'pipeline-1');
    expect(await started.staticSummary()).toBe(expected.staticSummary);
    expect(await started.staticDetails()).toBe(expected.staticDetails);
    expect(started.typedSearchAttributes.get(automationNameKey)).toBe('next-step');
    expect(started.typedSearchAttributes.get(automationKeyKey)).toBe('pipeline-1');
  });

  it("starts a pipeline per group of events; the pipeline's end event starts the next step", async () => {
    for (const id of ['frame-1', 'frame-2']) {
      await sendEvent(
        stack.client,
        { id, data: { id } },
        { automation: 'to-pipeline', key: 'pipeline-2', taskQueue: stack.taskQueue },
      );
    }
    const runs = await when('to-pipeline', 'pipeline-2', (s) => s.counters.runsCompleted === 1);
    expect(runs.counters).toMatchObject({ runsStarted: 1, runsFailed: 0 });
    // Each item went through both stages once.
    expect([
      stack.control.submissions(endpoints.detect),
      stack.control.submissions(endpoints.upscale),
    ]).toEqual([2, 2]);
    // The pipeline's items went to the store; only the events entered the automation's history.
    const history = await stack.client.workflow
      .getHandle(automationWorkflowId('to-pipeline', 'pipeline-2'))
      .fetchHistory();
    expect(historyText(history)).toContain('"manifest"');
    expect(historyText(history)).not.toContain('"inline"');
    await when('next-step', 'pipeline-2', (s) => s.counters.runsCompleted === 1);
    expect(nextStepEvents.find((e) => e.type === 'pipeline.completed')).toMatchObject({
      data: { total: 2, ended: { completed: 2, failed: 0 } },
    });
  });

  it("chains: a job's end event (with its result, without its output) reaches an automation", async () => {
    const handle = await stack.start({
      endpointId: endpoints.firstStep,
      request: { input: { output: { big: 'not in the event' } } },
      ...JOB_OPTIONS,
      emitOnEnd: { automation: 'next-step', key: 'job-chain' },
    });
    await handle.result();
    await when('next-step', 'job-chain', (s) => s.counters.runsCompleted === 1);
    const event = nextStepEvents.find((e) => e.type === 'job.completed');
    expect(event?.data).toMatchObject({ endpointId: endpoints.firstStep, status: 'COMPLETED' });
    expect(JSON.stringify(event?.data)).not.toContain('not in the event');
  });

  it('refuses a bad event before sending anything, naming the field', async () => {
    await expect(
      sendEvent(
        stack.client,
        { id: '' },
        { automation: 'per-event', key: 'tenant-b', taskQueue: stack.taskQueue },
      ),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'event.id' });
    await expect(
      sendEvent(
        stack.client,
        { id: 'x' },
        { automation: 'bad name', key: 'tenant-b', taskQueue: stack.taskQueue },
      ),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'automation' });
    await expect(
      sendEvent(
        stack.client,
        { id: 'x' },
        { automation: 'per-event', key: 'tenant b', taskQueue: stack.taskQueue },
      ),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'key' });
    await expect(
      sendEvent(
        stack.client,
        { id: 'x', data: 'y'.repeat(70_000) },
        { automation: 'per-event', key: 'tenant-b', taskQueue: stack.taskQueue },
      ),
    ).rejects.toMatchObject({ name: 'ValidationError', field: 'event.data' });
    await expect(stateOf('per-event', 'tenant-b')()).rejects.toThrow();
  });
});
