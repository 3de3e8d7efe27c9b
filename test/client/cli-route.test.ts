/**
 * The route flags of `job start`, `batch start` and `schedule create`: `--route a,b`,
 * `--route-file`, `--queue-delay-limit` and `--capacity-failure`. A bad route or a bad combination
 * is refused naming the flag (and the field behind it), with the bad-input exit code, before the
 * client factory is ever called; a good one reaches the workflow start as written.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { targetOf } from '../../client/cli-route';
import { suiteTempDir } from '../support/temp-dir';

const dir = suiteTempDir('cli-route');
function file(name: string, content: string): string {
  const full = path.join(dir, name);
  writeFileSync(full, content);
  return full;
}
const items = file('items.jsonl', '{"input":{"n":1}}\n{"input":{"n":2}}\n');

/** Runs the CLI against a client that records workflow starts and schedule creations. */
async function cli(...args: string[]) {
  let out = '';
  let err = '';
  let connected = 0;
  const started: Record<string, unknown>[] = [];
  const client = {
    workflow: {
      start: async (_type: string, options: Record<string, unknown>) => {
        started.push(options);
        return { workflowId: options.workflowId };
      },
    },
    schedule: {
      create: async (options: Record<string, unknown>) => {
        started.push(options.action as Record<string, unknown>);
        return {};
      },
    },
  } as unknown as Client;
  const code = await runCli(
    args,
    { out: (text) => (out += text), err: (text) => (err += text) },
    async () => {
      connected += 1;
      return client;
    },
  );
  return { code, out, err, connected, input: (started[0]?.args as unknown[] | undefined)?.[0] };
}

const jobStart = ['job', 'start', 'j1', '--input', '{"prompt":"hi"}'];
const batchStart = ['batch', 'start', 'b1', '--items', `@${items}`];
const scheduleJob = ['schedule', 'create', 's1', '--kind', 'job', '--job-input', '{}', '--cron', '@daily'];

