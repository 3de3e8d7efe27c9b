/**
 * The automation workflow's flow controls on the time-skipping server: the real automation
 * activities (definitions registered as on a worker, a batch store in memory) and stand-in child
 * workflows (automation-workflows.ts). Time moves only by env.sleep; the tests wait on the
 * workflow's own state (its query), never on a clock.
 */
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AutomationDefinition,
  createAutomationActivities,
  defineAutomation,
  type RunPlan,
} from '../../activities/automation';
import type { BatchStore } from '../../activities/batch-store';
import { sendEvent } from '../../client/automations';
import type { automationWorkflow } from '../../workflows/automation';
import { automationEventSignal, automationStateQuery } from '../../workflows/automation-definitions';
import {
  type AutomationEvent,
  type AutomationState,
  automationWorkflowId,
} from '../../workflows/automation-input';
import { historyText } from '../support/history';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows, failureOf, quietRuntime, withWorker } from '../support/workflow-harness';

quietRuntime();

/** Each group the definitions planned: its run id and its event ids. */
interface Planned {
  runId: string;
  ids: string[];
}

function memoryStore(): BatchStore & { files: Map<string, readonly string[]> } {
  const files = new Map<string, readonly string[]>();
  return {
    name: 'memory',
    files,
    async countLines(key) {
      return files.get(key)?.length ?? 0;
    },
    async readLines(key, indexes) {
      return indexes.map((i) => files.get(key)?.[i] ?? '');
    },
    async writeLines(key, lines) {
      files.set(key, [...lines]);
    },
    async list() {
      return [];
    },
  };
}

/** A job per group; the job holds (until released) when its first event's data says so. */
function jobAutomation(
  name: string,
  planned: Planned[],
  controls: Omit<AutomationDefinition, 'name' | 'run'> = {},
): AutomationDefinition {
  return defineAutomation({
    name,
    ...controls,
    run(events, ctx): RunPlan {
      planned.push({ runId: ctx.runId, ids: events.map((event) => event.id) });
      const first = events[0]?.data as { hold?: boolean; fail?: boolean } | null;
      return {
        kind: 'job',
        input: {
          endpointId: 'ep-1',
          request: { input: { hold: first?.hold === true, fail: first?.fail === true, n: events.length } },
        },
      };
    },
  });
}

/** The groups in run order (plans run side by side, so they may be called in any order). */
const inOrder = (planned: Planned[]): Planned[] =>
  [...planned].sort((a, b) => Number(a.runId.split(':').pop()) - Number(b.runId.split(':').pop()));

