/**
 * The endpoint's gate as a workflow, on the time-skipping server: an ask is answered at once (room,
 * or when to ask again) and the view shows it; an ask for another endpoint is refused by the
 * validator, nothing recorded; an idle gate ends by itself, but not while an operator's control
 * is set. The order of grants is engine/endpoint-grants.ts's, tested with tables.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointGateId, SEND_SLACK_MS } from '../../contracts/endpoint-gate';
import { SPARE_MAX, SPARE_MS } from '../../engine/endpoint-grants';
import type { endpointGate } from '../../workflows/endpoint/endpoint-gate';
import {
  askToSendUpdate,
  gateViewQuery,
  setGateControlsUpdate,
} from '../../workflows/endpoint/endpoint-gate-definitions';
import { historyText } from '../support/history';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows, quietRuntime, withWorker } from '../support/workflow-harness';

quietRuntime();

describe('endpointGate', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    env = await timeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('../../workflows/endpoint/endpoint-gate.ts'));
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, endpointId: string) =>
    env.client.workflow.start<typeof endpointGate>('endpointGate', {
      taskQueue,
      workflowId: `${endpointGateId(endpointId)}-${taskQueue}`,
      args: [{ endpointId }],
    });

  it('answers each ask at once, room or when to ask again, and ends once idle', async () => {
    await withWorker(env, bundle, {}, async (taskQueue) => {
      const gate = await start(taskQueue, 'ep-1');
      const first = await gate.executeUpdate(askToSendUpdate, {
        args: [{ endpointId: 'ep-1', id: 'a', count: 3, limit: 4 }],
      });
      expect(first).toMatchObject({ count: 3 });
      expect(first.sendBy - first.at).toBe(SEND_SLACK_MS);
      const second = await gate.executeUpdate(askToSendUpdate, {
        args: [{ endpointId: 'ep-1', id: 'b', count: 3, limit: 4, priority: 1, fairnessKey: 'tenant' }],
      });
      expect(second).toMatchObject({ count: 1 });
      const third = await gate.executeUpdate(askToSendUpdate, {
        args: [{ endpointId: 'ep-1', id: 'c', count: 2, limit: 4 }],
      });
      expect(third.count).toBe(0);
      expect(third.retryAt).toBeGreaterThan(third.at);
      expect(await gate.query(gateViewQuery)).toMatchObject({
        endpointId: 'ep-1',
        paused: false,
        runLimit: 4,
        inWindow: 4,
        keys: [
          { fairnessKey: '', waiting: 2, granted: 3 },
          { fairnessKey: 'tenant', waiting: 0, granted: 1 },
        ],
        waitingByPriority: { '3': 2 },
      });
      // Nothing more asked: the gate ends by itself (time skips).
      await gate.result();
    });
  });

  it('gives an ask granted at once on an idle endpoint spare room, and counts it in the window', async () => {
    await withWorker(env, bundle, {}, async (taskQueue) => {
      const gate = await start(taskQueue, 'ep-spare');
      const granted = await gate.executeUpdate(askToSendUpdate, {
        args: [{ endpointId: 'ep-spare', id: 'single', count: 1, limit: 1_000 }],
      });
      expect(granted).toMatchObject({ count: 1, spare: { count: SPARE_MAX } });
      expect((granted.spare?.until ?? 0) - granted.at).toBe(SPARE_MS);
      expect(await gate.query(gateViewQuery)).toMatchObject({ inWindow: 1 + SPARE_MAX });
      await gate.terminate();
    });
  });

  it('refuses an ask for another endpoint in its validator, leaving no trace in history', async () => {
    await withWorker(env, bundle, {}, async (taskQueue) => {
      const gate = await start(taskQueue, 'ep-2');
      const refused = await gate
        .executeUpdate(askToSendUpdate, { args: [{ endpointId: 'ep-3', id: 'a', count: 1, limit: 4 }] })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((refused as Error).cause)).toContain("this gate is ep-2's, not ep-3's");
      expect(historyText(await gate.fetchHistory())).not.toContain('ep-3');
      await gate.terminate();
    });
  });

  it('keeps running while paused, and ends once resumed and idle', async () => {
    await withWorker(env, bundle, {}, async (taskQueue) => {
      const gate = await start(taskQueue, 'ep-4');
      expect(await gate.executeUpdate(setGateControlsUpdate, { args: [{ paused: true }] })).toMatchObject({
        paused: true,
      });
      const paused = await gate.executeUpdate(askToSendUpdate, {
        args: [{ endpointId: 'ep-4', id: 'a', count: 1, limit: 4 }],
      });
      expect(paused.count).toBe(0);
      // An idle period and more pass: still running, the pause in force.
      await env.sleep('20 minutes');
      expect((await gate.describe()).status.name).toBe('RUNNING');
      expect((await gate.query(gateViewQuery)).paused).toBe(true);
      await gate.executeUpdate(setGateControlsUpdate, { args: [{ paused: false }] });
      await gate.result();
    });
  });
});
