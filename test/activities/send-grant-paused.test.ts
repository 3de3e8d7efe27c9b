/**
 * A process's submits at a paused endpoint's gate: each gives up at the gate's first answer, with
 * no room and the reason, freeing its worker slot (its workflow waits and tries again); once the
 * endpoint resumes, the next ask is granted. The gate here is a stand-in for Temporal's client (the
 * gate's own rule: engine/endpoint-grants.ts).
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { askToSend } from '../../activities/send-grant';
import type { SendAsk, SendGrant } from '../../contracts/endpoint-gate';

/** A gate paused for its first `pausedAnswers` answers, that grants all asked after them. */
function pausedGate(pausedAnswers: number) {
  const asks: SendAsk[] = [];
  const client = {
    workflow: {
      start: async (_type: string, options: { workflowId: string }) => {
        throw new WorkflowExecutionAlreadyStartedError('running', options.workflowId, 'endpointGate');
      },
      executeUpdateWithStart: async (_update: unknown, options: { args: [SendAsk] }) => {
        asks.push(options.args[0]);
        const now = Date.now();
        if (asks.length <= pausedAnswers)
          return { count: 0, at: now, sendBy: now, retryAt: now + 20, paused: true };
        return { count: options.args[0].count, at: now, sendBy: now + 500 };
      },
    },
    activity: { heartbeat: async () => undefined },
    withAbortSignal: <T>(_signal: AbortSignal, call: () => Promise<T>) => call(),
    withDeadline: <T>(_deadline: number, call: () => Promise<T>) => call(),
  } as unknown as Client;
  const ask = (endpointId: string, count: number): Promise<SendGrant> =>
    new MockActivityEnvironment({ taskQueue: 'paused-test' }, { client }).run(askToSend, {
      endpointId,
      count,
      limit: 1_000,
    }) as Promise<SendGrant>;
  return { asks, ask };
}

describe('askToSend at a paused endpoint', () => {
  it("gives a job's submit and a batch's page no room at the first answer, saying the endpoint is paused", async () => {
    const gate = pausedGate(2);
    const [job, page] = await Promise.all([gate.ask('ep-paused', 1), gate.ask('ep-paused', 5)]);
    expect(job).toMatchObject({ count: 0, paused: true });
    expect(page).toMatchObject({ count: 0, paused: true });
    expect(gate.asks).toHaveLength(1);
  });

  it('grants the next ask once the endpoint resumes', async () => {
    const gate = pausedGate(1);
    expect(await gate.ask('ep-resumed', 5)).toMatchObject({ count: 0, paused: true });
    const grant = await gate.ask('ep-resumed', 5);
    expect(grant).toMatchObject({ count: 5 });
    expect(grant.paused).toBeUndefined();
    expect(gate.asks).toHaveLength(2);
  });
});
