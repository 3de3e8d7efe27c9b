/**
 * Routes alone: the schema and its rules (contracts/route.ts) and the per-item engine's moves from
 * one endpoint to the next (a withdrawal from a starved queue, a capacity failure), with no server.
 */
import { describe, expect, it } from 'vitest';
import {
  endpointWindows,
  isCapacityFailure,
  lacksCapacity,
  requestFor,
  routeSchema,
  singleRoute,
} from '../../contracts/route';
import { decodeItems, encodeItems } from '../../engine/item-carry';
import { stepItem } from '../../engine/item-engine';
import { type ItemRules, queuedItem, type RunningItem } from '../../engine/item-state';
import { queueLookDue } from '../../engine/queue-look';

const rules: ItemRules = {
  retry: { maxRetries: 2, initialInterval: 1_000, backoffCoefficient: 2, on: ['FAILED', 'TIMED_OUT'] },
  onExpired: 'fail',
  onUncertainSubmit: 'fail',
  maxSubmissions: 3,
  maxLeaseResubmits: 2,
  uncertainSubmitWait: 0,
  submitKind: 'run',
  retryGridMs: 1,
  waitGridMs: 1,
  routeLength: 2,
  capacityFailures: ['out of memory'],
};

const running = (extra: Partial<RunningItem> = {}): RunningItem => ({
  phase: 'running',
  index: 3,
  attempts: 1,
  submissions: 1,
  retries: 0,
  jobId: 'job-a',
  status: 'IN_QUEUE',
  submittedAt: 1_000,
  ttlMs: 86_400_000,
  adopted: false,
  aliveAt: 1_200,
  ...extra,
});

describe('the route schema', () => {
  it('fills the defaults and keeps the written order when no price is given', () => {
    const route = routeSchema.parse({ endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }] });
    expect(route.endpoints.map((endpoint) => endpoint.endpointId)).toEqual(['a', 'b']);
    expect(route).toMatchObject({ queueDelayLimit: 60_000, recheckAfter: 60_000, capacityFailures: [] });
    // A single endpoint is a route of one with the same defaults.
    const { endpoints: _endpoints, ...defaults } = route;
    expect(singleRoute('a')).toEqual({ endpoints: [{ endpointId: 'a' }], ...defaults });
  });

  it('puts the cheaper endpoints first when prices are given (unpriced last, ties as written)', () => {
    const route = routeSchema.parse({
      endpoints: [
        { endpointId: 'unpriced' },
        { endpointId: 'dear', pricePerSecond: 0.002 },
        { endpointId: 'cheap', pricePerSecond: 0.001 },
        { endpointId: 'cheap-too', pricePerSecond: 0.001 },
      ],
      queueDelayLimit: '30 seconds',
    });
    expect(route.endpoints.map((endpoint) => endpoint.endpointId)).toEqual([
      'cheap',
      'cheap-too',
      'dear',
      'unpriced',
    ]);
    expect(route.queueDelayLimit).toBe(30_000);
  });

  it.each([
    [{ endpoints: [] }, 'endpoints', 'at least one'],
    [{ endpoints: [{ endpointId: 'a' }, { endpointId: 'a' }] }, 'endpoints', 'twice'],
    [{ endpoints: [{ endpointId: 'a', maxShare: 0 }] }, 'endpoints.0.maxShare', 'above 0'],
    [{ endpoints: [{ endpointId: 'a' }], queueDelayLimit: '1 second' }, 'queueDelayLimit', '5000'],
    [{ endpoints: [{ endpointId: 'a', gpu: 'x' }] }, 'endpoints.0', 'gpu'],
  ])('refuses %j at %s', (raw, field, rule) => {
    const result = routeSchema.safeParse(raw);
    expect(result.success).toBe(false);
    const issue = result.error?.issues[0];
    expect(issue?.path.join('.')).toBe(field);
    expect(JSON.stringify(issue)).toContain(rule);
  });
});

