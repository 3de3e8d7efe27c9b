/**
 * The automation workflow continuing as new on the dev server, where a continue-as-new is atomic
 * (the time-skipping test server's is not: a signal racing it can be lost there): events racing
 * the continue-as-new are all kept, and runs held across it are followed by the next run. The
 * real automation activities, stand-in child workflows (test/workflows/automation-workflows.ts);
 * every step waits on the automation's state query or the workflow's description.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAutomation, type RunPlan } from '../../activities/automation';
import { type AutomationEvent, automationWorkflowId } from '../../contracts/automation-input';
import type { automationWorkflow } from '../../workflows/automation/automation';
import { automationEventSignal } from '../../workflows/automation/automation-definitions';
import { devServerEnv } from '../support/temporal';
import { quietRuntime } from '../support/workflow-harness';
import {
  bundleAutomationWorkflows,
  inOrder,
  jobAutomation,
  type Planned,
  withAutomations,
} from '../workflows/automation-harness';
import { waitFor } from '../workflows/wait-for';

quietRuntime();

/** Names of this run's own: automations outlive their test (until idle) on the shared server. */
const names = { can: `can-${randomUUID()}`, costly: `costly-${randomUUID()}` };

describe('automation workflow: continue-as-new', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await devServerEnv();
    bundle = await bundleAutomationWorkflows();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('continues as new carrying pending events, remembered ids, counters and runs in flight; racing signals are kept', async () => {
    const planned: Planned[] = [];
    await withAutomations(env, bundle, [jobAutomation(names.can, planned)], async (t) => {
      const workflowId = automationWorkflowId(names.can, 'k1');
      const first = await t.client.workflow.signalWithStart<typeof automationWorkflow, [AutomationEvent]>(
        'automationWorkflow',
        {
          workflowId,
          taskQueue: t.queue,
          args: [{ name: names.can, key: 'k1', continueAfterEvents: 4 }],
          signal: automationEventSignal,
          signalArgs: [{ id: 'e0', data: { hold: true } }],
        },
      );
      const firstRunId = first.signaledRunId;
      // e0's run holds: everything after it waits (concurrency 1) and travels in the carry.
      await t.until(names.can, (s) => s.inFlight === 1);
      await Promise.all(
        ['e1', 'e2', 'e0', 'e3', 'e4', 'e5', 'e6', 'e1', 'e7'].map((id) => t.send(names.can, { id })),
      );
      const after = await t.until(names.can, (s) => s.counters.received === 10);
      expect(after.counters.duplicates).toBe(2);
      expect(after.inFlight + after.ready + after.pending).toBe(8);
      const described = await t.client.workflow.getHandle(workflowId).describe();
      expect(described.runId).not.toBe(firstRunId);
      // A repeat of an id seen before the continue-as-new is still a duplicate.
      await t.send(names.can, { id: 'e3' });
      await t.until(names.can, (s) => s.counters.duplicates === 3);
      // The run started before the continue-as-new ends; the new run learns it and goes on.
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      const end = await t.until(names.can, (s) => s.counters.runsCompleted === 8);
      expect(end.counters).toMatchObject({ received: 11, duplicates: 3, runsStarted: 8, runsFailed: 0 });
      // The racing signals arrive in any order; each unique id gives exactly one run.
      expect(inOrder(planned)[0]?.ids).toEqual(['e0']);
      expect(planned.map((p) => p.ids[0]).sort()).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7']);
      expect(new Set(planned.map((p) => p.runId)).size).toBe(8);
    });
  });

  it("counts a failed run's cost from its failure, also when it ends after a continue-as-new", async () => {
    const planned: Planned[] = [];
    const costly = defineAutomation({
      name: names.costly,
      concurrency: 3,
      run(events, ctx): RunPlan {
        planned.push({ runId: ctx.runId, ids: events.map((event) => event.id) });
        const data = events[0]?.data as { hold?: boolean; fail?: boolean; cost?: number } | null;
        return { kind: 'job', input: { endpointId: 'ep-1', request: { input: { ...data } } } };
      },
    });
    await withAutomations(env, bundle, [costly], async (t) => {
      const handle = t.client.workflow.getHandle(automationWorkflowId(names.costly, 'k1'));
      const first = await t.client.workflow.signalWithStart<typeof automationWorkflow, [AutomationEvent]>(
        'automationWorkflow',
        {
          workflowId: handle.workflowId,
          taskQueue: t.queue,
          args: [{ name: names.costly, key: 'k1', continueAfterEvents: 3 }],
          signal: automationEventSignal,
          signalArgs: [{ id: 'held', data: { hold: true, fail: true, cost: 2 } }],
        },
      );
      await t.until(names.costly, (s) => s.inFlight === 1);
      // In the run that started it: the cost comes from the child's failure.
      await t.send(names.costly, { id: 'f1', data: { fail: true, cost: 0.25 } });
      const inRun = await t.until(names.costly, (s) => s.counters.runsFailed === 1);
      expect(inRun.counters.cost).toBe(0.25);
      expect((await handle.describe()).runId).toBe(first.signaledRunId);
      // A third event reaches continueAfterEvents: the held run travels to the next run.
      await t.send(names.costly, { id: 'ok' });
      await waitFor(
        () => handle.describe(),
        (described) => described.runId !== first.signaledRunId,
        'the continue-as-new',
      );
      // It fails now: awaitAutomationRun reads its cost from the failure, as the workflow would.
      await t.client.workflow.getHandle(inOrder(planned)[0]?.runId ?? '').signal('release');
      const end = await t.until(names.costly, (s) => s.counters.runsFailed === 2 && s.inFlight === 0);
      expect(end.counters).toMatchObject({ runsStarted: 3, runsFailed: 2, runsCompleted: 1, cost: 2.25 });
    });
  });
});
