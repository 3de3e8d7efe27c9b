/**
 * Plumbing of the automation workflow tests (time-skipping and dev server alike): the real
 * automation activities over a batch store in memory, stand-in child workflows
 * (automation-workflows.ts), a worker of its own around each test body, and waits on the
 * automation's state query.
 */
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import {
  type AutomationDefinition,
  createAutomationActivities,
  defineAutomation,
  type RunPlan,
} from '../../activities/automation';
import { sendEvent } from '../../client/automations';
import {
  type AutomationEvent,
  type AutomationState,
  automationWorkflowId,
} from '../../contracts/automation-input';
import type { BatchStore } from '../../stores/batch-store';
import { automationStateQuery } from '../../workflows/automation/automation-definitions';
import { bundleWorkflows, withWorker } from '../support/workflow-harness';
import { waitFor } from './wait-for';

export function bundleAutomationWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(require.resolve('./automation-workflows.ts'));
}

/** Each group the definitions planned: its run id and its event ids. */
export interface Planned {
  runId: string;
  ids: string[];
}

export function memoryStore(): BatchStore & { files: Map<string, readonly string[]> } {
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
export function jobAutomation(
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
export const inOrder = (planned: Planned[]): Planned[] =>
  [...planned].sort((a, b) => Number(a.runId.split(':').pop()) - Number(b.runId.split(':').pop()));

export interface AutomationTools {
  queue: string;
  client: Client;
  send: (name: string, event: { id: string; data?: unknown }) => Promise<void>;
  state: (name: string) => Promise<AutomationState>;
  /** Waits until the automation's state (key k1) satisfies `ok`; returns that state. */
  until: (name: string, ok: (state: AutomationState) => boolean) => Promise<AutomationState>;
}

/** Runs `body` with a worker serving these definitions, and helpers bound to one key (k1). */
export function withAutomations<T>(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundleWithSourceMap,
  definitions: AutomationDefinition[],
  body: (tools: AutomationTools) => Promise<T>,
  store: BatchStore = memoryStore(),
): Promise<T> {
  const activities = createAutomationActivities({
    automations: definitions,
    // A plain client: the time-skipping one's result() would lock time skipping from inside an activity.
    temporalClient: new Client({ connection: env.connection, namespace: env.namespace }),
    batchStore: store,
    runPollMs: 50,
  });
  // A run whose first workflow task has not completed (just started, or just continued as new)
  // answers that it has no such query; `until` looks again.
  const state = (name: string) =>
    env.client.workflow.getHandle(automationWorkflowId(name, 'k1')).query(automationStateQuery);
  return withWorker(env, bundle, activities, (queue) =>
    body({
      queue,
      client: env.client,
      send: async (name, event) => {
        await sendEvent(env.client, event as AutomationEvent, {
          automation: name,
          key: 'k1',
          taskQueue: queue,
        });
      },
      state,
      until: (name, ok) => waitFor(() => state(name), ok, `automation ${name}'s state`),
    }),
  );
}
