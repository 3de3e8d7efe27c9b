/**
 * The ephemeral endpoint's batch form, refused before anything starts when bad (the field named),
 * and which `jobs` inputs run as one batch (jobsAsBatch) rather than as child job workflows.
 */
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { EPHEMERAL_FAILURE, ephemeralFailureOf, startEphemeralEndpoint } from '../../client/endpoints';
import { type BatchInput, parseBatchInput } from '../../contracts/batch-input';
import {
  type EphemeralEndpointInput,
  ephemeralEndpointInputSchema,
  jobsAsBatch,
} from '../../contracts/endpoint-input';

function recordingClient() {
  const started: Array<{ type: string; options: Record<string, unknown> }> = [];
  const client = {
    workflow: {
      start: async (type: string, options: Record<string, unknown>) => {
        started.push({ type, options });
        return { workflowId: options.workflowId };
      },
    },
  } as unknown as Client;
  return { client, started };
}

async function refusal(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

const endpoint = { templateId: 'tpl', gpuIds: 'AMPERE_24' } as const;
const inline = (count: number) => ({ inline: Array.from({ length: count }, (_, i) => ({ input: { i } })) });

describe('startEphemeralEndpoint with a batch', () => {
  it('starts with the batch as written, checked by the batch rules, nothing else started', async () => {
    const { client, started } = recordingClient();
    // Durations as a caller writes them: the batch workflow parses its input itself, so the
    // ephemeral workflow hands it on unparsed (a parsed one, in milliseconds, is no input).
    const batch = {
      items: inline(2),
      failureTolerance: { percentage: 10 },
      job: { polling: { initialInterval: '1 second', maxInterval: '5 seconds' } },
    };
    await startEphemeralEndpoint(client, { endpoint, batch }, { workflowId: 'eph-1' });
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      type: 'ephemeralEndpointWorkflow',
      options: { workflowId: 'eph-1', args: [{ batch }] },
    });
    const [args] = (started[0]?.options.args ?? []) as Array<{ batch: BatchInput }>;
    const handedOn = args?.batch;
    // The batch applies its defaults when it parses what it is given.
    const parsed = parseBatchInput({ ...handedOn, endpointId: 'ep-1' } as BatchInput);
    expect(parsed.ok && parsed.value).toMatchObject({ maxConcurrency: 100, pageSize: 100 });
  });

  const polling = { initialInterval: 5_000, maxInterval: 1_000 };
  it.each([
    ['jobs', { endpoint }, /exactly one of jobs/],
    [
      'jobs',
      { endpoint, jobs: [{ input: { request: { input: {} } } }], batch: { items: inline(1) } },
      /exactly one/,
    ],
    ['batch', { endpoint, batch: { items: inline(1), endpointId: 'ep-9' } }, /unknown field\(s\) endpointId/],
    [
      'batch.route',
      { endpoint, batch: { items: inline(1), route: { endpoints: [{ endpointId: 'ep-9' }] } } },
      /runs on the endpoint this workflow provisions/,
    ],
    [
      'jobs.0.input',
      {
        endpoint,
        jobs: [{ input: { request: { input: {} }, route: { endpoints: [{ endpointId: 'ep-9' }] } } }],
      },
      /must not set route/,
    ],
    ['batch.items.inline', { endpoint, batch: { items: { inline: [] } } }, /at least one item/],
    ['batch.maxConcurrency', { endpoint, batch: { items: inline(1), maxConcurrency: 0 } }, />=1/],
    [
      'batch.failureTolerance.percentage',
      { endpoint, batch: { items: inline(1), failureTolerance: { percentage: 120 } } },
      /<=100/,
    ],
    [
      'batch.job.polling.maxInterval',
      { endpoint, batch: { items: inline(1), job: { polling } } },
      /must not be below initialInterval/,
    ],
    [
      'batch.items.inline.0.payload',
      { endpoint, batch: { items: { inline: [{ input: { pad: 'x'.repeat(11 * 1024 * 1024) } }] } } },
      /accepts at most/,
    ],
  ])('refuses a bad %s', async (field, input, rule) => {
    const { client, started } = recordingClient();
    const error = await refusal(startEphemeralEndpoint(client, input as EphemeralEndpointInput));
    expect(error.field).toBe(field);
    expect(error.rule).toMatch(rule);
    expect(started).toEqual([]);
  });

  it('refuses inline items beyond what one Temporal payload holds, pointing at a manifest', async () => {
    const { client, started } = recordingClient();
    const big = { inline: Array.from({ length: 30 }, (_, i) => ({ input: { i, pad: 'x'.repeat(80_000) } })) };
    const error = await refusal(startEphemeralEndpoint(client, { endpoint, batch: { items: big } }));
    expect(error.field).toBe('batch.items.inline');
    expect(error.rule).toMatch(/manifest/);
    expect(started).toEqual([]);
  });
});

