/**
 * The automation workflow's flow controls on the time-skipping server: the real automation
 * activities (definitions registered as on a worker, a batch store in memory) and stand-in child
 * workflows (automation-workflows.ts). Time moves only by env.sleep; the tests wait on the
 * workflow's own state (its query), never on a clock. The cases that continue as new while
 * signals race or runs are held are on the dev server (test/integration/automation-continue.test.ts).
 */
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AutomationDefinition, defineAutomation, type RunPlan } from '../../activities/automation';
import { automationWorkflowId } from '../../contracts/automation-input';
import type { BatchStore } from '../../stores/batch-store';
import type { automationWorkflow } from '../../workflows/automation/automation';
import { historyText } from '../support/history';
import { timeSkippingEnv } from '../support/temporal';
import { failureOf, quietRuntime } from '../support/workflow-harness';
import { activitySummaries, currentDetails, timerSummaries } from '../support/workflow-metadata';
import {
  type AutomationTools,
  bundleAutomationWorkflows,
  inOrder,
  jobAutomation,
  memoryStore,
  type Planned,
  withAutomations as withAutomationsOn,
} from './automation-harness';

quietRuntime();

describe('automation workflow', () => {
  let sharedEnv: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    // It registers the search attributes sendEvent sets (the automation's name and key).
    sharedEnv = await timeSkippingEnv();
    bundle = await bundleAutomationWorkflows();
  });
  afterAll(async () => {
    await sharedEnv?.teardown();
  });

  /** Runs `body` with a worker serving these definitions, on this file's server unless told. */
  const withAutomations = <T>(
    definitions: AutomationDefinition[],
    body: (tools: AutomationTools) => Promise<T>,
    store: BatchStore = memoryStore(),
    env: TestWorkflowEnvironment = sharedEnv,
  ): Promise<T> => withAutomationsOn(env, bundle, definitions, body, store);

  it('starts one run per event without flow controls, and drops a repeated id within the dedupe window only', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('each', planned, { dedupeWindow: '30 seconds' })], async (t) => {
      await t.send('each', { id: 'a' });
      await t.send('each', { id: 'b' });
      await t.send('each', { id: 'a' });
      await t.until('each', (s) => s.counters.received === 3 && s.counters.runsCompleted === 2);
      await sharedEnv.sleep('31 seconds');
      await t.send('each', { id: 'a' });
      const state = await t.until('each', (s) => s.counters.runsCompleted === 3);
      expect(state.counters).toMatchObject({ received: 4, duplicates: 1, runsStarted: 3, runsFailed: 0 });
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b'], ['a']]);
      // Run ids derive from the automation's id and a sequence number.
      expect(inOrder(planned).map((p) => p.runId.replace(/:[^:]+:(\d+)$/, ':$1'))).toEqual([
        'automation:each:k1:1',
        'automation:each:k1:2',
        'automation:each:k1:3',
      ]);
    });
  });

  it('debounces: one run once the key has been quiet, with the events since the last run', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('deb', planned, { debounce: '10 seconds' })], async (t) => {
      await t.send('deb', { id: 'a' });
      await t.until('deb', (s) => s.pending === 1);
      await sharedEnv.sleep('6 seconds');
      await t.send('deb', { id: 'b' });
      await t.until('deb', (s) => s.pending === 2);
      await sharedEnv.sleep('6 seconds');
      // 12 s after a, 6 s after b: still not quiet.
      expect((await t.state('deb')).pending).toBe(2);
      expect(planned).toEqual([]);
      await sharedEnv.sleep('5 seconds');
      await t.until('deb', (s) => s.counters.runsCompleted === 1);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a', 'b']]);
      await t.send('deb', { id: 'c' });
      await t.until('deb', (s) => s.pending === 1);
      await sharedEnv.sleep('11 seconds');
      await t.until('deb', (s) => s.counters.runsCompleted === 2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a', 'b'], ['c']]);
      // Its timers say what they wait for: the group that forms once the key is quiet (and, between
      // groups, the idle end).
      const history = await t.client.workflow.getHandle(automationWorkflowId('deb', 'k1')).fetchHistory();
      const timers = timerSummaries(history);
      expect(timers.filter((summary) => summary?.startsWith('group ')).length).toBeGreaterThanOrEqual(2);
      for (const summary of timers)
        expect(summary).toMatch(
          /^(group \d+ pending events? at .+ UTC unless more arrive first|end at .+ UTC unless an event arrives \(idle\))$/,
        );
    });
  });

  it('batches events by count, and by time after the first', async () => {
    const planned: Planned[] = [];
    await withAutomations(
      [jobAutomation('bat', planned, { batch: { maxEvents: 3, maxWait: '20 seconds' }, concurrency: 5 })],
      async (t) => {
        for (const id of ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']) await t.send('bat', { id });
        const state = await t.until('bat', (s) => s.counters.runsCompleted === 2 && s.pending === 1);
        expect(state.counters.received).toBe(7);
        expect(inOrder(planned).map((p) => p.ids)).toEqual([
          ['e1', 'e2', 'e3'],
          ['e4', 'e5', 'e6'],
        ]);
        await sharedEnv.sleep('21 seconds');
        await t.until('bat', (s) => s.counters.runsCompleted === 3);
        expect(inOrder(planned).map((p) => p.ids)).toEqual([['e1', 'e2', 'e3'], ['e4', 'e5', 'e6'], ['e7']]);
      },
    );
  });

  it('keeps at most `concurrency` runs in flight per key; further groups wait in order', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('conc', planned, { concurrency: 2 })], async (t) => {
      for (const id of ['a', 'b', 'c', 'd']) await t.send('conc', { id, data: { hold: true } });
      const state = await t.until('conc', (s) => s.counters.received === 4 && s.inFlight === 2);
      expect(state.ready).toBe(2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b']]);
      // The UI's current details say the same as the state query, and follow it.
      const automation = t.client.workflow.getHandle(automationWorkflowId('conc', 'k1'));
      const shown = await currentDetails(automation);
      expect(shown).toContain('| Runs in flight | 2 |');
      expect(shown).toContain('| Groups waiting for a run | 2 |');
      expect(shown).toContain('| Runs started | 2 |');
      expect(shown).toContain('| State | at its concurrency: groups wait for a run to end |');
      await t.client.workflow.getHandle(inOrder(planned)[1]?.runId ?? '').signal('release');
      await t.until('conc', (s) => s.counters.runsCompleted === 1 && s.inFlight === 2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b'], ['c']]);
      const after = await currentDetails(automation);
      expect(after).toContain('| Runs completed | 1 |');
      expect(after).toContain('| Groups waiting for a run | 1 |');
      // Each plan says which run it is for; the flow controls are read under the automation's name.
      expect(activitySummaries(await automation.fetchHistory())).toEqual(
        expect.arrayContaining([
          ['describeAutomation', 'read the definition of automation conc'],
          ['planAutomationRun', 'plan run 1 for 1 event'],
          ['planAutomationRun', 'plan run 3 for 1 event'],
        ]),
      );
      for (const run of [inOrder(planned)[0], inOrder(planned)[2]])
        await t.client.workflow.getHandle(run?.runId ?? '').signal('release');
      await t.until('conc', (s) => s.inFlight === 1 && s.counters.runsStarted === 4);
      await t.client.workflow.getHandle(inOrder(planned)[3]?.runId ?? '').signal('release');
      const end = await t.until('conc', (s) => s.counters.runsCompleted === 4);
      expect(end).toMatchObject({ inFlight: 0, ready: 0, pending: 0 });
    });
  });

  it('counts a failed run as failed and goes on', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('fails', planned)], async (t) => {
      await t.send('fails', { id: 'a', data: { fail: true } });
      await t.send('fails', { id: 'b' });
      const state = await t.until('fails', (s) => s.counters.runsCompleted + s.counters.runsFailed === 2);
      expect(state.counters).toMatchObject({ runsFailed: 1, runsCompleted: 1 });
    });
  });

  it('stops at its budget: no run starts once the ended runs cost that much, then it fails with AutomationBudgetExceeded', async () => {
    const planned: Planned[] = [];
    const budgeted = defineAutomation({
      name: 'budgeted',
      budget: 2.5,
      run(events, ctx): RunPlan {
        planned.push({ runId: ctx.runId, ids: events.map((event) => event.id) });
        const hold = (events[0]?.data as { hold?: boolean } | null)?.hold === true;
        return { kind: 'job', input: { endpointId: 'ep-1', request: { input: { hold, cost: 1 } } } };
      },
    });
    const failure = await withAutomations([budgeted], async (t) => {
      // The first run holds until every event has arrived: all five wait for it (concurrency 1).
      await t.send('budgeted', { id: 'a', data: { hold: true } });
      for (const id of ['b', 'c', 'd', 'e']) await t.send('budgeted', { id });
      await t.until('budgeted', (s) => s.counters.received === 5 && s.inFlight === 1);
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      // Its end, through a plain client: the time-skipping client's result() would let the server
      // skip time (to the dedupe and idle timers) while the last runs are still being started.
      const plain = new Client({ connection: sharedEnv.connection, namespace: sharedEnv.namespace });
      return failureOf(plain.workflow.getHandle(automationWorkflowId('budgeted', 'k1')).result());
    });
    expect(failure.type).toBe('AutomationBudgetExceeded');
    // 1 + 1 reached no budget; the third run brought it to 3 >= 2.5: d and e never ran.
    expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b'], ['c']]);
    expect(failure.details?.[0]).toMatchObject({
      budget: 2.5,
      counters: { runsCompleted: 3, cost: 3 },
      notStarted: 2,
      notStartedIds: ['d', 'e'],
    });
  });

  it("writes a batch plan's items to the store as a manifest: no item list in history", async () => {
    const store = memoryStore();
    const batches = defineAutomation({
      name: 'fan',
      batch: { maxEvents: 2, maxWait: '1 minute' },
      run: (events) => ({
        kind: 'batch',
        input: {
          endpointId: 'ep-1',
          items: { inline: events.map((event) => ({ input: { secretish: `item-of-${event.id}` } })) },
        },
      }),
    });
    await withAutomations(
      [batches],
      async (t) => {
        await t.send('fan', { id: 'x1' });
        await t.send('fan', { id: 'x2' });
        await t.until('fan', (s) => s.counters.runsCompleted === 1);
        const [lines] = [...store.files.values()];
        expect(lines?.map((line) => JSON.parse(line).input.secretish)).toEqual(['item-of-x1', 'item-of-x2']);
        const history = await t.client.workflow.getHandle(automationWorkflowId('fan', 'k1')).fetchHistory();
        expect(historyText(history)).not.toContain('item-of-x1');
        expect(historyText(history)).toContain('"manifest"');
      },
      store,
    );
  });

  it('fails clearly when no worker registered the automation', async () => {
    await withAutomations([], async (t) => {
      await t.send('nobody', { id: 'a' });
      const failure = await failureOf(
        t.client.workflow.getHandle<typeof automationWorkflow>(automationWorkflowId('nobody', 'k1')).result(),
      );
      expect(failure.type).toBe('AutomationNotRegistered');
      expect(failure.message).toContain('no automation named "nobody" is registered on this worker');
    });
  });

  it('ends when idle and starts again on the next event', async () => {
    const planned: Planned[] = [];
    // A server of its own: time skipped here must not wake the other tests' workflows, whose
    // workers are gone (the server then holds the skip).
    const env = await timeSkippingEnv();
    try {
      await withAutomations(
        [jobAutomation('idle', planned, { idleTimeout: '2 minutes', dedupeWindow: '1 minute' })],
        async (t) => {
          await t.send('idle', { id: 'a' });
          await t.until('idle', (s) => s.counters.runsCompleted === 1);
          const handle = t.client.workflow.getHandle<typeof automationWorkflow>(
            automationWorkflowId('idle', 'k1'),
          );
          await env.sleep('3 minutes');
          // Ended (awaiting result() through the time-skipping client held up the worker's shutdown here).
          expect((await handle.describe()).status.name).toBe('COMPLETED');
          // Its last timer said when it would end unless an event came.
          expect(timerSummaries(await handle.fetchHistory()).at(-1)).toMatch(
            /^end at .+ UTC unless an event arrives \(idle\)$/,
          );
          await t.send('idle', { id: 'b' });
          await t.until('idle', (s) => s.counters.runsCompleted === 1 && s.counters.received === 1);
          expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b']]);
          expect(inOrder(planned)[0]?.runId).not.toBe(inOrder(planned)[1]?.runId);
        },
        memoryStore(),
        env,
      );
    } finally {
      await env.teardown();
    }
  });
});
