/**
 * startPipeline refuses what the workflow would refuse before anything starts: a ValidationError
 * naming the field and the rule (the client is never called).
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { type PipelineInput, setPipelineConcurrency, startPipeline } from '../../client/pipelines';
import { stageConcurrencyIssue } from '../../contracts/pipeline-input';

/** A client that fails the test if anything reaches it. */
const untouched = new Proxy({} as Client, {
  get() {
    throw new Error('the client was called');
  },
});

const valid: PipelineInput = {
  items: { inline: [{ input: { text: 'hello' } }] },
  stages: [
    { name: 'transcribe', endpointId: 'ep-a' },
    { name: 'translate', endpointId: 'ep-b', map: { 'input.text': '$.previous.output.text' } },
  ],
};

async function refusal(input: unknown, options = { workflowId: 'p-1' }) {
  const error = await startPipeline(untouched, input as PipelineInput, options).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationError);
  const { field, rule } = error as ValidationError;
  return { field, rule };
}

describe('startPipeline', () => {
  it('names the field and the rule of a bad stage, map or item before anything starts', async () => {
    const [first, second] = valid.stages as [PipelineInput['stages'][0], PipelineInput['stages'][0]];
    expect(
      await refusal({ ...valid, stages: [first, { ...second, map: { 'input.text': '$.output.text' } }] }),
    ).toMatchObject({ field: 'stages.1.map.input.text' });
    expect(await refusal({ ...valid, stages: [first, { ...second, map: undefined }] })).toEqual({
      field: 'stages.1.map',
      rule: 'exactly one of map and transform is required after the first stage',
    });
    expect(await refusal({ ...valid, stages: [first, { ...second, name: 'transcribe' }] })).toEqual({
      field: 'stages.1.name',
      rule: 'must be unique: "transcribe" names an earlier stage',
    });
    expect((await refusal({ ...valid, items: { inline: [{ input: 'text' }] } })).field).toMatch(/^items/);
    expect((await refusal(valid, { workflowId: '' })).field).toBe('options.workflowId');
  });

  it("checks a stage's new maxConcurrency: here its shape, in the workflow the stage and the sum", async () => {
    await expect(
      setPipelineConcurrency(untouched, { pipeline: 'p-1', stage: 'translate', maxConcurrency: 0 }),
    ).rejects.toMatchObject({ field: 'maxConcurrency', rule: 'must be a whole number from 1 to 10000' });
    const stages = [
      { name: 'transcribe', maxConcurrency: 6_000 },
      { name: 'translate', maxConcurrency: 100 },
    ];
    expect(stageConcurrencyIssue({ stage: 'translate', maxConcurrency: 4_000 }, stages)).toBeUndefined();
    expect(stageConcurrencyIssue({ stage: 'translate', maxConcurrency: 4_001 }, stages)).toEqual({
      field: 'maxConcurrency',
      rule: "the stages' maxConcurrency together must be at most 10000 (10001)",
    });
    expect(stageConcurrencyIssue({ stage: 'speak', maxConcurrency: 1 }, stages)?.rule).toBe(
      'names no stage of the pipeline (transcribe, translate)',
    );
  });
});
