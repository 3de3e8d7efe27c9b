/**
 * The CLI's batch commands against the real stack (dev server, emulator over HTTP, the real worker):
 * start with --wait (progress on stderr, the summary on stdout), status, results as JSONL, and bad
 * flags refused with exit code 2 before anything starts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { type JobStack, startJobStack } from '../support/integration';

describe('the CLI: batches', () => {
  let stack: JobStack;
  const dir = mkdtempSync(path.join(tmpdir(), 'cli-batch-'));
  beforeAll(async () => {
    stack = await startJobStack({ name: 'cli-batch', timeScale: 100 });
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
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

  it('starts a batch from a JSONL file, shows progress, prints the summary and the results', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 20 });
    const file = path.join(dir, 'items.jsonl');
    const lines = Array.from({ length: 40 }, (_, i) =>
      JSON.stringify({ input: { output: { i }, ...(i === 7 ? { fail: 'broken' } : {}) } }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    const id = `cli-batch-${Date.now()}`;
    const started = await cli(
      'batch',
      'start',
      id,
      '--endpoint',
      endpointId,
      '--items',
      `@${file}`,
      '--tolerate',
      '5%',
      '--wait',
    );
    expect(started.code).toBe(0);
    expect(started.err).toMatch(/\] \d+\/40 done, \d+ failed, \d+ in flight/);
    expect(JSON.parse(started.out)).toMatchObject({ total: 40, counts: { completed: 39, failed: 1 } });

    const status = await cli('batch', 'status', id);
    expect(JSON.parse(status.out)).toMatchObject({ done: 40, total: 40 });

    const results = await cli('batch', 'results', id, '--store', stack.workerEnv.RESULT_STORE_DIR as string);
    const parsed = results.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(parsed).toHaveLength(40);
    expect(parsed.find((line) => line.index === 7)).toMatchObject({ status: 'FAILED', error: 'broken' });
    const failures = await cli(
      'batch',
      'results',
      id,
      '--store',
      stack.workerEnv.RESULT_STORE_DIR as string,
      '--failures',
    );
    expect(failures.out.trim().split('\n')).toHaveLength(1);
  }, 120_000);

  it('refuses bad flags with exit code 2, naming them', async () => {
    const bad = await cli('batch', 'start', 'x', '--endpoint', 'ep', '--items', `@${dir}/none.jsonl`);
    expect(bad).toMatchObject({ code: 2, err: expect.stringContaining('--items') });
    const tolerance = await cli(
      'batch',
      'start',
      'x',
      '--endpoint',
      'ep',
      '--manifest',
      'm.jsonl',
      '--tolerate',
      'lots',
    );
    expect(tolerance).toMatchObject({ code: 2, err: expect.stringContaining('--tolerate') });
    const concurrency = await cli(
      'batch',
      'start',
      'x',
      '--endpoint',
      'ep',
      '--manifest',
      'm.jsonl',
      '--max-concurrency',
      '0',
    );
    expect(concurrency).toMatchObject({ code: 2, err: expect.stringContaining('maxConcurrency') });
  });
});
