/**
 * Schedules on the dev server's Temporal Schedules, with the real worker and the emulator over
 * HTTP: a schedule's next times, a run triggered now that completes, pause and unpause, pause on
 * failure, a backfill of a past window starting exactly the runs of its times (ids carry the
 * times; a second backfill starts none again, while they run or after they closed, unless asked
 * to rerun closed ones), SKIP honoured while a run goes on,
 * an update of spec and input, batch and ephemeral schedules, and delete.
 *
 * Nothing waits on the wall clock: each step waits for what describe shows (the scheduler handles
 * requests in order, so a trigger's run appearing means the requests before it were handled), and
 * the emulator's clock is frozen where a run must stay in flight.
 */
import { randomUUID } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBatch } from '../../client/batches';
import { awaitJob } from '../../client/jobs';
import { awaitPipeline } from '../../client/pipelines';
import {
  backfillSchedule,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  pauseSchedule,
  type ScheduleDetails,
  scheduleBatch,
  scheduledRunWorkflowId,
  scheduleEphemeralRun,
  scheduleJob,
  schedulePipeline,
  triggerSchedule,
  unpauseSchedule,
  updateSchedule,
} from '../../client/schedules';
import type { ephemeralEndpointWorkflow } from '../../workflows/endpoint/endpoint-lifecycle';
import { endpointIdKey, tagsKey } from '../../workflows/shared/search-attributes';
import { eventually, FAST_POLLING, type JobStack, startJobStack } from '../support/integration';

