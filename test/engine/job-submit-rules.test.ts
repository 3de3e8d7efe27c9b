/** What a failed submit's try says (engine/job-submit-rules.ts): a table, no server. */
import { describe, expect, it } from 'vitest';
import { submitFailureKind } from '../../engine/job-submit-rules';

const timeout = (facts: Record<string, unknown>) =>
  ({ source: 'timeout', type: 'ActivityTimeout', facts, retryable: false }) as const;
const application = (type: string, facts: Record<string, unknown> = {}, retryable = false) =>
  ({ source: 'application', type, facts, retryable }) as const;

describe('submitFailureKind', () => {
  it.each([
    ['a timeout before any beat: nothing went out', timeout({}), { kind: 'rejected', retryable: true }],
    [
      'a timeout after the sending beat: uncertain, with the lease and webhook the request carried',
      timeout({ sending: true, webhookArmed: true, leaseTtlMs: 10_000 }),
      { kind: 'uncertain', reported: { webhookArmed: true, leaseTtlMs: 10_000 } },
    ],
    [
      "a timeout after the beat that recorded the job's id: that job, under its lease",
      timeout({ sending: true, webhookArmed: true, leaseTtlMs: 10_000, jobId: 'job-1' }),
      { kind: 'made', jobId: 'job-1', leaseTtlMs: 10_000 },
    ],
    [
      'a job recorded without a lease',
      timeout({ sending: true, webhookArmed: false, jobId: 'job-2' }),
      { kind: 'made', jobId: 'job-2' },
    ],
    ['an empty id is no job', timeout({ sending: true, jobId: '' }), { kind: 'uncertain', reported: {} }],
    ['SubmitNotSent', application('SubmitNotSent', {}, true), { kind: 'rejected', retryable: true }],
    [
      "SubmitUncertain: the activity's own word, whatever its facts",
      application('SubmitUncertain', { webhookArmed: false, jobId: 'job-3' }),
      { kind: 'uncertain', reported: { webhookArmed: false } },
    ],
    [
      'a certain refusal keeps its retryability',
      application('Aborted', {}, true),
      { kind: 'rejected', retryable: true },
    ],
    ['a bad request', application('BadRequest'), { kind: 'rejected', retryable: false }],
  ])('%s', (_name, failure, expected) => {
    expect(submitFailureKind(failure)).toEqual(expected);
  });
});
