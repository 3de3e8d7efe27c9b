/**
 * The flags of `pipeline start` and `pipeline redrive`: a bad one is refused naming the flag (and
 * the field behind it), with the bad-input exit code, before the client factory is ever called;
 * good ones reach the workflow start as written; `schedule create --kind pipeline` takes the same
 * stages and items. And `pipeline status`'s line per stage.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { pipelineProgressLines } from '../../client/pipeline-progress';
import type { PipelineProgress, PipelineStageProgress } from '../../contracts/pipeline-types';
import { suiteTempDir } from '../support/temp-dir';

const dir = suiteTempDir('cli-pipeline');
function file(name: string, content: string): string {
  const full = path.join(dir, name);
  writeFileSync(full, content);
  return full;
}
const items = file('items.jsonl', '{"input":{"n":1}}\n{"input":{"n":2}}\n');
const stages = [
  { name: 'transcribe', endpointId: 'ep-a', maxConcurrency: 4 },
  { name: 'translate', endpointId: 'ep-b', map: { 'input.text': '$.previous.output.text' } },
];
const stagesFile = file('stages.json', JSON.stringify(stages));

/** Runs the CLI against a client that records workflow starts. */
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
  return {
    code,
    out,
    err,
    connected,
    scheduled: started[0],
    input: (started[0]?.args as unknown[] | undefined)?.[0],
  };
}

const start = ['pipeline', 'start', 'p1'];

describe('pipeline start', () => {
  it('starts the stages from a file over the items of a JSONL file, with the budget and the options', async () => {
    const result = await cli(
      ...start,
      '--stages',
      `@${stagesFile}`,
      '--items',
      `@${items}`,
      '--budget',
      '12.5',
      '--options',
      '{"pageSize":10}',
      '--priority',
      '2',
    );
    expect(result).toMatchObject({ code: 0, connected: 1 });
    expect(result.input).toEqual({
      stages,
      items: { inline: [{ input: { n: 1 } }, { input: { n: 2 } }] },
      budget: 12.5,
      pageSize: 10,
      priority: 2,
    });
    expect(JSON.parse(result.out)).toEqual({ workflowId: 'p1', started: true });
  });

  it.each([
    { flags: ['--items', `@${items}`], flag: '--stages', rule: 'is required' },
    { flags: ['--stages', '{"name":"a"}', '--items', `@${items}`], flag: '--stages', rule: 'JSON array' },
    { flags: ['--stages', '[oops', '--items', `@${items}`], flag: '--stages', rule: 'must be JSON' },
    {
      flags: ['--stages', `@${dir}/none.json`, '--items', `@${items}`],
      flag: '--stages',
      rule: 'cannot read',
    },
    { flags: ['--stages', `@${stagesFile}`], flag: '--items', rule: 'either --items @file or --manifest' },
    {
      flags: ['--stages', `@${stagesFile}`, '--items', `@${items}`, '--manifest', 'm.jsonl'],
      flag: '--items',
      rule: 'either --items @file or --manifest',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--items', 'items.jsonl'],
      flag: '--items',
      rule: 'must be @file',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--items', `@${items}`, '--budget', 'lots'],
      flag: '--budget',
      rule: 'must be an amount above 0',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--items', `@${items}`, '--budget', '0'],
      flag: '--budget',
      rule: 'must be an amount above 0',
    },
    {
      flags: [
        '--stages',
        JSON.stringify([stages[0], { ...stages[1], map: undefined }]),
        '--manifest',
        'm.jsonl',
      ],
      flag: '--stages stages.1.map',
      rule: 'exactly one of map and transform',
    },
    {
      flags: ['--stages', JSON.stringify([{ ...stages[0], maxConcurrency: 0 }]), '--manifest', 'm.jsonl'],
      flag: '--stages stages.0.maxConcurrency',
      rule: 'expected number to be >=1',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--manifest', 'm.jsonl', '--options', '{"pageSize":0}'],
      flag: '--options pageSize',
      rule: 'expected number to be >=1',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--manifest', 'm.jsonl', '--options', '[1]'],
      flag: '--options',
      rule: 'must be a JSON object',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--manifest', 'm.jsonl', '--priority', '9'],
      flag: '--priority',
      rule: 'must be an integer from 1 (first) to 5 (last)',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--manifest', 'm.jsonl', '--tags', 'a b'],
      flag: '--tags',
      rule: 'no spaces or commas',
    },
  ])('refuses $flag ($rule) before connecting', async ({ flags, flag, rule }) => {
    const result = await cli(...start, ...flags);
    expect(result).toMatchObject({ code: 2, connected: 0 });
    expect(result.err).toContain(`error: ${flag}`);
    expect(result.err).toContain(rule);
  });

  it('redrive refuses a bad --budget before connecting', async () => {
    const result = await cli('pipeline', 'redrive', 'p1', 'p2', '--budget', '-3');
    expect(result).toMatchObject({ code: 2, connected: 0 });
    expect(result.err).toContain('error: --budget: must be an amount above 0');
  });

  it('concurrency refuses a count that is not a whole number', async () => {
    const result = await cli('pipeline', 'concurrency', 'p1', 'translate', 'many');
    expect(result).toMatchObject({ code: 2, connected: 0 });
    expect(result.err).toContain('error: <n>: must be an integer');
  });
});