describe('the route rules', () => {
  it("looks at a queued job's endpoint once it waited the limit, then no sooner than half a limit later", () => {
    expect(queueLookDue(1_000, 10_000)).toBe(11_000);
    // A look after the first one falls due half a limit after it.
    expect(queueLookDue(1_000, 10_000, 11_000)).toBe(16_000);
    // A look that came early (the batch's oldest job changed) never brings the next before the limit.
    expect(queueLookDue(1_000, 10_000, 2_000)).toBe(11_000);
  });

  it('gives each endpoint the whole window unless weights or shares split it', () => {
    const plain = routeSchema.parse({ endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }] });
    expect(endpointWindows(plain, 400)).toEqual([400, 400]);
    const weighted = routeSchema.parse({
      endpoints: [{ endpointId: 'a', weight: 3 }, { endpointId: 'b' }, { endpointId: 'c', maxShare: 0.1 }],
    });
    expect(endpointWindows(weighted, 500)).toEqual([300, 100, 50]);
    expect(endpointWindows(weighted, 1)).toEqual([1, 1, 1]);
  });

  it("caps an endpoint's window at its workers and a quarter more, when its worker count is known", () => {
    const plain = routeSchema.parse({
      endpoints: [{ endpointId: 'a' }, { endpointId: 'b' }, { endpointId: 'c' }],
    });
    expect(endpointWindows(plain, 400, [100, undefined, 0])).toEqual([125, 400, 1]);
    const shared = routeSchema.parse({
      endpoints: [{ endpointId: 'a', maxShare: 0.1 }, { endpointId: 'b' }],
    });
    expect(endpointWindows(shared, 400, [1_000, 3])).toEqual([40, 4]);
  });

  it('matches capacity failures case-insensitively and only when patterns are given', () => {
    expect(isCapacityFailure('CUDA error: Out Of Memory (16 GB)', ['out of memory'])).toBe(true);
    expect(isCapacityFailure('ValueError: bad input', ['out of memory'])).toBe(false);
    expect(isCapacityFailure(undefined, ['out of memory'])).toBe(false);
    expect(isCapacityFailure('out of memory', [])).toBe(false);
  });

  it('reads no idle worker as no capacity', () => {
    expect(lacksCapacity({ idle: 0, running: 3, inQueue: 40 })).toBe(true);
    expect(lacksCapacity({ idle: 1, running: 3, inQueue: 40 })).toBe(false);
  });

  it("sets an endpoint's input overrides over the job's input", () => {
    const endpoint = { endpointId: 'b', inputOverrides: { precision: 'fp16' } };
    expect(requestFor({ input: { prompt: 'x', precision: 'fp32' } }, endpoint)).toEqual({
      input: { prompt: 'x', precision: 'fp16' },
    });
    expect(requestFor({ input: { prompt: 'x' } }, { endpointId: 'a' })).toEqual({ input: { prompt: 'x' } });
  });
});

describe('the engine on a route', () => {
  it('a withdrawal confirmed never started queues the item for the next endpoint, with the hop counted', () => {
    const step = stepItem(running(), { kind: 'withdrawn', outcome: 'withdrawn', now: 70_000 }, rules);
    expect(step.item).toMatchObject({ phase: 'queued', endpoint: 1, hops: 1, attempts: 1, submissions: 1 });
    expect(step.counts).toEqual(['hop']);
    expect(step.commands).toEqual([]);
  });

  it('a job seen started before any cancel stays where it is', () => {
    const step = stepItem(running(), { kind: 'withdrawn', outcome: 'started', now: 70_000 }, rules);
    expect(step.item).toMatchObject({ phase: 'running', jobId: 'job-a', status: 'IN_PROGRESS' });
    expect(step.item).not.toHaveProperty('endpoint');
    expect(step.counts).toEqual([]);
  });

  it('a submit after a hop puts the job on the endpoint it went to', () => {
    const queued = stepItem(running(), { kind: 'withdrawn', outcome: 'withdrawn', now: 70_000 }, rules).item;
    const step = stepItem(
      queued,
      { kind: 'submitted', jobId: 'job-b', ttlMs: 86_400_000, sentAt: 71_000, answeredAt: 71_100 },
      rules,
    );
    expect(step.item).toMatchObject({ phase: 'running', jobId: 'job-b', endpoint: 1, hops: 1, attempts: 2 });
  });

  it('a batch may place a submit elsewhere than the item asked', () => {
    const step = stepItem(
      queuedItem(3),
      { kind: 'submitted', jobId: 'job-c', ttlMs: 60_000, sentAt: 1, answeredAt: 2, endpoint: 1 },
      rules,
    );
    expect(step.item).toMatchObject({ endpoint: 1 });
  });

  it('a capacity failure moves to the next endpoint instead of a retry on the same one', () => {
    const step = stepItem(
      running({ status: 'IN_PROGRESS' }),
      { kind: 'finished', status: 'FAILED', now: 9_000, error: 'CUDA out of memory', cost: 0.5 },
      rules,
    );
    expect(step.item).toMatchObject({ phase: 'queued', endpoint: 1, hops: 1, cost: 0.5 });
    expect(step.counts).toEqual(['hop']);
  });

  it('a capacity failure on the last endpoint is retried there by the retry rules', () => {
    const step = stepItem(
      running({ status: 'IN_PROGRESS', endpoint: 1, hops: 1 }),
      { kind: 'finished', status: 'FAILED', now: 9_000, error: 'CUDA out of memory' },
      rules,
    );
    expect(step.item).toMatchObject({ phase: 'retry-due', endpoint: 1 });
  });

  it('any other failure is retried on the same endpoint', () => {
    const step = stepItem(
      running({ status: 'IN_PROGRESS' }),
      { kind: 'finished', status: 'FAILED', now: 9_000, error: 'ValueError' },
      rules,
    );
    expect(step.item).toMatchObject({ phase: 'retry-due' });
    expect(step.item).not.toHaveProperty('endpoint');
  });

  it('an ended item says where it ran', () => {
    const step = stepItem(
      running({ status: 'IN_PROGRESS', endpoint: 1, hops: 1 }),
      { kind: 'finished', status: 'COMPLETED', now: 9_000 },
      rules,
    );
    expect(step.item).toMatchObject({ phase: 'ended', outcome: 'completed', endpoint: 1, hops: 1 });
  });

  it('carries the endpoint and hops through continue-as-new', () => {
    const items = [running({ endpoint: 1, hops: 2 }), { ...queuedItem(4), endpoint: 1, hops: 1 }, running()];
    expect(decodeItems(encodeItems(items))).toEqual(items);
  });
});
