/**
 * Schedule inputs refused before anything is sent: each bad field is a ValidationError naming it
 * and its rule, and the client (a recording stand-in, no server) is never called.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { validateBatchInput } from '../../client/batches';
import { cronProblem } from '../../client/schedule-spec';
import {
  backfillSchedule,
  scheduleBatch,
  scheduledRunWorkflowId,
  scheduleEphemeralRun,
  scheduleJob,
  triggerSchedule,
  updateSchedule,
} from '../../client/schedules';

/** A client whose every schedule call is recorded; the valid cases check what would be sent. */
function recordingClient() {
  const calls: { method: string; args: unknown[] }[] = [];
  const handle = new Proxy(
    {},
    {
      // Not a thenable: `then` stays undefined, or awaiting the handle would never settle.
      get: (_target, method: string) =>
        method === 'then'
          ? undefined
          : async (...args: unknown[]) => {
              calls.push({ method, args });
              if (method === 'describe')
                return { policies: { overlap: 'SKIP' }, info: { recentActions: [] } };
              return undefined;
            },
    },
  );
  const client = {
    options: { namespace: 'default' },
    schedule: {
      create: async (options: unknown) => {
        calls.push({ method: 'create', args: [options] });
        return handle;
      },
      getHandle: () => handle,
    },
  } as unknown as Client;
  return { client, calls };
}

const job = { endpointId: 'ep-1', request: { input: { prompt: 'hi' } } };
const base = { scheduleId: 'nightly', spec: { cron: ['0 2 * * *'] }, input: job };

/** The workflow input and the schedule's options of a case, as the schedule functions take them. */
function split(whole: Record<string, unknown>): [never, never] {
  const { input, ...options } = whole;
  return [input as never, options as never];
}

async function refusal(promise: Promise<unknown>): Promise<{ field: string; rule: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  const { field, rule } = error as ValidationError;
  return { field, rule };
}

