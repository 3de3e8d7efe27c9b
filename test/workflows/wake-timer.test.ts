/**
 * The batch's and the pipeline's wake timer (workflows/shared/wake-timer.ts) on the time-skipping
 * server: a held timer serves a later due, and one due within a workflow task's time is never
 * cancelled. Such a cancel can race the timer's fire, which the time-skipping server answers by
 * leaving the run stuck with a workflow task started and never timed out; the batch's route tests
 * hung that way under load.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows, quietRuntime, withWorker } from '../support/workflow-harness';
import { finish, setDue, wakes, wakeTimerProbe } from './wake-timer-workflows';

quietRuntime();

const HOUR_MS = 3_600_000;

describe('wake timer', () => {
  let env: Awaited<ReturnType<typeof timeSkippingEnv>>;
  let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  beforeAll(async () => {
    env = await timeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('./wake-timer-workflows.ts'));
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('keeps a held timer for a later due, and cancels only one further off than a task lasts', async () => {
    const { events, woken } = await withWorker(env, bundle, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(wakeTimerProbe, {
        taskQueue,
        workflowId: `${taskQueue}-probe`,
      });
      // Each due in its own workflow task: the query answers once the signal before it is handled.
      for (const inMs of [HOUR_MS, 5_000, 60_000, 2_000, null]) {
        await handle.signal(setDue, inMs);
        await handle.query(wakes);
      }
      await env.sleep(10_000);
      const woken = await handle.query(wakes);
      await handle.signal(finish);
      await handle.result();
      return { events: (await handle.fetchHistory()).events ?? [], woken };
    });
    // An hour's timer, then 5 s (the hour's cancelled: far off), then 2 s (the 5 s one kept: it
    // could fire while the task runs). 60 s and nothing due keep the held timer.
    expect(events.filter((event) => event.timerStartedEventAttributes)).toHaveLength(3);
    expect(events.filter((event) => event.timerCanceledEventAttributes)).toHaveLength(1);
    // Both near timers fired, each a wake (the early one harmless to a loop).
    expect(woken).toBe(2);
  });
});
