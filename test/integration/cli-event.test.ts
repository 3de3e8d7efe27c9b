/**
 * `event send` on the dev server: the signal the automation workflow receives (read from its
 * history, no worker needed: signalWithStart records it) is exactly the event; bad input is exit 2
 * before anything is sent.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationWorkflowId } from '../../client/automations';
import { runCli } from '../../client/cli';
import { suiteTempDir } from '../support/temp-dir';
import { devServerEnv, uniqueTaskQueue } from '../support/temporal';

describe('the CLI: event send', () => {
  let env: TestWorkflowEnvironment;
  let client: Client;
  let connects = 0;
  const taskQueue = uniqueTaskQueue('cli-event');
  const automation = taskQueue.replace(/[^A-Za-z0-9._-]/g, '-');
  const dir = suiteTempDir('cli-event');
  const started: string[] = [];

  beforeAll(async () => {
    env = await devServerEnv();
    client = env.client;
  });
  afterAll(async () => {
    for (const id of started)
      await client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    await env?.teardown();
  });

  async function cli(...args: string[]) {
    let out = '';
    let err = '';
    const code = await runCli(
      ['--task-queue', taskQueue, ...args],
      { out: (text) => (out += text), err: (text) => (err += text) },
      async () => {
        connects += 1;
        return client;
      },
    );
    return { code, out, err };
  }

  async function signalsOf(workflowId: string): Promise<unknown[]> {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).flatMap((event) => {
      const payload = event.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data;
      return payload ? [JSON.parse(Buffer.from(payload).toString('utf8'))] : [];
    });
  }

  it('signals the automation with exactly the event, data inline or from a file', async () => {
    const sent = await cli(
      'event',
      'send',
      automation,
      '--key',
      'user-42',
      '--id',
      'evt-1',
      '--type',
      'order.paid',
      '--data',
      '{"amount":12}',
    );
    expect(sent.err).toBe('');
    expect(sent.code).toBe(0);
    const workflowId = automationWorkflowId(automation, 'user-42');
    started.push(workflowId);
    expect(JSON.parse(sent.out)).toMatchObject({ workflowId });

    const file = path.join(dir, 'event.json');
    writeFileSync(file, JSON.stringify({ items: [1, 2], note: 'é' }));
    const fromFile = await cli(
      'event',
      'send',
      automation,
      '--key',
      'user-42',
      '--id',
      'evt-2',
      '--data',
      `@${file}`,
    );
    expect(fromFile.code).toBe(0);
    const bare = await cli('event', 'send', automation, '--key', 'user-42', '--id', 'evt-3');
    expect(bare.code).toBe(0);

    expect(await signalsOf(workflowId)).toEqual([
      { id: 'evt-1', type: 'order.paid', data: { amount: 12 } },
      { id: 'evt-2', data: { items: [1, 2], note: 'é' } },
      { id: 'evt-3', data: null },
    ]);
  });

  it('refuses bad input with exit 2 naming the flag, before connecting', async () => {
    const before = connects;
    const cases: Array<[string[], string]> = [
      [['event', 'send', 'bad/name', '--key', 'k', '--id', 'e'], 'automation'],
      [['event', 'send', automation, '--key', 'has space', '--id', 'e'], '--key'],
      [['event', 'send', automation, '--key', 'k', '--id', ''], '--id'],
      [['event', 'send', automation, '--key', 'k', '--id', 'e', '--data', '{nope'], '--data'],
      [['event', 'send', automation, '--key', 'k', '--id', 'e', '--data', '@/no/such/file.json'], '--data'],
      [
        [
          'event',
          'send',
          automation,
          '--key',
          'k',
          '--id',
          'e',
          '--data',
          JSON.stringify('x'.repeat(70_000)),
        ],
        '--data',
      ],
      [['event', 'send', automation, '--key', 'k', '--id', 'e', '--type', 't'.repeat(129)], '--type'],
      [['event', 'send', automation, '--key', 'k', '--id', 'e', '--time', 'yesterday'], '--time'],
    ];
    for (const [args, flag] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.err, args.join(' ')).toMatch(new RegExp(`^error: ${flag.replace(/[-.]/g, '\\$&')}: `));
    }
    // A missing required flag is commander's refusal: also exit 2.
    expect((await cli('event', 'send', automation, '--id', 'e')).code).toBe(2);
    expect(connects).toBe(before);
  });
});