describe('schedule create --kind pipeline', () => {
  const create = ['schedule', 'create', 's1', '--kind', 'pipeline', '--cron', '@daily'];

  it('schedules the stages over the items, as pipeline start takes them', async () => {
    const result = await cli(...create, '--stages', `@${stagesFile}`, '--items', `@${items}`);
    expect(result).toMatchObject({ code: 0, connected: 1 });
    expect(result.scheduled).toMatchObject({ workflowType: 'serverlessPipeline', workflowId: 's1' });
    expect(result.input).toEqual({
      stages,
      items: { inline: [{ input: { n: 1 } }, { input: { n: 2 } }] },
    });
  });

  it.each([
    { flags: ['--stages', '{}', '--items', `@${items}`], flag: '--stages', rule: 'JSON array' },
    {
      flags: [
        '--stages',
        JSON.stringify([stages[0], { ...stages[1], map: undefined }]),
        '--items',
        `@${items}`,
      ],
      flag: '--stages (input.stages.1.map)',
      rule: 'exactly one of map and transform',
    },
    {
      flags: ['--stages', `@${stagesFile}`, '--items', `@${items}`, '--endpoint', 'ep-a'],
      flag: '--endpoint',
      rule: "a pipeline's stages name their endpoints",
    },
    {
      flags: ['--stages', `@${stagesFile}`],
      flag: '--input (input.items)',
      rule: 'must be { inline: [requests] }',
    },
  ])('refuses $flag before connecting', async ({ flags, flag, rule }) => {
    const result = await cli(...create, ...flags);
    expect(result).toMatchObject({ code: 2, connected: 0 });
    expect(result.err).toContain(`error: ${flag}`);
    expect(result.err).toContain(rule);
  });
});

describe('pipeline status', () => {
  const stage = (name: string, counts: Partial<PipelineStageProgress['counts']>, more = {}) => ({
    name,
    endpointId: `ep-${name}`,
    counts: { started: 0, completed: 0, failed: 0, dropped: 0, split: 0, parts: 0, notStarted: 0, ...counts },
    running: 0,
    buffered: 0,
    maxConcurrency: 4,
    cost: { amount: 0, items: 0 },
    stopped: false,
    inFlight: 0,
    ...more,
  });

  it('draws one line per stage: a bar of the pieces ended there, its counts, window and buffer', () => {
    const progress: PipelineProgress = {
      total: 8,
      stages: [
        stage(
          'transcribe',
          { started: 8, completed: 8 },
          { cost: { amount: 0.4, items: 8, currency: 'USD' } },
        ),
        stage('translate', { started: 6, completed: 3, failed: 1 }, { inFlight: 2, running: 2, buffered: 2 }),
        stage('speak', { started: 3, completed: 1, dropped: 1, split: 1, parts: 3 }, { inFlight: 1 }),
      ],
      cost: { amount: 0.4, items: 8, currency: 'USD' },
      paused: false,
      runs: 1,
      events: 120,
    };
    expect(pipelineProgressLines(progress)).toEqual([
      'transcribe [########################] 8/8 ended: 8 completed, 0 failed, 0 in flight, 0 buffered, cost 0.4 USD',
      'translate  [############............] 4/8 ended: 3 completed, 1 failed, 2 in flight, 2 buffered',
      'speak      [######..................] 2/8 ended: 1 completed, 0 failed, 1 dropped, 1 split into 3, 1 in flight, 0 buffered',
    ]);
  });
});