describe('schedules on the dev server', () => {
  let stack: JobStack;
  let endpointId: string;
  const created: string[] = [];
  beforeAll(async () => {
    stack = await startJobStack({ name: 'schedules', timeScale: 100 });
    endpointId = stack.endpoint({ workersMin: 0, workersMax: 10 });
  });
  afterAll(async () => {
    for (const id of created) await deleteSchedule(stack.client, { scheduleId: id }).catch(() => undefined);
    await stack?.close();
  });

  /** A job input that completes with `output` (the submit lease is off at time scale 100). */
  const jobInput = (output: unknown, extra: Record<string, unknown> = {}) => ({
    endpointId,
    request: { input: { output, ...extra } },
    polling: FAST_POLLING,
    submitLease: false as const,
  });
  const newId = (label: string) => {
    const id = `sched-${label}-${randomUUID().slice(0, 8)}`;
    created.push(id);
    return id;
  };
  const describeWhen = (id: string, check: (d: ScheduleDetails) => boolean) =>
    eventually(async () => {
      const d = await describeSchedule(stack.client, { scheduleId: id });
      return check(d) ? d : undefined;
    });

  it('tags every run it starts, and an update of the input keeps them', async () => {
    const id = newId('tagged');
    await scheduleJob(stack.client, jobInput({ ran: 'tagged' }), {
      scheduleId: id,
      spec: { cron: ['0 3 * * *'] },
      taskQueue: stack.taskQueue,
      tags: ['nightly', `schedule:${id}`],
    });
    await updateSchedule(stack.client, { scheduleId: id, input: jobInput({ ran: 'updated' }) });
    await triggerSchedule(stack.client, { scheduleId: id });
    const run = (await describeWhen(id, (d) => d.recentRuns.length === 1)).recentRuns[0]!;
    await awaitJob(stack.client, { job: run.workflowId });
    const described = await stack.client.workflow.getHandle(run.workflowId).describe();
    expect(described.typedSearchAttributes.get(tagsKey)).toEqual(['nightly', `schedule:${id}`]);
  });

  it('creates a schedule, shows its next times in its zone, and a triggered run completes', async () => {
    const id = newId('job');
    await scheduleJob(stack.client, jobInput({ ran: 'now' }), {
      scheduleId: id,
      spec: { cron: ['0 3 * * *'], timezone: 'Europe/Paris' },
      taskQueue: stack.taskQueue,
      note: 'nightly at 3 in Paris',
      memo: { owner: 'tests' },
    });
    const before = await describeSchedule(stack.client, { scheduleId: id });
    expect(before).toMatchObject({
      kind: 'job',
      workflowType: 'serverlessJob',
      workflowIdPrefix: id,
      paused: false,
      note: 'nightly at 3 in Paris',
      memo: { owner: 'tests' },
      recentRuns: [],
      policies: { overlap: 'SKIP' },
    });
    expect(before.nextActionTimes.length).toBeGreaterThan(1);
    const paris = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      hour: '2-digit',
      minute: '2-digit',
    });
    for (const time of before.nextActionTimes) expect(paris.format(time)).toBe('03:00');
    expect(
      before.nextActionTimes[1]!.getTime() - before.nextActionTimes[0]!.getTime(),
    ).toBeGreaterThanOrEqual(23 * 3_600_000);

    await triggerSchedule(stack.client, { scheduleId: id });
    const started = await describeWhen(id, (d) => d.recentRuns.length === 1);
    const run = started.recentRuns[0]!;
    expect(run.workflowId).toBe(scheduledRunWorkflowId(id, run.scheduledAt));
    expect(await awaitJob(stack.client, { job: run.workflowId })).toMatchObject({
      status: 'COMPLETED',
      output: { ran: 'now' },
    });
    const after = await describeSchedule(stack.client, { scheduleId: id });
    expect(after.recentRuns).toMatchObject([{ workflowId: run.workflowId, status: 'COMPLETED' }]);
    expect(after.numActionsTaken).toBe(1);

    const listed = await eventually(async () => {
      for await (const schedule of listSchedules(stack.client, { kind: 'job' }))
        if (schedule.scheduleId === id) return schedule;
      return undefined;
    });
    expect(listed).toMatchObject({ kind: 'job', paused: false, recentWorkflowIds: [run.workflowId] });
  });

  it('pauses and unpauses with a note', async () => {
    const id = newId('pause');
    await scheduleJob(stack.client, jobInput(1), {
      scheduleId: id,
      spec: { intervals: [{ every: '1 day' }] },
      taskQueue: stack.taskQueue,
      paused: true,
    });
    expect((await describeSchedule(stack.client, { scheduleId: id })).paused).toBe(true);
    await unpauseSchedule(stack.client, { scheduleId: id, note: 'back on' });
    expect(await describeSchedule(stack.client, { scheduleId: id })).toMatchObject({
      paused: false,
      note: 'back on',
    });
    await pauseSchedule(stack.client, { scheduleId: id, note: 'maintenance' });
    expect(await describeSchedule(stack.client, { scheduleId: id })).toMatchObject({
      paused: true,
      note: 'maintenance',
    });
  });

  it('pauses itself when a run fails, with pauseOnFailure', async () => {
    const id = newId('fails');
    await scheduleJob(stack.client, jobInput(null, { fail: 'broken on purpose' }), {
      scheduleId: id,
      spec: { intervals: [{ every: '1 day' }] },
      taskQueue: stack.taskQueue,
      policies: { pauseOnFailure: true },
    });
    await triggerSchedule(stack.client, { scheduleId: id });
    const paused = await describeWhen(id, (d) => d.paused);
    expect(paused.recentRuns).toMatchObject([{ status: 'FAILED' }]);
  });

  it('backfills a past window: one run per time, ids carrying the times, never a time whose run exists unless rerun', async () => {
    const id = newId('backfill');
    await scheduleJob(stack.client, jobInput({ backfilled: true }, { sleepMs: 1_000 }), {
      scheduleId: id,
      spec: { intervals: [{ every: '1 minute' }] },
      taskQueue: stack.taskQueue,
      // Paused: only the backfills (and the triggers below) start runs.
      paused: true,
    });
    const t0 = Math.floor(Date.now() / 60_000) * 60_000 - 60 * 60_000;
    const minute = (k: number) => new Date(t0 + k * 60_000);
    const window = { start: minute(0), end: minute(2), overlap: 'ALLOW_ALL' as const };
    const times = [0, 1, 2].map(minute);
    const expected = times.map((time) => scheduledRunWorkflowId(id, time));
    const idsOf = (d: ScheduleDetails) => d.recentRuns.map((r) => r.workflowId);

    // Service time stands still, so every run stays in flight through the second backfill.
    stack.control.freeze();
    try {
      expect(await backfillSchedule(stack.client, { scheduleId: id, ...window })).toEqual({
        ranges: [{ start: window.start, end: window.end }],
        skipped: [],
      });
      const first = await describeWhen(id, (d) => d.recentRuns.length === 3);
      expect(idsOf(first)).toEqual(expected);
      // Even asked to rerun, a time whose run is still open starts nothing: its id refuses it.
      await backfillSchedule(stack.client, { scheduleId: id, ...window, rerun: true });
      // Handled in order: once the trigger's run shows, the backfill before it has been handled.
      await triggerSchedule(stack.client, { scheduleId: id, overlap: 'ALLOW_ALL' });
      const after = await describeWhen(id, (d) => d.recentRuns.length === 4);
      expect(after.numActionsTaken).toBe(4);
      expect(idsOf(after).slice(0, 3)).toEqual(expected);
      expect(after.recentRuns.slice(0, 3).map((r) => r.runId)).toEqual(first.recentRuns.map((r) => r.runId));
    } finally {
      stack.control.resume();
    }
    for (const workflowId of expected)
      expect(await awaitJob(stack.client, { job: workflowId })).toMatchObject({
        output: { backfilled: true },
      });

    // Closed now, where Temporal alone would start them again: the backfill finds their runs and
    // sends nothing. The trigger after it shows that nothing else started (7 if it had); it may
    // come within the second of the first trigger, whose run holds that second's id: the trigger
    // waits for the next second rather than start nothing.
    expect(await backfillSchedule(stack.client, { scheduleId: id, ...window })).toEqual({
      ranges: [],
      skipped: times,
    });
    await triggerSchedule(stack.client, { scheduleId: id, overlap: 'ALLOW_ALL' });
    const untouched = await describeWhen(id, (d) => d.numActionsTaken >= 5);
    expect(untouched.numActionsTaken).toBe(5);

    // A wider window runs only its new times: the minutes before and after.
    const wider = await backfillSchedule(stack.client, {
      scheduleId: id,
      ...window,
      start: minute(-1),
      end: minute(3),
    });
    expect(wider).toEqual({
      ranges: [
        { start: minute(-1), end: new Date(t0 - 1) },
        { start: new Date(minute(2).getTime() + 1), end: minute(3) },
      ],
      skipped: times,
    });
    const widened = await describeWhen(id, (d) => d.numActionsTaken >= 7);
    expect(widened.numActionsTaken).toBe(7);
    expect(idsOf(widened).slice(-2)).toEqual(
      [minute(-1), minute(3)].map((t) => scheduledRunWorkflowId(id, t)),
    );

    // rerun: Temporal's own backfill, which starts the closed runs' times again.
    expect(await backfillSchedule(stack.client, { scheduleId: id, ...window, rerun: true })).toEqual({
      ranges: [{ start: window.start, end: window.end }],
      skipped: [],
    });
    const rerun = await describeWhen(id, (d) => d.numActionsTaken >= 10);
    expect(rerun.numActionsTaken).toBe(10);
    expect(idsOf(rerun).slice(-3)).toEqual(expected);
  });

  it('honours SKIP: a trigger while a run goes on starts nothing', async () => {
    const id = newId('skip');
    await scheduleJob(stack.client, jobInput('once', { sleepMs: 1_000 }), {
      scheduleId: id,
      spec: { intervals: [{ every: '1 day' }] },
      taskQueue: stack.taskQueue,
      policies: { overlap: 'SKIP' },
    });
    stack.control.freeze();
    let workflowId: string;
    try {
      await triggerSchedule(stack.client, { scheduleId: id });
      workflowId = (await describeWhen(id, (d) => d.runningWorkflowIds.length === 1)).runningWorkflowIds[0]!;
      await triggerSchedule(stack.client, { scheduleId: id });
      const skipped = await describeWhen(id, (d) => d.numActionsSkippedOverlap === 1);
      expect(skipped.numActionsTaken).toBe(1);
      expect(skipped.recentRuns.map((r) => r.workflowId)).toEqual([workflowId]);
    } finally {
      stack.control.resume();
    }
    expect(await awaitJob(stack.client, { job: workflowId })).toMatchObject({ output: 'once' });
  });

  it('starts a run for each of two triggers sent back to back (a run is named by its second)', async () => {
    const id = newId('twice');
    await scheduleJob(stack.client, jobInput('twice'), {
      scheduleId: id,
      spec: { intervals: [{ every: '1 day' }] },
      taskQueue: stack.taskQueue,
      policies: { overlap: 'ALLOW_ALL' },
    });
    await triggerSchedule(stack.client, { scheduleId: id });
    await triggerSchedule(stack.client, { scheduleId: id });
    const both = await describeWhen(id, (d) => d.numActionsTaken >= 2);
    expect(both.numActionsTaken).toBe(2);
    const workflowIds = both.recentRuns.map((r) => r.workflowId);
    expect(new Set(workflowIds).size).toBe(2);
    for (const workflowId of workflowIds)
      expect(await awaitJob(stack.client, { job: workflowId })).toMatchObject({ output: 'twice' });
  });

  it('updates the spec and the input; the next run takes the new input', async () => {
    const id = newId('update');
    await scheduleJob(stack.client, jobInput('old'), {
      scheduleId: id,
      spec: { cron: ['0 3 * * *'] },
      taskQueue: stack.taskQueue,
    });
    await updateSchedule(stack.client, {
      scheduleId: id,
      spec: { cron: ['30 4 * * *'] },
      policies: { overlap: 'BUFFER_ONE' },
      input: jobInput('new'),
      note: 'moved to 4:30',
    });
    const updated = await describeSchedule(stack.client, { scheduleId: id });
    expect(updated).toMatchObject({ note: 'moved to 4:30', policies: { overlap: 'BUFFER_ONE' } });
    // Several coming runs, one a day, each at 04:30 UTC.
    const times = updated.nextActionTimes.map((time) => time.getTime());
    expect(times.length).toBeGreaterThan(1);
    expect(times.slice(1).map((time, i) => time - times[i]!)).toEqual(times.slice(1).map(() => 86_400_000));
    for (const time of updated.nextActionTimes) expect(time.toISOString()).toMatch(/T04:30:00\.000Z$/);
    await triggerSchedule(stack.client, { scheduleId: id });
    const run = (await describeWhen(id, (d) => d.recentRuns.length === 1)).recentRuns[0]!;
    expect(await awaitJob(stack.client, { job: run.workflowId })).toMatchObject({ output: 'new' });
  });

  it('runs a scheduled batch', async () => {
    const id = newId('batch');
    await scheduleBatch(
      stack.client,
      {
        endpointId,
        items: { inline: [1, 2, 3].map((n) => ({ input: { output: n } })) },
        job: { polling: FAST_POLLING, submitLease: false },
      },
      {
        scheduleId: id,
        spec: { cron: ['@daily'] },
        taskQueue: stack.taskQueue,
      },
    );
    expect((await describeSchedule(stack.client, { scheduleId: id })).kind).toBe('batch');
    await triggerSchedule(stack.client, { scheduleId: id });
    const run = (await describeWhen(id, (d) => d.recentRuns.length === 1)).recentRuns[0]!;
    expect(await awaitBatch(stack.client, { batch: run.workflowId })).toMatchObject({
      total: 3,
      counts: { completed: 3 },
    });
    // Filed under its endpoint as startBatch files a batch, so `cost endpoint` finds it.
    const described = await stack.client.workflow.getHandle(run.workflowId).describe();
    expect(described.typedSearchAttributes.get(endpointIdKey)).toBe(endpointId);
  });

  it('runs a scheduled pipeline', async () => {
    const id = newId('pipeline');
    const second = stack.endpoint();
    await schedulePipeline(
      stack.client,
      {
        items: { inline: [1, 2, 3].map((n) => ({ input: { output: n } })) },
        stages: [
          { name: 'first', endpointId, job: { polling: FAST_POLLING, submitLease: false } },
          {
            name: 'second',
            endpointId: second,
            job: { polling: FAST_POLLING, submitLease: false },
            map: { 'input.output': '$.previous.output' },
          },
        ],
      },
      { scheduleId: id, spec: { cron: ['@daily'] }, taskQueue: stack.taskQueue },
    );
    const described = await describeSchedule(stack.client, { scheduleId: id });
    expect(described.kind).toBe('pipeline');
    await triggerSchedule(stack.client, { scheduleId: id });
    const run = (await describeWhen(id, (d) => d.recentRuns.length === 1)).recentRuns[0]!;
    expect(await awaitPipeline(stack.client, { pipeline: run.workflowId })).toMatchObject({
      total: 3,
      ended: { completed: 3, failed: 0 },
    });
    expect(stack.control.submissions(second)).toBe(3);
    // Filed under its first stage's endpoint, as startPipeline files it, with its stages in its summary.
    const handle = stack.client.workflow.getHandle(run.workflowId);
    expect((await handle.describe()).typedSearchAttributes.get(endpointIdKey)).toBe(endpointId);
    expect(await (await handle.describe()).staticSummary()).toBe(
      'Pipeline of 3 items through 2 stages: first → second',
    );
  });

  it('runs a scheduled ephemeral endpoint: provisioned, its job run, torn down', async () => {
    const id = newId('ephemeral');
    await scheduleEphemeralRun(
      stack.client,
      {
        endpoint: { templateId: 'scripted', gpuIds: 'AMPERE_16', workersMax: 1 },
        jobs: [{ input: { request: { input: { output: 'eph' } }, mode: 'sync' } }],
        teardown: { pollInterval: 200 },
      },
      {
        scheduleId: id,
        spec: { cron: ['@weekly'] },
        taskQueue: stack.taskQueue,
      },
    );
    await triggerSchedule(stack.client, { scheduleId: id });
    const run = (await describeWhen(id, (d) => d.recentRuns.length === 1)).recentRuns[0]!;
    const result = await stack.client.workflow
      .getHandle<typeof ephemeralEndpointWorkflow>(run.workflowId)
      .result();
    expect(result.results).toMatchObject([{ status: 'COMPLETED', output: 'eph' }]);
    expect(stack.control.endpoints(stack.apiKey).some((e) => e.id === result.endpointId)).toBe(false);
  });

  it('every cron form the validator accepts, Temporal accepts too; an update of the note alone keeps them', async () => {
    const forms = [
      '0 2 * * *',
      '*/15 * * * *',
      '0 2 * * * 2030',
      '30 0 2 1 JAN * 2030-2031',
      '0 9 * * MON-FRI',
      '@yearly',
      '@annually',
      '@monthly',
      '@weekly',
      '@daily',
      '@midnight',
      '@hourly',
      '@every 90m',
      '@every 1h/15m',
      'CRON_TZ=America/New_York 0 9 * * 1-5',
      '0 2 * * * # nightly',
    ];
    for (const [k, cron] of forms.entries()) {
      const id = newId(`cron-${k}`);
      await scheduleJob(stack.client, jobInput(1), {
        scheduleId: id,
        spec: { cron: [cron] },
        taskQueue: stack.taskQueue,
        paused: true,
      });
      const before = await describeSchedule(stack.client, { scheduleId: id });
      expect(before.nextActionTimes.length, cron).toBeGreaterThan(0);
      await updateSchedule(stack.client, { scheduleId: id, note: 'only the note' });
      const after = await describeSchedule(stack.client, { scheduleId: id });
      expect(after.note).toBe('only the note');
      expect(after.nextActionTimes, cron).toEqual(before.nextActionTimes);
      await deleteSchedule(stack.client, { scheduleId: id });
    }
  });

  it('deletes a schedule', async () => {
    const id = newId('delete');
    await scheduleJob(stack.client, jobInput(1), {
      scheduleId: id,
      spec: { cron: ['@hourly'] },
      taskQueue: stack.taskQueue,
    });
    await deleteSchedule(stack.client, { scheduleId: id });
    await expect(describeSchedule(stack.client, { scheduleId: id })).rejects.toBeInstanceOf(
      ScheduleNotFoundError,
    );
  });
});
