import { describe, expect, it } from 'vitest';
import {
  accountSchema,
  endpointSchema,
  healthResponseSchema,
  isTerminalStatus,
  JOB_LIMITS,
  jobPolicySchema,
  jobRequestSchema,
  jobStatusSchema,
  networkVolumeIdSchema,
  restCreateEndpointSchema,
  saveEndpointInputSchema,
  streamResponseSchema,
  terminalStatuses,
} from '../../api';

describe('job request', () => {
  it('fills the policy defaults of the spec', () => {
    expect(jobPolicySchema.parse({})).toEqual({
      executionTimeout: 600_000,
      lowPriority: false,
      ttl: 86_400_000,
    });
  });

  it.each([
    ['executionTimeout', JOB_LIMITS.executionTimeoutMinMs, JOB_LIMITS.executionTimeoutMaxMs],
    ['ttl', JOB_LIMITS.ttlMinMs, JOB_LIMITS.ttlMaxMs],
  ])('bounds %s to [%d, %d] ms, integers only', (field, min, max) => {
    expect(jobPolicySchema.safeParse({ [field]: min }).success).toBe(true);
    expect(jobPolicySchema.safeParse({ [field]: max }).success).toBe(true);
    for (const bad of [min - 1, max + 1, min + 0.5, '6000']) {
      const result = jobPolicySchema.safeParse({ [field]: bad });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.path).toEqual([field]);
    }
  });

  it('states the bounds it knows: 5 s and 7 days, 10 s and 7 days', () => {
    expect(JOB_LIMITS.executionTimeoutMinMs).toBe(5_000);
    expect(JOB_LIMITS.ttlMinMs).toBe(10_000);
    expect(JOB_LIMITS.ttlMaxMs).toBe(7 * 24 * 3600 * 1000);
    expect(JOB_LIMITS.executionTimeoutMaxMs).toBe(JOB_LIMITS.ttlMaxMs);
  });

  it('is strict where the spec is exact', () => {
    expect(jobRequestSchema.safeParse({ input: {}, extra: 1 }).success).toBe(false);
    expect(jobRequestSchema.safeParse({ input: [] }).success).toBe(false);
    expect(jobRequestSchema.safeParse({}).success).toBe(false);
    expect(jobRequestSchema.safeParse({ input: {}, webhook: 'not a url' }).success).toBe(false);
    expect(jobRequestSchema.safeParse({ input: {}, webhook: 'ftp://hooks.test/x' }).success).toBe(false);
    expect(jobRequestSchema.safeParse({ input: {}, policy: { ttl: 20_000, other: 1 } }).success).toBe(false);
    expect(
      jobRequestSchema.safeParse({
        input: {},
        s3Config: { accessId: 'a', accessSecret: 'b', bucketName: 'c' },
      }).success,
    ).toBe(false);
    expect(
      jobRequestSchema.safeParse({
        input: { prompt: 'x' },
        webhook: 'https://hooks.test/x',
        policy: { lowPriority: true },
        s3Config: { accessId: 'a', accessSecret: 'b', bucketName: 'c', endpointUrl: 'https://s3.test' },
      }).success,
    ).toBe(true);
  });
});

describe('job responses', () => {
  it('keeps keys the spec does not name and turns a non-string error into text', () => {
    const parsed = jobStatusSchema.parse({
      id: 'j1',
      status: 'FAILED',
      delayTime: 1,
      executionTime: 2,
      error: { type: 'ValueError' },
      workerId: 'w1',
    });
    expect(parsed.error).toBe('{"type":"ValueError"}');
    expect(parsed.workerId).toBe('w1');
  });

  it('refuses a status outside the six states', () => {
    expect(jobStatusSchema.safeParse({ id: 'j1', status: 'DONE' }).success).toBe(false);
  });

  it('knows the terminal states', () => {
    expect([...terminalStatuses].sort()).toEqual(['CANCELLED', 'COMPLETED', 'FAILED', 'TIMED_OUT']);
    expect(isTerminalStatus('IN_PROGRESS')).toBe(false);
    expect(isTerminalStatus('TIMED_OUT')).toBe(true);
  });

  it('reads the stream as a bare array and as a { status, stream } object', () => {
    const chunk = { output: { text: ['a'] }, metrics: { stream_index: 0, scenario: 'stream', extra: 1 } };
    expect(streamResponseSchema.parse([chunk])).toEqual({ chunks: [chunk] });
    expect(streamResponseSchema.parse({ status: 'IN_PROGRESS', stream: [chunk] })).toEqual({
      status: 'IN_PROGRESS',
      chunks: [chunk],
    });
    expect(streamResponseSchema.parse({ status: 'COMPLETED' })).toEqual({ status: 'COMPLETED', chunks: [] });
    expect(streamResponseSchema.safeParse({}).success).toBe(false);
    expect(streamResponseSchema.safeParse([{ output: 'x', metrics: { stream_index: 1.5 } }]).success).toBe(
      false,
    );
  });

  it('keeps extra worker counters in health', () => {
    const health = healthResponseSchema.parse({
      jobs: { completed: 1, failed: 0, inProgress: 0, inQueue: 0, retried: 0 },
      workers: { idle: 1, running: 0, throttled: 2 },
    });
    expect(health.workers.throttled).toBe(2);
    expect(healthResponseSchema.safeParse({ jobs: {}, workers: { idle: 1, running: 0 } }).success).toBe(
      false,
    );
  });
});

describe('endpoints', () => {
  const base = { name: 'n', templateId: 't', gpuIds: 'AMPERE_16' };

  it('defaults the type to QB and checks the tiers, locations and workers', () => {
    expect(saveEndpointInputSchema.parse(base).type).toBe('QB');
    expect(saveEndpointInputSchema.safeParse({ ...base, gpuIds: 'AMPERE_15' }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, locations: 'US,FR' }).success).toBe(true);
    expect(saveEndpointInputSchema.safeParse({ ...base, locations: '' }).success).toBe(true);
    expect(saveEndpointInputSchema.safeParse({ ...base, locations: 'US,XX' }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, type: 'XB' }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, scalerType: 'CPU' }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, flashBootType: 'OFF' }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, workersMin: 2, workersMax: 1 }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, workersMax: 2 ** 31 }).success).toBe(false);
    expect(saveEndpointInputSchema.safeParse({ ...base, colour: 'red' }).success).toBe(false);
  });

  it('reads endpoints and the account leniently where the spec does not show values', () => {
    const endpoint = endpointSchema.parse({
      ...base,
      id: 'e1',
      flashBootType: 'SOMETHING_NEW',
      idleTimeout: null,
      pods: [{ desiredStatus: 'EXITED', podId: 'p' }],
    });
    expect(endpoint.pods?.[0]?.podId).toBe('p');
    expect(accountSchema.parse({ endpoints: [], serverlessDiscount: null }).serverlessDiscount).toBeNull();
  });

  it('keeps the REST gpuTypeIds in their priority order', () => {
    const body = restCreateEndpointSchema.parse({ name: 'n', templateId: 't', gpuTypeIds: ['B', 'A', 'C'] });
    expect(body.gpuTypeIds).toEqual(['B', 'A', 'C']);
    expect(restCreateEndpointSchema.safeParse({ name: 'n', templateId: 't', gpuTypeIds: [] }).success).toBe(
      false,
    );
  });

  it.each(['', '.', '..', 'a/b', 'a\\b', '\uD800'])('refuses %j as a network volume id', (id) => {
    expect(networkVolumeIdSchema.safeParse(id).success).toBe(false);
  });
});