async function until(
  read: () => Promise<AutomationState>,
  ok: (state: AutomationState) => boolean,
): Promise<AutomationState> {
  let last: AutomationState | undefined;
  for (let i = 0; i < 600; i++) {
    try {
      last = await read();
      if (ok(last)) return last;
    } catch {
      // Not started yet, or between two runs of a continue-as-new.
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the automation never got there; last state ${JSON.stringify(last)}`);
}

describe('automation workflow', () => {
  let sharedEnv: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    sharedEnv = await timeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('./automation-workflows.ts'));
  });
  afterAll(async () => {
    await sharedEnv?.teardown();
  });

  /** Runs `body` with a worker serving these definitions, and helpers bound to one key. */
  function withAutomations<T>(
    definitions: AutomationDefinition[],
    body: (tools: {
      queue: string;
      client: Client;
      send: (name: string, event: { id: string; data?: unknown }) => Promise<void>;
      state: (name: string) => () => Promise<AutomationState>;
    }) => Promise<T>,
    store: BatchStore = memoryStore(),
    env: TestWorkflowEnvironment = sharedEnv,
  ): Promise<T> {
    const activities = createAutomationActivities({
      automations: definitions,
      // A plain client: the time-skipping one's result() would lock time skipping from inside an activity.
      temporalClient: new Client({ connection: env.connection, namespace: env.namespace }),
      batchStore: store,
      runPollMs: 50,
    });
    return withWorker(env, bundle, activities, (queue) =>
      body({
        queue,
        client: env.client,
        send: async (name, event) => {
          await sendEvent(env.client, name, 'k1', event as AutomationEvent, { taskQueue: queue });
        },
        state: (name) => () =>
          env.client.workflow.getHandle(automationWorkflowId(name, 'k1')).query(automationStateQuery),
      }),
    );
  }

  it('starts one run per event without flow controls, and drops a repeated id within the dedupe window only', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('each', planned, { dedupeWindow: '30 seconds' })], async (t) => {
      await t.send('each', { id: 'a' });
      await t.send('each', { id: 'b' });
      await t.send('each', { id: 'a' });
      await until(t.state('each'), (s) => s.counters.received === 3 && s.counters.runsCompleted === 2);
      await sharedEnv.sleep('31 seconds');
      await t.send('each', { id: 'a' });
      const state = await until(t.state('each'), (s) => s.counters.runsCompleted === 3);
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
      await until(t.state('deb'), (s) => s.pending === 1);
      await sharedEnv.sleep('6 seconds');
      await t.send('deb', { id: 'b' });
      await until(t.state('deb'), (s) => s.pending === 2);
      await sharedEnv.sleep('6 seconds');
      // 12 s after a, 6 s after b: still not quiet.
      expect((await t.state('deb')()).pending).toBe(2);
      expect(planned).toEqual([]);
      await sharedEnv.sleep('5 seconds');
      await until(t.state('deb'), (s) => s.counters.runsCompleted === 1);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a', 'b']]);
      await t.send('deb', { id: 'c' });
      await until(t.state('deb'), (s) => s.pending === 1);
      await sharedEnv.sleep('11 seconds');
      await until(t.state('deb'), (s) => s.counters.runsCompleted === 2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a', 'b'], ['c']]);
    });
  });

  it('batches events by count, and by time after the first', async () => {
    const planned: Planned[] = [];
    await withAutomations(
      [jobAutomation('bat', planned, { batch: { maxEvents: 3, maxWait: '20 seconds' }, concurrency: 5 })],
      async (t) => {
        for (const id of ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']) await t.send('bat', { id });
        const state = await until(t.state('bat'), (s) => s.counters.runsCompleted === 2 && s.pending === 1);
        expect(state.counters.received).toBe(7);
        expect(inOrder(planned).map((p) => p.ids)).toEqual([
          ['e1', 'e2', 'e3'],
          ['e4', 'e5', 'e6'],
        ]);
        await sharedEnv.sleep('21 seconds');
        await until(t.state('bat'), (s) => s.counters.runsCompleted === 3);
        expect(inOrder(planned).map((p) => p.ids)).toEqual([['e1', 'e2', 'e3'], ['e4', 'e5', 'e6'], ['e7']]);
      },
    );
  });

  it('keeps at most `concurrency` runs in flight per key; further groups wait in order', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('conc', planned, { concurrency: 2 })], async (t) => {
      for (const id of ['a', 'b', 'c', 'd']) await t.send('conc', { id, data: { hold: true } });
      const state = await until(t.state('conc'), (s) => s.counters.received === 4 && s.inFlight === 2);
      expect(state.ready).toBe(2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b']]);
      await t.client.workflow.getHandle(inOrder(planned)[1]?.runId ?? '').signal('release');
      await until(t.state('conc'), (s) => s.counters.runsCompleted === 1 && s.inFlight === 2);
      expect(inOrder(planned).map((p) => p.ids)).toEqual([['a'], ['b'], ['c']]);
      for (const run of [inOrder(planned)[0], inOrder(planned)[2]])
        await t.client.workflow.getHandle(run?.runId ?? '').signal('release');
      await until(t.state('conc'), (s) => s.inFlight === 1 && s.counters.runsStarted === 4);
      await t.client.workflow.getHandle(inOrder(planned)[3]?.runId ?? '').signal('release');
      const end = await until(t.state('conc'), (s) => s.counters.runsCompleted === 4);
      expect(end).toMatchObject({ inFlight: 0, ready: 0, pending: 0 });
    });
  });

  it('continues as new carrying pending events, remembered ids, counters and runs in flight; racing signals are kept', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('can', planned)], async (t) => {
      const workflowId = automationWorkflowId('can', 'k1');
      const first = await t.client.workflow.signalWithStart<typeof automationWorkflow, [AutomationEvent]>(
        'automationWorkflow',
        {
          workflowId,
          taskQueue: t.queue,
          args: [{ name: 'can', key: 'k1', continueAfterEvents: 4 }],
          signal: automationEventSignal,
          signalArgs: [{ id: 'e0', data: { hold: true } }],
        },
      );
      const firstRunId = first.signaledRunId;
      // e0's run holds: everything after it waits (concurrency 1) and travels in the carry.
      await until(t.state('can'), (s) => s.inFlight === 1);
      await Promise.all(
        ['e1', 'e2', 'e0', 'e3', 'e4', 'e5', 'e6', 'e1', 'e7'].map((id) => t.send('can', { id })),
      );
      const after = await until(t.state('can'), (s) => s.counters.received === 10);
      expect(after.counters.duplicates).toBe(2);
      expect(after.inFlight + after.ready + after.pending).toBe(8);
      const described = await t.client.workflow.getHandle(workflowId).describe();
      expect(described.runId).not.toBe(firstRunId);
      // A repeat of an id seen before the continue-as-new is still a duplicate.
      await t.send('can', { id: 'e3' });
      await until(t.state('can'), (s) => s.counters.duplicates === 3);
      // The run started before the continue-as-new ends; the new run learns it and goes on.
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      const end = await until(t.state('can'), (s) => s.counters.runsCompleted === 8);
      expect(end.counters).toMatchObject({ received: 11, duplicates: 3, runsStarted: 8, runsFailed: 0 });
      // The racing signals arrive in any order; each unique id gives exactly one run.
      expect(inOrder(planned)[0]?.ids).toEqual(['e0']);
      expect(planned.map((p) => p.ids[0]).sort()).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']);
      expect(new Set(planned.map((p) => p.runId)).size).toBe(8);
    });
  });

  it('counts a failed run as failed and goes on', async () => {
    const planned: Planned[] = [];
    await withAutomations([jobAutomation('fails', planned)], async (t) => {
      await t.send('fails', { id: 'a', data: { fail: true } });
      await t.send('fails', { id: 'b' });
      const state = await until(
        t.state('fails'),
        (s) => s.counters.runsCompleted + s.counters.runsFailed === 2,
      );
      expect(state.counters).toMatchObject({ runsFailed: 1, runsCompleted: 1 });
    });
  });

  it("counts a failed run's cost from its failure, also when it ends after a continue-as-new", async () => {
    const planned: Planned[] = [];
    const costly = defineAutomation({
      name: 'costly',
      concurrency: 3,
      run(events, ctx): RunPlan {
        planned.push({ runId: ctx.runId, ids: events.map((event) => event.id) });
        const data = events[0]?.data as { hold?: boolean; fail?: boolean; cost?: number } | null;
        return { kind: 'job', input: { endpointId: 'ep-1', request: { input: { ...data } } } };
      },
    });
    await withAutomations([costly], async (t) => {
      const handle = t.client.workflow.getHandle(automationWorkflowId('costly', 'k1'));
      const first = await t.client.workflow.signalWithStart<typeof automationWorkflow, [AutomationEvent]>(
        'automationWorkflow',
        {
          workflowId: handle.workflowId,
          taskQueue: t.queue,
          args: [{ name: 'costly', key: 'k1', continueAfterEvents: 3 }],
          signal: automationEventSignal,
          signalArgs: [{ id: 'held', data: { hold: true, fail: true, cost: 2 } }],
        },
      );
      await until(t.state('costly'), (s) => s.inFlight === 1);
      // In the run that started it: the cost comes from the child's failure.
      await t.send('costly', { id: 'f1', data: { fail: true, cost: 0.25 } });
      const inRun = await until(t.state('costly'), (s) => s.counters.runsFailed === 1);
      expect(inRun.counters.cost).toBe(0.25);
      expect((await handle.describe()).runId).toBe(first.signaledRunId);
      // A third event reaches continueAfterEvents: the held run travels to the next run.
      await t.send('costly', { id: 'ok' });
      for (let i = 0; i < 600 && (await handle.describe()).runId === first.signaledRunId; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await handle.describe()).runId).not.toBe(first.signaledRunId);
      // It fails now: awaitAutomationRun reads its cost from the failure, as the workflow would.
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      const end = await until(t.state('costly'), (s) => s.counters.runsFailed === 2 && s.inFlight === 0);
      expect(end.counters).toMatchObject({ runsStarted: 3, runsFailed: 2, runsCompleted: 1, cost: 2.25 });
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
      await until(t.state('budgeted'), (s) => s.counters.received === 5 && s.inFlight === 1);
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      const handle = t.client.workflow.getHandle(automationWorkflowId('budgeted', 'k1'));
      for (let i = 0; i < 600 && (await handle.describe()).status.name === 'RUNNING'; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      return failureOf(handle.result());
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
        await until(t.state('fan'), (s) => s.counters.runsCompleted === 1);
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
          await until(t.state('idle'), (s) => s.counters.runsCompleted === 1);
          const handle = t.client.workflow.getHandle<typeof automationWorkflow>(
            automationWorkflowId('idle', 'k1'),
          );
          await env.sleep('3 minutes');
          // Ended (awaiting result() through the time-skipping client held up the worker's shutdown here).
          expect((await handle.describe()).status.name).toBe('COMPLETED');
          await t.send('idle', { id: 'b' });
          await until(t.state('idle'), (s) => s.counters.runsCompleted === 1 && s.counters.received === 1);
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
