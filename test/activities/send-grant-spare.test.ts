/**
 * A process's submits on an idle endpoint: the gate's grant brings spare room, and the process's
 * next submits alike are granted from it without asking, until it runs out or its time passes.
 * The gate here is a stand-in for Temporal's client (the gate's own rule: engine/endpoint-grants.ts).
 */
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it, vi } from 'vitest';
import { askToSend } from '../../activities/send-grant';
import { SEND_SLACK_MS, type SendAsk, type SendGrant } from '../../contracts/endpoint-gate';
import { SPARE_MAX } from '../../engine/endpoint-grants';

/**
 * A gate that answers each ask with all it asked, and the spare it is given for the next answer;
 * already running unless `fresh` (then the first start starts it).
 */
function gateWithSpare(spares: Array<SendGrant['spare']>, fresh = false) {
  const asks: SendAsk[] = [];
  let running = !fresh;
  const client = {
    workflow: {
      start: async (_type: string, options: { workflowId: string }) => {
        if (running)
          throw new WorkflowExecutionAlreadyStartedError('running', options.workflowId, 'endpointGate');
        running = true;
      },
      executeUpdateWithStart: async (_update: unknown, options: { args: [SendAsk] }) => {
        asks.push(options.args[0]);
        const now = Date.now();
        const spare = spares.shift();
        return { count: options.args[0].count, at: now, sendBy: now + 500, ...(spare ? { spare } : {}) };
      },
    },
    activity: { heartbeat: async () => undefined },
    // The activity runs inside the client's call bound to its cancellation.
    withAbortSignal: <T>(_signal: AbortSignal, call: () => Promise<T>) => call(),
    withDeadline: <T>(_deadline: number, call: () => Promise<T>) => call(),
  } as unknown as Client;
  const ask = (endpointId: string, count = 1): Promise<SendGrant> =>
    new MockActivityEnvironment({ taskQueue: 'spare-test' }, { client }).run(askToSend, {
      endpointId,
      count,
      limit: 1_000,
    }) as Promise<SendGrant>;
  return { asks, ask };
}

describe('askToSend with spare room', () => {
  it('grants the next submits from the spare without asking, then asks again once it is used', async () => {
    const gate = gateWithSpare([{ count: 2, until: Date.now() + 60_000 }]);
    expect((await gate.ask('ep-spare-used')).count).toBe(1);
    expect(gate.asks).toHaveLength(1);
    expect((await gate.ask('ep-spare-used')).count).toBe(1);
    expect((await gate.ask('ep-spare-used')).count).toBe(1);
    expect(gate.asks).toHaveLength(1);
    expect((await gate.ask('ep-spare-used')).count).toBe(1);
    expect(gate.asks).toHaveLength(2);
  });

  it('asks again once the spare is past its time', async () => {
    const gate = gateWithSpare([{ count: 5, until: Date.now() - 1 }]);
    await gate.ask('ep-spare-late');
    await gate.ask('ep-spare-late');
    expect(gate.asks).toHaveLength(2);
  });

  it('asks for a page the spare cannot hold whole, and keeps the spare for a submit it can', async () => {
    const gate = gateWithSpare([{ count: 2, until: Date.now() + 60_000 }]);
    await gate.ask('ep-spare-page');
    expect((await gate.ask('ep-spare-page', 3)).count).toBe(3);
    expect(gate.asks.map((ask) => ask.count)).toEqual([1, 3]);
    expect((await gate.ask('ep-spare-page', 2)).count).toBe(2);
    expect(gate.asks).toHaveLength(2);
  });

  it('keeps spares apart per endpoint', async () => {
    const gate = gateWithSpare([{ count: 2, until: Date.now() + 60_000 }]);
    await gate.ask('ep-spare-a');
    await gate.ask('ep-spare-b');
    expect(gate.asks.map((ask) => ask.endpointId)).toEqual(['ep-spare-a', 'ep-spare-b']);
  });

  it("sends an endpoint's first request at once when this process starts its gate afresh, and asks for it after", async () => {
    const gate = gateWithSpare([{ count: 2, until: Date.now() + 60_000 }], true);
    const first = await gate.ask('ep-fresh');
    expect(first).toMatchObject({ count: 1 });
    expect(first.sendBy - first.at).toBe(SEND_SLACK_MS);
    // The gate counts it at the lane's next ask, which brings the spare for the next submits.
    await vi.waitFor(() => expect(gate.asks.map((ask) => ask.count)).toEqual([1]));
    await gate.ask('ep-fresh');
    await gate.ask('ep-fresh');
    expect(gate.asks).toHaveLength(1);
  });

  it('asks as ever for a page larger than a fresh gate lets go before it runs', async () => {
    const gate = gateWithSpare([], true);
    expect((await gate.ask('ep-fresh-page', SPARE_MAX + 1)).count).toBe(SPARE_MAX + 1);
    expect(gate.asks.map((ask) => ask.count)).toEqual([SPARE_MAX + 1]);
  });
});
