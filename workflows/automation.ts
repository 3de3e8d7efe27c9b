/**
 * One long-lived workflow per automation and key: it takes events by signal and turns them into
 * runs. (First cut: it accepts and de-duplicates events; the flow controls follow.)
 */
import { condition, setHandler } from '@temporalio/workflow';
import { automationEventSignal, automationStateQuery } from './automation-definitions';
import type { AutomationCounters, AutomationEvent, AutomationWorkflowInput } from './automation-input';

export async function automationWorkflow(input: AutomationWorkflowInput): Promise<AutomationCounters> {
  const pending: AutomationEvent[] = [];
  const seen = new Set<string>();
  const counters: AutomationCounters = {
    received: 0,
    duplicates: 0,
    runsStarted: 0,
    runsCompleted: 0,
    runsFailed: 0,
    groupsSkipped: 0,
  };
  setHandler(automationEventSignal, (event) => {
    counters.received++;
    if (seen.has(event.id)) {
      counters.duplicates++;
      return;
    }
    seen.add(event.id);
    pending.push(event);
  });
  setHandler(automationStateQuery, () => ({
    name: input.name,
    key: input.key,
    pending: pending.length,
    ready: 0,
    inFlight: 0,
    remembered: seen.size,
    counters: { ...counters },
  }));
  await condition(() => false, '1 hour');
  return counters;
}