describe('schedule validation', () => {
  it.each([
    [{ ...base, spec: { cron: ['0 2 * *'] } }, 'spec.cron.0', /not a valid cron expression \(has 4 fields/],
    [{ ...base, spec: { cron: ['0 25 * * *'] } }, 'spec.cron.0', /not a valid cron expression/],
    [{ ...base, spec: { cron: ['@often'] } }, 'spec.cron.0', /unknown descriptor/],
    [{ ...base, spec: { cron: ['@every soon'] } }, 'spec.cron.0', /@every <duration>/],
    [{ ...base, spec: { cron: ['0 2 L * *'] } }, 'spec.cron.0', /not supported by Temporal/],
    [{ ...base, spec: { cron: ['0 2 * * * 20x6'] } }, 'spec.cron.0', /year field/],
    [{ ...base, spec: {} }, 'spec.cron', /at least one of cron, calendars or intervals/],
    [{ ...base, spec: { cron: ['0 2 * * *'], timezone: 'Mars/Olympus' } }, 'spec.timezone', /time zone/],
    [{ ...base, spec: { intervals: [{ every: 'often' }] } }, 'spec.intervals.0.every', /duration/],
    [{ ...base, spec: { intervals: [{ every: 0 }] } }, 'spec.intervals.0.every', /positive/],
    [{ ...base, spec: { cron: ['@daily'], jitter: 'lots' } }, 'spec.jitter', /duration/],
    [{ ...base, spec: { calendars: [{ hour: 24 }] } }, 'spec.calendars.0.hour', /0 to 23/],
    [{ ...base, spec: { calendars: [{ dayOfWeek: 'FUNDAY' }] } }, 'spec.calendars.0.dayOfWeek', /day name/],
    [{ ...base, spec: { cron: ['@daily'], startAt: 'tomorrow' } }, 'spec.startAt', /date/],
    [
      { ...base, spec: { cron: ['@daily'], startAt: '2027-01-02', endAt: '2027-01-01' } },
      'spec.endAt',
      /after startAt/,
    ],
    [{ ...base, policies: { overlap: 'SOMETIMES' } }, 'policies.overlap', /SKIP, BUFFER_ONE/],
    [{ ...base, policies: { catchupWindow: -5 } }, 'policies.catchupWindow', /duration/],
    [{ ...base, policies: { pauseOnFailure: 'yes' } }, 'policies.pauseOnFailure', /boolean/],
    [{ ...base, scheduleId: '' }, 'scheduleId', /must not be empty/],
    [{ ...base, scheduleId: 'a b' }, 'scheduleId', /spaces/],
    [{ ...base, paused: 'no' }, 'paused', /boolean/],
    [{ ...base, surprise: 1 }, 'surprise', /unknown field\(s\) surprise/],
    [{ ...base, policies: { overlap: 'SKIP', often: true } }, 'policies.often', /unknown field\(s\) often/],
    [{ ...base, input: { request: { input: {} } } }, 'input.endpointId', /./],
    [{ ...base, input: { endpointId: 'ep-1', request: {} } }, 'input.request.input', /./],
    [{ ...base, input: 'not an object' }, 'input', /./],
  ])('job schedule %#: names %s', async (input, field, rule) => {
    const { client, calls } = recordingClient();
    const refused = await refusal(scheduleJob(client, ...split(input)));
    expect(refused.field).toBe(field);
    expect(refused.rule).toMatch(rule);
    expect(calls).toEqual([]);
  });

  it("checks a batch's input with the batch validator (an inline item's field named)", async () => {
    const { client, calls } = recordingClient();
    const input = { endpointId: 'ep-1', items: { inline: [{ input: {} }, { nope: 1 }] } };
    const refused = await refusal(scheduleBatch(client, ...split({ ...base, input })));
    const direct = (() => {
      try {
        validateBatchInput(input as never);
      } catch (error) {
        return error as ValidationError;
      }
    })();
    expect(refused).toEqual({ field: `input.${direct?.field}`, rule: direct?.rule });
    expect(calls).toEqual([]);
  });

  it("checks an ephemeral run's input with the ephemeral schema", async () => {
    const { client, calls } = recordingClient();
    const input = { endpoint: { templateId: 't', gpuIds: 'AMPERE_16' }, jobs: [] };
    const refused = await refusal(scheduleEphemeralRun(client, ...split({ ...base, input })));
    expect(refused).toEqual({ field: 'input.jobs', rule: 'must not be empty' });
    expect(calls).toEqual([]);
  });

  it('refuses a bad backfill window, trigger overlap or update before sending', async () => {
    const { client, calls } = recordingClient();
    expect(
      await refusal(
        backfillSchedule(client, { scheduleId: 'nightly', start: '2026-01-02', end: '2026-01-01' }),
      ),
    ).toEqual({ field: 'end', rule: 'must be after start' });
    expect(
      (await refusal(triggerSchedule(client, { scheduleId: 'nightly', overlap: 'NEVER' as never }))).field,
    ).toBe('overlap');
    expect(
      (await refusal(updateSchedule(client, { scheduleId: 'nightly', spec: { cron: ['nope'] } }))).field,
    ).toBe('spec.cron.0');
    expect((await refusal(updateSchedule(client, { scheduleId: ' ' }))).field).toBe('scheduleId');
    expect(calls).toEqual([]);
  });

  it('sends a valid job schedule: crons as cronExpressions, the schedule id as the run id prefix', async () => {
    const { client, calls } = recordingClient();
    await scheduleJob(client, job, {
      scheduleId: base.scheduleId,
      spec: { cron: ['CRON_TZ=Europe/Paris 0 2 * * MON-FRI # weekdays'], jitter: '5m', timezone: 'UTC' },
      policies: { overlap: 'BUFFER_ONE', catchupWindow: '1h', pauseOnFailure: true },
      paused: true,
      note: 'made by a test',
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args[0]).toMatchObject({
      scheduleId: 'nightly',
      spec: { cronExpressions: ['CRON_TZ=Europe/Paris 0 2 * * MON-FRI # weekdays'], jitter: 300_000 },
      action: { workflowType: 'serverlessJob', workflowId: 'nightly', args: [job] },
      policies: { overlap: 'BUFFER_ONE', catchupWindow: 3_600_000, pauseOnFailure: true },
      state: { paused: true, note: 'made by a test' },
      memo: { durableServerlessKind: 'job' },
    });
  });

  it('triggers with the schedule’s own overlap policy unless told otherwise', async () => {
    const { client, calls } = recordingClient();
    await triggerSchedule(client, { scheduleId: 'nightly' });
    await triggerSchedule(client, { scheduleId: 'nightly', overlap: 'ALLOW_ALL' });
    expect(calls.filter((c) => c.method === 'trigger').map((c) => c.args)).toEqual([['SKIP'], ['ALLOW_ALL']]);
  });

  it.each([
    '0 2 * * *',
    '*/15 * * * *',
    '0 0 2 * * *',
    '0 2 * * * 2027',
    '30 0 2 1 JAN MON 2027-2030',
    '@daily',
    '@every 90m',
    '@every 1h/15m',
    'CRON_TZ=America/New_York 0 9 * * 1-5',
  ])('accepts the Temporal cron %s', (cron) => {
    expect(cronProblem(cron)).toBeUndefined();
  });

  it('derives a run id from the schedule id and the scheduled time', () => {
    expect(scheduledRunWorkflowId('nightly', new Date('2026-01-01T02:00:00.000Z'))).toBe(
      'nightly-2026-01-01T02:00:00Z',
    );
  });
});
