/** Tags on a start: the rule every start and filter checks, and the queries that select by them. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { parseTags } from '../../client/cli-input';
import { jobListQuery, startJob } from '../../client/jobs';
import { batchListQuery } from '../../client/visibility-queries';
import { tagAttributes } from '../../contracts/tags';

describe('tags', () => {
  it('become the ServerlessTags keyword list; no tags set nothing', () => {
    expect(tagAttributes(['nightly', 'team:vision'])).toEqual([
      {
        key: expect.objectContaining({ name: 'ServerlessTags', type: 'KEYWORD_LIST' }),
        value: ['nightly', 'team:vision'],
      },
    ]);
    expect(tagAttributes(undefined)).toEqual([]);
    expect(tagAttributes([])).toEqual([]);
  });

  it('select jobs and batches by one tag', () => {
    expect(jobListQuery({ tag: 'nightly', endpointId: 'ep-1' })).toBe(
      'WorkflowType = "serverlessJob" AND ServerlessEndpointId = "ep-1" AND ServerlessTags = "nightly"',
    );
    expect(batchListQuery({ tag: 'run-42' })).toBe(
      'WorkflowType = "serverlessBatch" AND ServerlessTags = "run-42"',
    );
  });

  it.each([
    [['has space'], /options\.tags\.0: must be 1 to 64 letters/],
    [['a"b'], /options\.tags\.0: must be 1 to 64/],
    [['x'.repeat(65)], /options\.tags\.0: must be 1 to 64/],
    [Array.from({ length: 11 }, (_, index) => `t${index}`), /options\.tags: must hold at most 10 tags/],
    [['a', 'a'], /options\.tags: must not repeat a tag/],
  ])('startJob refuses tags %j before anything is sent, naming the field', async (tags, rule) => {
    const client = new Proxy({}, { get: () => expect.unreachable('nothing is sent') }) as never;
    const error = await startJob(
      client,
      { endpointId: 'ep-1', request: { input: {} } },
      { workflowId: 'w', tags },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(rule);
  });

  it('the CLI reads --tags a,b and names the flag in its errors', () => {
    expect(parseTags('--tags', 'nightly, team:vision')).toEqual(['nightly', 'team:vision']);
    expect(() => parseTags('--tags', 'a,,b')).toThrow(/^--tags: must be 1 to 64/);
    expect(() => parseTags('--tag', 'a b')).toThrow(ValidationError);
  });
});
