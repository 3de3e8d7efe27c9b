import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { awaitBatch, readBatchResults } from '../../client/batches';
import { awaitJob, cancelJob, getJobSnapshot } from '../../client/jobs';
import { watchJob } from '../../client/watch';

// No call gets as far as Temporal: the client is never used.
const client = {} as Client;

async function refusal(call: () => Promise<unknown>): Promise<ValidationError> {
  const error = await call().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe('what a call acts on, in its options', () => {
  it.each([
    ['awaitJob', () => awaitJob(client, { job: '' })],
    ['awaitJob', () => awaitJob(client, {} as never)],
    ['awaitBatch', () => awaitBatch(client, { batch: 42 } as never)],
    ['getJobSnapshot', () => getJobSnapshot(client, { workflowId: '' })],
    ['cancelJob', () => cancelJob(client, {} as never)],
  ])('%s refuses a missing or empty id, naming its field', async (_name, call) => {
    const error = await refusal(call);
    expect(['job', 'batch', 'workflowId']).toContain(error.field);
  });

  it('readBatchResults refuses a batch that is neither a summary nor an id', async () => {
    const error = await refusal(async () => {
      for await (const _ of readBatchResults(client, { batch: '', store: '/tmp' })) break;
    });
    expect(error.field).toBe('batch');
  });

  it("a watch refuses a bad interval before its first look, naming 'interval'", () => {
    const handle = { workflowId: 'w' } as never;
    expect(() => watchJob(client, { job: handle, interval: 'soon' })).toThrow(ValidationError);
    expect(() => watchJob(client, { job: handle, interval: 'soon' })).toThrow(/^interval: /);
  });
});
