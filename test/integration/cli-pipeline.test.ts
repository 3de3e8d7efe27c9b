/**
 * The CLI's pipeline commands against the real stack (dev server, emulator over HTTP, the real
 * worker): start with --wait (a line per stage on stderr, the summary on stdout), status as a line
 * per stage, results as JSONL, and redrive --wait of the pieces that failed at the second stage
 * once its endpoint is fixed.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { type JobStack, startJobStack } from '../support/integration';
import { suiteTempDir } from '../support/temp-dir';

const JOB = {
  submitLease: false,
  polling: { initialInterval: 100, maxInterval: 500, backoffCoefficient: 1.5 },
} as const;

describe('the CLI: pipelines', () => {
  let stack: JobStack;
  const dir = suiteTempDir('cli-pipeline');
  beforeAll(async () => {
    stack = await startJobStack({ name: 'cli-pipeline', timeScale: 100 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  async function cli(...args: string[]) {
    let out = '';
    let err = '';
    const code = await runCli(
      ['--task-queue', stack.taskQueue, ...args],
      { out: (text) => (out += text), err: (text) => (err += text) },
      async () => stack.client,
    );
    return { code, out, err };
  }

  it('starts, shows, reads and redrives a pipeline', async () => {
    const transcribe = stack.endpoint();
    // Fails every job until it runs the scripted handler.
    const translate = stack.endpoint({ templateId: 'fail' });
    const items = path.join(dir, 'items.jsonl');
    writeFileSync(
      items,
      `${Array.from({ length: 4 }, (_, i) => JSON.stringify({ input: { output: { text: `item ${i}` } } })).join('\n')}\n`,
    );
    const stages = path.join(dir, 'stages.json');
    writeFileSync(
      stages,
      JSON.stringify([
        { name: 'transcribe', endpointId: transcribe, job: JOB },
        {
          name: 'translate',
          endpointId: translate,
          job: JOB,
          failureTolerance: { count: 4 },
          map: { 'input.output': '$.previous.output' },
        },
      ]),
    );
    const id = `cli-pipeline-${Date.now()}`;
    const started = await cli(
      'pipeline',
      'start',
      id,
      '--stages',
      `@${stages}`,
      '--items',
      `@${items}`,
      '--wait',
    );
    expect(started.code).toBe(0);
    expect(started.err).toMatch(/^translate {2}\[[#.]+\] \d+\/4 ended: \d+ completed, \d+ failed/m);
    expect(JSON.parse(started.out)).toMatchObject({
      ended: { completed: 0, failed: 4, dropped: 0, notStarted: 0 },
    });

    const status = await cli('pipeline', 'status', id);
    expect(status.out.trim().split('\n')).toEqual([
      'transcribe [########################] 4/4 ended: 4 completed, 0 failed, 0 in flight, 0 buffered',
      'translate  [########################] 4/4 ended: 0 completed, 4 failed, 0 in flight, 0 buffered',
    ]);
    const store = stack.workerEnv.RESULT_STORE_DIR as string;
    const results = await cli('pipeline', 'results', id, '--store', store);
    const lines = results.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.stage, line.outcome])).toEqual(Array(4).fill(['translate', 'failed']));

    stack.control.updateEndpoint(translate, { templateId: 'scripted' });
    const redriven = await cli('pipeline', 'redrive', id, `${id}-redrive`, '--wait');
    expect(redriven.code).toBe(0);
    expect(JSON.parse(redriven.out)).toMatchObject({
      ended: { completed: 4, failed: 0, dropped: 0, notStarted: 0 },
    });
    expect([stack.control.submissions(transcribe), stack.control.submissions(translate)]).toEqual([4, 8]);
    const done = await cli('pipeline', 'results', `${id}-redrive`, '--store', store);
    const outputs = done.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .sort((a, b) => a.origin - b.origin);
    expect(outputs.map((line) => line.output)).toEqual([0, 1, 2, 3].map((i) => ({ text: `item ${i}` })));
  }, 120_000);
});
