/**
 * The CLI's schedule commands against the real stack (dev server, emulator over HTTP, the real
 * worker): create a batch schedule from flags, describe it, trigger a run that completes, pause,
 * unpause, update, backfill, list and delete; bad specs refused with exit code 2, naming the flag,
 * before any connection is made. The workflow input (an s3Config secret here) is never printed.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBatch } from '../../client/batches';
import { runCli } from '../../client/cli';
import { awaitJob } from '../../client/jobs';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';
import { suiteTempDir } from '../support/temp-dir';

const SECRET = 'schedule-cli-secret-never-printed';

describe('the CLI: schedules', () => {
  let stack: JobStack;
  const dir = suiteTempDir('cli-schedule');
  beforeAll(async () => {
    stack = await startJobStack({ name: 'cli-schedule', timeScale: 100 });
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
    return { code, out, err, json: () => JSON.parse(out) };
  }

  /** A command that must fail before connecting: its client factory would throw. */
  async function refused(...args: string[]) {
    let out = '';
    let err = '';
    let connected = false;
    const code = await runCli(args, { out: (t) => (out += t), err: (t) => (err += t) }, async () => {
      connected = true;
      throw new Error('must not connect');
    });
    return { code, out, err, connected };
  }

  it('creates a batch schedule from flags, triggers a run, pauses, updates, backfills, lists and deletes', async () => {
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: 10 });
    const items = path.join(dir, 'items.jsonl');
    writeFileSync(items, `${[1, 2].map((n) => JSON.stringify({ input: { output: n } })).join('\n')}\n`);
    const id = `cli-sched-${Date.now()}`;
    const created = await cli(
      'schedule',
      'create',
      id,
      '--kind',
      'batch',
      '--endpoint',
      endpointId,
      '--items',
      `@${items}`,
      '--options',
      JSON.stringify({ job: { polling: FAST_POLLING, submitLease: false } }),
      '--cron',
      '0 2 * * *',
      '--timezone',
      'Asia/Tokyo',
      '--overlap',
      'BUFFER_ONE',
      '--catchup-window',
      '1h',
      '--pause-on-failure',
      '--jitter',
      '30s',
      '--note',
      'from the CLI',
    );
    expect(created.code).toBe(0);
    expect(created.json()).toEqual({ scheduleId: id, kind: 'batch', created: true });

    const described = await cli('schedule', 'describe', id);
    expect(described.code).toBe(0);
    const details = described.json();
    expect(details).toMatchObject({
      kind: 'batch',
      workflowIdPrefix: id,
      note: 'from the CLI',
      paused: false,
      policies: { overlap: 'BUFFER_ONE', catchupWindow: 3_600_000, pauseOnFailure: true },
      spec: { timezone: 'Asia/Tokyo', jitter: 30_000 },
    });
    // 02:00 in Tokyo is 17:00 UTC; the times shown include each run's jitter (under 30 s).
    const coming: string[] = details.nextActionTimes;
    expect(coming.length).toBeGreaterThan(1);
    for (const time of coming) expect(time).toMatch(/T17:00:[0-2]\d\.\d{3}Z$/);
    // One a day: consecutive runs a day apart, give or take their jitter.
    for (let i = 1; i < coming.length; i++) {
      const apart = Date.parse(coming[i]!) - Date.parse(coming[i - 1]!);
      expect(Math.abs(apart - 86_400_000)).toBeLessThan(30_000);
    }

    expect((await cli('schedule', 'trigger', id)).code).toBe(0);
    const run = await eventually(async () => (await cli('schedule', 'describe', id)).json().recentRuns[0]);
    expect(run.workflowId).toMatch(new RegExp(`^${id}-\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`));
    expect(await awaitBatch(stack.client, { batch: run.workflowId })).toMatchObject({
      total: 2,
      counts: { completed: 2 },
    });

    expect((await cli('schedule', 'pause', id, '--note', 'hold')).json()).toEqual({
      scheduleId: id,
      paused: true,
    });
    expect((await cli('schedule', 'describe', id)).json()).toMatchObject({ paused: true, note: 'hold' });
    expect((await cli('schedule', 'unpause', id)).code).toBe(0);
    expect((await cli('schedule', 'describe', id)).json().paused).toBe(false);

    const updated = await cli('schedule', 'update', id, '--interval', '6h/30m', '--no-pause-on-failure');
    expect(updated.code).toBe(0);
    const after = (await cli('schedule', 'describe', id)).json();
    expect(after).toMatchObject({
      spec: { intervals: [{ every: 21_600_000, offset: 1_800_000 }] },
      policies: { pauseOnFailure: false, overlap: 'BUFFER_ONE' },
    });
    const next: string[] = after.nextActionTimes;
    expect(next.length).toBeGreaterThan(1);
    for (const time of next) expect(time).toMatch(/T(00|06|12|18):30:00\.000Z$/);
    expect(next.slice(1).map((time, i) => Date.parse(time) - Date.parse(next[i]!))).toEqual(
      next.slice(1).map(() => 21_600_000),
    );

    // Yesterday's 06:30 UTC run, backfilled: its id carries that time.
    const day = new Date();
    const past = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate() - 1, 6, 30));
    const window = [
      '--start',
      new Date(past.getTime() - 60_000).toISOString(),
      '--end',
      new Date(past.getTime() + 60_000).toISOString(),
      '--overlap',
      'ALLOW_ALL',
    ];
    const backfilled = await cli('schedule', 'backfill', id, ...window);
    expect(backfilled.code).toBe(0);
    expect(backfilled.json()).toMatchObject({ ranges: [{ start: window[1], end: window[3] }], skipped: [] });
    const runs = await eventually(async () => {
      const recent = (await cli('schedule', 'describe', id)).json().recentRuns as { workflowId: string }[];
      return recent.length === 2 ? recent : undefined;
    });
    expect(runs[1]!.workflowId).toBe(`${id}-${past.toISOString().replace('.000Z', 'Z')}`);
    expect(await awaitBatch(stack.client, { batch: runs[1]!.workflowId })).toMatchObject({
      counts: { completed: 2 },
    });

    // The same window again: its time's run exists (closed), so nothing is sent; --rerun sends it.
    const again = await cli('schedule', 'backfill', id, ...window);
    expect(again.json()).toMatchObject({ ranges: [], skipped: [past.toISOString()] });
    const rerun = await cli('schedule', 'backfill', id, ...window, '--rerun');
    expect(rerun.json()).toMatchObject({ ranges: [{ start: window[1], end: window[3] }], skipped: [] });

    const listed = await eventually(async () => {
      const { json } = await cli('schedule', 'list', '--kind', 'batch');
      return (json() as { scheduleId: string }[]).find((s) => s.scheduleId === id);
    });
    expect(listed).toMatchObject({ kind: 'batch' });

    expect((await cli('schedule', 'delete', id)).json()).toEqual({ scheduleId: id, deleted: true });
    const gone = await cli('schedule', 'describe', id);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/not found/i);
  });

  it('creates a job schedule from --input @file and never prints its input', async () => {
    const endpointId = stack.endpoint();
    const file = path.join(dir, 'job.json');
    writeFileSync(
      file,
      JSON.stringify({
        endpointId,
        request: {
          input: { output: 'scheduled' },
          s3Config: {
            accessId: 'id',
            accessSecret: SECRET,
            bucketName: 'b',
            endpointUrl: 'https://s3.example',
          },
        },
        polling: FAST_POLLING,
        submitLease: false,
      }),
    );
    const id = `cli-sched-job-${Date.now()}`;
    const outputs: string[] = [];
    const run = async (...args: string[]) => {
      const result = await cli(...args);
      outputs.push(result.out, result.err);
      return result;
    };
    expect(
      (
        await run(
          'schedule',
          'create',
          id,
          '--kind',
          'job',
          '--input',
          `@${file}`,
          '--interval',
          '1d',
          '--paused',
        )
      ).code,
    ).toBe(0);
    expect((await run('schedule', 'trigger', id, '--overlap', 'ALLOW_ALL')).code).toBe(0);
    const recent = await eventually(async () => (await run('schedule', 'describe', id)).json().recentRuns[0]);
    expect(await awaitJob(stack.client, { job: recent.workflowId })).toMatchObject({ output: 'scheduled' });
    await eventually(
      async () => (await run('schedule', 'describe', id)).json().recentRuns[0]?.status === 'COMPLETED',
    );
    await run('schedule', 'list');
    expect((await run('schedule', 'delete', id)).code).toBe(0);
    expect(outputs.join('')).not.toContain(SECRET);
  });

  it.each([
    [['--cron', '61 * * * *'], /--cron \(spec\.cron\.0\): not a valid cron expression/],
    [['--cron', '@sometimes'], /--cron \(spec\.cron\.0\): not a valid cron expression \(unknown descriptor/],
    [['--interval', 'soon'], /--interval \(spec\.intervals\.0\.every\): must be a/],
    [
      ['--cron', '@daily', '--timezone', 'Nowhere/Else'],
      /--timezone \(spec\.timezone\): not a known IANA time zone/,
    ],
    [['--cron', '@daily', '--overlap', 'MAYBE'], /--overlap: must be one of SKIP/],
    [['--cron', '@daily', '--catchup-window', 'forever'], /--catchup-window \(policies\.catchupWindow\)/],
    [
      ['--cron', '@daily', '--start-at', '2027-02-01', '--end-at', '2027-01-01'],
      /--end-at \(spec\.endAt\): must be after startAt/,
    ],
    [[], /--cron: give --cron, --interval or --spec/],
  ])('refuses a bad spec %j with exit code 2 before connecting', async (flags, message) => {
    const result = await refused(
      'schedule',
      'create',
      'bad',
      '--kind',
      'job',
      '--endpoint',
      'ep',
      '--job-input',
      '{}',
      ...flags,
    );
    expect(result.code).toBe(2);
    expect(result.err).toMatch(message);
    expect(result.connected).toBe(false);
  });

  it('refuses a bad job input, kind or backfill window before connecting', async () => {
    const noEndpoint = await refused(
      'schedule',
      'create',
      'bad',
      '--kind',
      'job',
      '--cron',
      '@daily',
      '--job-input',
      '{}',
    );
    expect(noEndpoint).toMatchObject({ code: 2, connected: false });
    expect(noEndpoint.err).toMatch(/--input \(input\.endpointId\)/);
    const kind = await refused('schedule', 'create', 'bad', '--kind', 'cron', '--cron', '@daily');
    expect(kind).toMatchObject({ code: 2, connected: false });
    expect(kind.err).toMatch(/--kind: must be one of job, batch, pipeline, ephemeral/);
    const window = await refused('schedule', 'backfill', 'x', '--start', '2026-01-02', '--end', '2026-01-01');
    expect(window).toMatchObject({ code: 2, connected: false });
    expect(window.err).toMatch(/--end \(end\): must be after start/);
  });
});
