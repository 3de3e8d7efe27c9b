/**
 * Every duration of a job's input, and extendJobTtl's ttl, takes Temporal's form: a number of ms
 * or a string such as '30 seconds'. The input is checked before anything is sent, and a bad value
 * is a ValidationError naming its field.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { parseDuration } from '../../client/cli-input';
import { extendJobTtl, validateJobInput } from '../../client/jobs';
import {
  type JobWorkflowInput,
  jobExecutionTimeoutSchema,
  jobTtlSchema,
  parseJobWorkflowInput,
  pollingInputOf,
} from '../../contracts/job-input';

const base = { endpointId: 'ep-1', request: { input: {} } };

function parsed(input: JobWorkflowInput) {
  const result = parseJobWorkflowInput(input);
  if (!result.ok) throw new Error(`${result.field}: ${result.rule}`);
  return result.value;
}

function refusal(input: unknown): { field: string; rule: string } {
  try {
    validateJobInput(input as JobWorkflowInput);
  } catch (error) {
    if (error instanceof ValidationError) return { field: error.field, rule: error.rule };
    throw error;
  }
  throw new Error('the input was accepted');
}

/** A client whose signals are recorded: extendJobTtl sends one when its options are good. */
function signalRecorder() {
  const signals: { workflowId: string; args: unknown[] }[] = [];
  const client = {
    workflow: {
      getHandle: (workflowId: string) => ({
        signal: async (_signal: unknown, ...args: unknown[]) => {
          signals.push({ workflowId, args });
        },
      }),
    },
  } as unknown as Client;
  return { client, signals };
}

describe('job input durations', () => {
  it('polling: durations as strings or ms, over the mode defaults, parsed to ms', () => {
    expect(parsed({ ...base, polling: { initialInterval: '2 seconds', maxInterval: '1m' } }).polling).toEqual(
      {
        initialIntervalMs: 2_000,
        maxIntervalMs: 60_000,
        backoffCoefficient: 1.5,
      },
    );
    expect(parsed({ ...base, mode: 'sync', polling: { maxInterval: 1_000 } }).polling).toEqual({
      initialIntervalMs: 200,
      maxIntervalMs: 1_000,
      backoffCoefficient: 1.5,
    });
  });

  it('polling: a bad interval, one below the first, or a unit-suffixed name is refused by field', () => {
    expect(refusal({ ...base, polling: { initialInterval: 'soon' } })).toMatchObject({
      field: 'polling.initialInterval',
      rule: expect.stringContaining('duration'),
    });
    expect(refusal({ ...base, polling: { initialInterval: 5, maxInterval: '1s' } })).toMatchObject({
      field: 'polling.initialInterval',
      rule: expect.stringContaining('between 10 and 3600000 ms'),
    });
    expect(refusal({ ...base, polling: { initialInterval: '5s', maxInterval: '1s' } })).toEqual({
      field: 'polling.maxInterval',
      rule: 'must not be below initialInterval',
    });
    // Below the mode's first interval (async: 1 s), given alone.
    expect(refusal({ ...base, polling: { maxInterval: 500 } })).toMatchObject({
      field: 'polling.maxInterval',
    });
    expect(refusal({ ...base, polling: { initialIntervalMs: 1_000 } })).toMatchObject({
      field: 'polling',
      rule: expect.stringContaining('initialIntervalMs'),
    });
  });

  it('a parsed schedule written back as input parses to itself', () => {
    const polling = { initialIntervalMs: 300, maxIntervalMs: 4_000, backoffCoefficient: 2 };
    expect(parsed({ ...base, polling: pollingInputOf(polling) }).polling).toEqual(polling);
  });

  it('the other durations: runsyncWait, retry, submitTimeout, uncertainSubmitWait, submitLease', () => {
    const { options } = parsed({
      ...base,
      mode: 'runsync',
      runsyncWait: '90 seconds',
      retry: { maxRetries: 2, initialInterval: '2s', maximumInterval: '1 minute' },
      submitTimeout: '30s',
      uncertainSubmitWait: '1m',
    });
    expect(options).toMatchObject({
      runsyncWait: 90_000,
      retry: { initialInterval: 2_000, maximumInterval: 60_000 },
      submitTimeout: 30_000,
      uncertainSubmitWait: 60_000,
    });
    expect(parsed({ ...base, submitLease: '30 seconds' }).options.submitLease).toBe(30_000);
    expect(refusal({ ...base, mode: 'runsync', runsyncWait: '10 minutes' })).toMatchObject({
      field: 'runsyncWait',
      rule: expect.stringContaining('between 1000 and 300000 ms'),
    });
    expect(refusal({ ...base, submitTimeout: 'later' })).toMatchObject({ field: 'submitTimeout' });
  });
});

describe('extendJobTtl', () => {
  it('takes the workflow id and a ttl as a duration; sends it in ms', async () => {
    const { client, signals } = signalRecorder();
    expect(await extendJobTtl(client, { workflowId: 'job-1', ttl: '2 days' })).toBe(172_800_000);
    expect(await extendJobTtl(client, { workflowId: 'job-2', ttl: 3_600_000 })).toBe(3_600_000);
    expect(signals).toEqual([
      { workflowId: 'job-1', args: [{ ttl: 172_800_000 }] },
      { workflowId: 'job-2', args: [{ ttl: 3_600_000 }] },
    ]);
  });

  it('refuses a ttl out of the service range, or no workflow id, naming the field; sends nothing', async () => {
    const { client, signals } = signalRecorder();
    await expect(extendJobTtl(client, { workflowId: 'job-1', ttl: '5s' })).rejects.toMatchObject({
      field: 'ttl',
      rule: expect.stringContaining('between 10000 and 604800000 ms'),
    });
    await expect(extendJobTtl(client, { workflowId: 'job-1', ttl: '8 days' })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(extendJobTtl(client, { workflowId: '', ttl: '1h' })).rejects.toMatchObject({
      field: 'workflowId',
    });
    expect(signals).toEqual([]);
  });
});

describe('CLI duration flags', () => {
  it('--ttl and --execution-timeout take a duration or ms, checked by the same schemas as the input', () => {
    expect(parseDuration('--ttl', '2d', jobTtlSchema)).toBe(172_800_000);
    expect(parseDuration('--ttl', '3600000', jobTtlSchema)).toBe(3_600_000);
    expect(parseDuration('--execution-timeout', '30m', jobExecutionTimeoutSchema)).toBe(1_800_000);
    expect(() => parseDuration('--ttl', '5', jobTtlSchema)).toThrow(
      expect.objectContaining({
        field: '--ttl',
        rule: expect.stringContaining('between 10000 and 604800000 ms'),
      }),
    );
    expect(() => parseDuration('--execution-timeout', 'soon', jobExecutionTimeoutSchema)).toThrow(
      expect.objectContaining({ field: '--execution-timeout' }),
    );
  });
});
