/**
 * What an automation costs in history: events per 1,000 events handled (all runs of its
 * continue-as-new chain together), the state it carries across a continue-as-new, the worker's
 * heap, and the time from an event's signal to its run's start. On the dev server with stand-in
 * children (bench/automation-workflows.ts). Prints figures; asserts nothing.
 *
 *   npx tsx bench/automation.ts
 *
 * --events N   events per scenario (default 1000), 10% of them repeats of earlier ids
 */
import { Worker } from '@temporalio/worker';
import { createAutomationActivities, defineAutomation } from '../activities/automation';
import { sendEvent } from '../client/automations';
import { automationWorkflowId } from '../contracts/automation-input';
import { automationStateQuery } from '../workflows/automation/automation-definitions';
import { median, numberArg, quietRuntime, say, startDevServer } from './support';

const EVENTS = numberArg('events', 1000);

const job = () => ({ kind: 'job' as const, input: { endpointId: 'ep-1', request: { input: {} } } });
const scenarios = [
  { label: 'a run per event', definition: { name: 'bench-each', concurrency: 50 } },
  {
    label: 'batches of 100 events',
    definition: { name: 'bench-batch', batch: { maxEvents: 100, maxWait: '1 hour' } },
  },
];

async function main(): Promise<void> {
  quietRuntime();
  const env = await startDevServer();
  const taskQueue = 'bench-automation';
  const definitions = scenarios.map((s) => defineAutomation({ ...s.definition, run: job }));
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath: require.resolve('./automation-workflows'),
    activities: createAutomationActivities({ automations: definitions, temporalClient: env.client }),
  });
  try {
    await worker.runUntil(async () => {
      for (const scenario of scenarios) {
        const name = scenario.definition.name;
        const workflowId = automationWorkflowId(name, 'k');
        const heapBefore = process.memoryUsage().heapUsed;
        const ids = Array.from(
          { length: EVENTS },
          (_, i) => `e-${i < EVENTS * 0.9 ? i : i - Math.floor(EVENTS * 0.9)}`,
        );
        // Sent one after another: the k-th distinct id is the k-th run (sequence number k).
        const sentAt: number[] = [];
        const seen = new Set<string>();
        const started = performance.now();
        for (const [i, id] of ids.entries()) {
          const at = Date.now();
          await sendEvent(env.client, { id, data: { i } }, { automation: name, key: 'k', taskQueue });
          if (!seen.has(id)) sentAt.push(at);
          seen.add(id);
        }
        const unique = seen.size;
        const runs = scenario.definition.batch
          ? Math.ceil(unique / scenario.definition.batch.maxEvents)
          : unique;
        let state = await env.client.workflow.getHandle(workflowId).query(automationStateQuery);
        while (state.counters.runsCompleted < runs) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          state = await env.client.workflow
            .getHandle(workflowId)
            .query(automationStateQuery)
            .catch(() => state);
        }
        const elapsed = performance.now() - started;
        const heapAfter = process.memoryUsage().heapUsed;
        // Every run of the chain, with its history length.
        let historyEvents = 0;
        let chainRuns = 0;
        let carryBytes = 0;
        for await (const execution of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
          historyEvents += execution.historyLength;
          chainRuns += 1;
        }
        for await (const execution of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
          const history = await env.client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
          const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
          const bytes = started?.input?.payloads?.reduce((n, p) => n + (p.data?.length ?? 0), 0) ?? 0;
          carryBytes = Math.max(carryBytes, bytes);
        }
        // Latency: an event's signal to its run's child start, for the per-event scenario.
        const latencies: number[] = [];
        if (!scenario.definition.batch) {
          for await (const child of env.client.workflow.list({
            query: `WorkflowId STARTS_WITH '${workflowId}:' AND WorkflowType = 'serverlessJob'`,
          })) {
            const seq = Number(child.workflowId.split(':').pop());
            const sent = sentAt[seq - 1];
            if (sent !== undefined && seq <= unique) latencies.push(child.startTime.getTime() - sent);
          }
        }
        say(
          `${scenario.label}: ${EVENTS} events (${EVENTS - unique} repeats) -> ${state.counters.runsStarted} runs in ${(elapsed / 1000).toFixed(1)} s`,
        );
        say(
          `  history: ${historyEvents} events over ${chainRuns} runs of the chain = ${((historyEvents * 1000) / EVENTS).toFixed(0)} per 1,000 events`,
        );
        say(
          `  largest carried state: ${(carryBytes / 1024).toFixed(1)} KiB; worker heap +${((heapAfter - heapBefore) / 1024 / 1024).toFixed(1)} MB`,
        );
        if (latencies.length)
          say(
            `  signal to run start: median ${median(latencies).toFixed(0)} ms over ${latencies.length} runs (visibility list)`,
          );
      }
    });
  } finally {
    await env.teardown();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
