/**
 * The CLI's batch commands against the real stack (dev server, emulator over HTTP, the real worker):
 * start with --wait (progress on stderr, the summary on stdout), status, results as JSONL; pause,
 * resume, concurrency and cancel of a running batch; redrive of a finished one and status --watch
 * until it ends; a batch over a route from a route file; and bad flags refused with exit code 2
 * before anything starts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { eventually, type JobStack, startJobStack } from '../support/integration';
import { suiteTempDir } from '../support/temp-dir';

describe('the CLI: batches', () => {
  let stack: JobStack;
  const dir = suiteTempDir('cli-batch');
  beforeAll(async () => {
    stack = await startJobStack({ name: 'cli-batch', timeScale: 100 });
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

  it('starts a batch over a route from --route-file: items out of memory on the first endpoint complete on the second', async () => {
    const small = stack.endpoint({ templateId: 'oom', gpuIds: 'AMPERE_16', workersMax: 5 });
    const large = stack.endpoint({ workersMin: 0, workersMax: 10 });
    const items = path.join(dir, 'route-items.jsonl');
    const lines = Array.from({ length: 10 }, (_, i) =>
      JSON.stringify({ input: { output: { i }, oomShare: 1 } }),
    );
    writeFileSync(items, `${lines.join('\n')}\n`);
    const route = path.join(dir, 'route.json');
    writeFileSync(
      route,
      JSON.stringify({
        endpoints: [
          { endpointId: small, pricePerSecond: 0.0002 },
          { endpointId: large, pricePerSecond: 0.0006 },
        ],
      }),
    );
    const id = `cli-batch-route-${Date.now()}`;
    const started = await cli(
      'batch',
      'start',
      id,
      '--route-file',
      route,
      '--capacity-failure',
      'OutOfMemoryError',
      '--items',
      `@${items}`,
      '--wait',
    );
    expect(started.code).toBe(0);
    const summary = JSON.parse(started.out);
    expect(summary).toMatchObject({ total: 10, counts: { completed: 10 } });
    expect(summary.endpoints[large]).toMatchObject({ completed: 10, failed: 0 });
    expect(summary.endpoints[small]).toMatchObject({ completed: 0, failed: 0 });
    expect(summary.endpoints[small].moved).toBe(summary.hops);
    expect(summary.hops).toBeGreaterThan(0);
    // The progress line splits the items by endpoint and counts the moves.
    expect(started.err).toContain(`${large} 10`);
    expect(started.err).toMatch(/, \d+ moved/);
    const results = await cli('batch', 'results', id, '--store', stack.workerEnv.RESULT_STORE_DIR as string);
    const parsed = results.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(parsed).toHaveLength(10);
    expect(parsed.every((line) => line.status === 'COMPLETED' && line.endpointId === large)).toBe(true);
  }, 120_000);

  it('pauses, resumes, changes the concurrency of and cancels a running batch; redrives a finished one', async () => {
    // Jobs that run until cancelled (a week's execution timeout: the service's clock runs 100 times
    // faster than real time here).
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 10, executionTimeoutMs: 7 * 86_400_000 });
    const file = path.join(dir, 'hanging.jsonl');
    writeFileSync(
      file,
      `${Array.from({ length: 12 }, (_, i) => JSON.stringify({ input: { hang: true, output: { i } } })).join('\n')}\n`,
    );
    const id = `cli-batch-steer-${Date.now()}`;
    const json = (text: string) => JSON.parse(text) as Record<string, unknown>;
    const status = async (workflowId: string) => {
      const shown = await cli('batch', 'status', workflowId);
      expect(shown.code).toBe(0);
      return json(shown.out);
    };
    const terminal = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']);
    const unfinished = () => stack.control.jobs(endpointId).filter((job) => !terminal.has(job.status));

    const started = await cli(
      'batch',
      'start',
      id,
      '--endpoint',
      endpointId,
      '--items',
      `@${file}`,
      '--max-concurrency',
      '4',
      '--options',
      '{"pageSize":4}',
    );
    expect(started).toMatchObject({ code: 0 });
    expect(json(started.out)).toEqual({ workflowId: id, started: true });
    await eventually(() => unfinished().length === 4);

    expect(json((await cli('batch', 'pause', id)).out)).toEqual({ workflowId: id, pause: true });
    await eventually(async () => (await status(id)).paused === true);
    // The change is a turn of the paused batch's loop with 2 free slots: it submits nothing.
    const changed = await cli('batch', 'concurrency', id, '6');
    expect(changed).toMatchObject({ code: 0 });
    expect(json(changed.out)).toEqual({ workflowId: id, maxConcurrency: 6, previous: 4 });
    expect(await status(id)).toMatchObject({ paused: true, maxConcurrency: 6, cursor: 4, inFlight: 4 });
    expect(stack.control.submissions(endpointId)).toBe(4);

    expect(json((await cli('batch', 'resume', id)).out)).toEqual({ workflowId: id, resume: true });
    await eventually(async () => (await status(id)).paused === false);
    await eventually(() => unfinished().length === 6);
    expect(await status(id)).toMatchObject({ paused: false, maxConcurrency: 6, cursor: 6, inFlight: 6 });

    expect(json((await cli('batch', 'cancel', id)).out)).toEqual({ workflowId: id, cancel: true });
    const ended = await stack.client.workflow
      .getHandle(id)
      .result()
      .then(
        () => undefined,
        (error: Error) => error,
      );
    expect((ended?.cause as Error | undefined)?.name).toBe('CancelledFailure');
    const jobs = stack.control.jobs(endpointId);
    expect(jobs).toHaveLength(6);
    expect(jobs.every((job) => job.status === 'CANCELLED')).toBe(true);
    expect(await status(id)).toMatchObject({ counts: { cancelled: 6, completed: 0 }, inFlight: 0 });

    // A finished batch with two failed items: the redrive runs those two (and fails them again:
    // their requests say so), and status --watch follows it to its end.
    const failing = path.join(dir, 'failing.jsonl');
    writeFileSync(
      failing,
      `${Array.from({ length: 6 }, (_, i) =>
        JSON.stringify({ input: i === 1 || i === 4 ? { fail: `item ${i} is broken` } : { output: { i } } }),
      ).join('\n')}\n`,
    );
    const source = `cli-batch-source-${Date.now()}`;
    const first = await cli(
      'batch',
      'start',
      source,
      '--endpoint',
      endpointId,
      '--items',
      `@${failing}`,
      '--tolerate',
      '2',
      '--wait',
    );
    expect(first.code).toBe(0);
    expect(json(first.out)).toMatchObject({ total: 6, counts: { completed: 4, failed: 2 } });
    const redriveId = `${source}-redrive`;
    const redrive = await cli('batch', 'redrive', source, redriveId);
    expect(redrive).toMatchObject({ code: 0 });
    expect(json(redrive.out)).toEqual({ workflowId: redriveId, started: true });
    const watched = await cli('batch', 'status', redriveId, '--watch');
    expect(watched.code).toBe(0);
    expect(json(watched.out)).toMatchObject({
      batchId: redriveId,
      total: 2,
      counts: { completed: 0, failed: 2 },
    });
    expect(watched.err.trim().split('\n').at(-1)).toMatch(/\] 2\/2 done, 2 failed, 0 in flight/);
    const results = await cli(
      'batch',
      'results',
      redriveId,
      '--store',
      stack.workerEnv.RESULT_STORE_DIR as string,
    );
    const lines = results.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { index: number; status: string; error?: string })
      .sort((a, b) => a.index - b.index);
    expect(lines.map(({ index, status: state, error }) => [index, state, error])).toEqual([
      [0, 'FAILED', 'item 1 is broken'],
      [1, 'FAILED', 'item 4 is broken'],
    ]);
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