describe('route flags', () => {
  it('job start: --route with the limit and capacity failures becomes the route', async () => {
    const result = await cli(
      ...jobStart,
      '--route',
      'ep-a, ep-b',
      '--queue-delay-limit',
      '2m',
      '--capacity-failure',
      'out of memory',
      '--capacity-failure',
      'CUDA error',
    );
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.input).toEqual({
      route: {
        endpoints: [{ endpointId: 'ep-a' }, { endpointId: 'ep-b' }],
        queueDelayLimit: '2m',
        capacityFailures: ['out of memory', 'CUDA error'],
      },
      request: { input: { prompt: 'hi' } },
    });
  });

  it('batch start: --route-file gives the full form, the flags override its fields', async () => {
    const full = {
      endpoints: [
        { endpointId: 'ep-a', pricePerSecond: 0.0004, weight: 3 },
        { endpointId: 'ep-b', pricePerSecond: 0.0009, maxShare: 0.5, inputOverrides: { fp16: true } },
      ],
      queueDelayLimit: '5m',
      recheckAfter: '30s',
    };
    const routeFile = file('route.json', JSON.stringify(full));
    const result = await cli(...batchStart, '--route-file', routeFile, '--queue-delay-limit', '90s');
    expect(result.err).toBe('');
    expect(result.input).toMatchObject({ route: { ...full, queueDelayLimit: '90s' } });
  });

  it('schedule create: a job schedule on a route', async () => {
    const result = await cli(...scheduleJob, '--route', 'ep-a,ep-b');
    expect(result.err).toBe('');
    expect(result.input).toMatchObject({
      route: { endpoints: [{ endpointId: 'ep-a' }, { endpointId: 'ep-b' }] },
    });
  });

  it.each([
    [
      'both --endpoint and --route',
      [...jobStart, '--endpoint', 'ep-a', '--route', 'ep-a,ep-b'],
      '--route: give either --endpoint or a route, not both',
    ],
    [
      'both --endpoint and --route-file',
      [...batchStart, '--endpoint', 'ep-a', '--route-file', 'route.json'],
      '--route-file: give either --endpoint or a route, not both',
    ],
    [
      'both --route and --route-file',
      [...jobStart, '--route', 'ep-a', '--route-file', 'route.json'],
      '--route-file: give either --route a,b or --route-file, not both',
    ],
    [
      'no endpoint and no route',
      jobStart,
      '--endpoint: give --endpoint <id>, --route a,b or --route-file <path>',
    ],
    [
      'a queue delay limit without a route',
      [...jobStart, '--endpoint', 'ep-a', '--queue-delay-limit', '2m'],
      '--queue-delay-limit: applies to a route: give --route a,b or --route-file',
    ],
    [
      'a capacity failure without a route',
      [...batchStart, '--endpoint', 'ep-a', '--capacity-failure', 'oom'],
      '--capacity-failure: applies to a route: give --route a,b or --route-file',
    ],
    [
      'an empty id in --route',
      [...jobStart, '--route', 'ep-a,,ep-b'],
      '--route: must be endpoint ids separated by commas, e.g. ep-a,ep-b',
    ],
    [
      'an endpoint twice',
      [...jobStart, '--route', 'ep-a,ep-a'],
      '--route (route.endpoints): must not name an endpoint twice',
    ],
    [
      'nine endpoints',
      [...batchStart, '--route', 'a,b,c,d,e,f,g,h,i'],
      '--route (route.endpoints): must name at most 8 endpoints',
    ],
    [
      'a queue delay limit under 5 seconds',
      [...jobStart, '--route', 'ep-a,ep-b', '--queue-delay-limit', '1s'],
      '--queue-delay-limit (route.queueDelayLimit): must be a duration between 5000 and 86400000 ms',
    ],
    [
      'a route in mode runsync',
      [...jobStart, '--route', 'ep-a,ep-b', '--mode', 'runsync'],
      'route: a route needs mode async or sync',
    ],
    [
      'both --endpoint and --route in schedule create',
      [...scheduleJob, '--endpoint', 'ep-a', '--route', 'ep-b'],
      '--route: give either --endpoint or a route, not both',
    ],
  ])('refuses %s before connecting', async (_name, args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`error: ${message}`);
    expect(result.connected).toBe(0);
  });

  it('refuses a route file that cannot be read, is no JSON object, or breaks a rule, naming it', async () => {
    const cases: [string, string][] = [
      [path.join(dir, 'none.json'), '--route-file: cannot read'],
      [file('text.json', 'not json'), '--route-file: must be a JSON file'],
      [file('array.json', '[]'), '--route-file: must hold a JSON object'],
      [
        file('weight.json', '{"endpoints":[{"endpointId":"ep-a","weight":0}]}'),
        '--route-file (route.endpoints.0.weight): must be a number > 0',
      ],
      [
        file('extra.json', '{"endpoints":[{"endpointId":"ep-a"}],"fallback":1}'),
        '--route-file (route): unknown field(s) fallback',
      ],
    ];
    for (const [routeFile, message] of cases) {
      const result = await cli(...jobStart, '--route-file', routeFile);
      expect(result.code).toBe(2);
      expect(result.err).toContain(`error: ${message}`);
      expect(result.connected).toBe(0);
    }
  });

  it('leaves the target to --input when a schedule names none', () => {
    expect(targetOf({}, { required: false })).toEqual({});
    expect(targetOf({ endpoint: 'ep-a' }, { required: false })).toEqual({ endpointId: 'ep-a' });
  });

  it('shows the route flags and the route file form in the help', async () => {
    for (const command of [
      ['job', 'start'],
      ['batch', 'start'],
      ['schedule', 'create'],
    ]) {
      const result = await cli(...command, '--help');
      expect(result.code).toBe(0);
      for (const flag of [
        '--route <ids>',
        '--route-file <path>',
        '--queue-delay-limit',
        '--capacity-failure',
      ])
        expect(result.out).toContain(flag);
      expect(result.out).toContain('"queueDelayLimit": "2m"');
    }
  });
});