describe('jobsAsBatch', () => {
  const parse = (input: EphemeralEndpointInput) => ephemeralEndpointInputSchema.parse(input);
  const job = (i: number, options: Record<string, unknown> = {}) => ({
    input: { request: { input: { i } }, ...options },
  });

  it('maps jobs of the library job type with the same options onto one batch of tolerance 0', () => {
    const batch = jobsAsBatch(
      parse({
        endpoint,
        jobs: [
          job(0, { maxSubmissions: 2, retry: { maxRetries: 2 } }),
          job(1, { retry: { maxRetries: 2 }, maxSubmissions: 2 }),
        ],
      }),
    );
    expect(batch).toMatchObject({
      items: { inline: [{ input: { i: 0 } }, { input: { i: 1 } }] },
      job: { maxSubmissions: 2, retry: { maxRetries: 2 } },
      failureTolerance: { count: 0 },
    });
    expect(batch).not.toHaveProperty('endpointId');
    // Handed on as written: the batch's own parse applies its defaults.
    const parsed = parseBatchInput({ ...(batch as object), endpointId: 'ep-1' } as BatchInput);
    expect(parsed.ok && parsed.value).toMatchObject({ maxConcurrency: 100 });
  });

  it.each([
    ['options differ', { jobs: [job(0, { maxSubmissions: 2 }), job(1)] }],
    ['a job names its workflow id', { jobs: [{ ...job(0), workflowId: 'mine' }] }],
    ['another job workflow type', { jobs: [job(0)], jobWorkflowType: 'myJob' }],
    ['sync mode', { jobs: [job(0, { mode: 'sync' })] }],
    [
      'an option the batch lacks (stream)',
      { jobs: [job(0, { stream: { sink: { kind: 'file', name: 'out.txt' } } })] },
    ],
  ])('keeps child job workflows when %s', (_why, extra) => {
    expect(jobsAsBatch(parse({ endpoint, ...extra } as EphemeralEndpointInput))).toBeUndefined();
  });

  it('is the batch form itself for the batch form: no jobs, nothing to map', () => {
    expect(jobsAsBatch(parse({ endpoint, batch: { items: inline(1) } }))).toBeUndefined();
  });
});

describe('ephemeralFailureOf', () => {
  it('reads the summary and teardown out of EphemeralBatchFailed, and nothing out of other failures', () => {
    const details = {
      endpointId: 'ep-1',
      name: 'n',
      batch: { total: 3 },
      batchFailure: { type: 'BatchToleranceExceeded', message: 'm' },
      teardown: { endpointIds: ['ep-1'] },
    };
    const failure = ApplicationFailure.create({
      type: EPHEMERAL_FAILURE.batchFailed,
      message: 'm',
      details: [details],
    });
    expect(ephemeralFailureOf(failure)).toEqual(details);
    const wrapped = new WorkflowFailedError('failed', failure, 'NON_RETRYABLE_FAILURE');
    expect(ephemeralFailureOf(wrapped)).toEqual(details);
    expect(ephemeralFailureOf(ApplicationFailure.create({ type: 'Other', message: 'm' }))).toBeUndefined();
    expect(ephemeralFailureOf(new Error('x'))).toBeUndefined();
  });
});
