import { describe, expect, it } from 'vitest';
import { createCostEstimator } from '../../activities/cost-estimator';
import { ConfigError } from '../../api/errors';
import type { Account } from '../../api/schemas/endpoint';
import { discountOf, estimateRunCost, pricingSchema } from '../../contracts/cost';
import { loadObservabilityConfig } from '../../worker/config';

const pricing = pricingSchema.parse({ perSecond: { AMPERE_16: 0.0002, AMPERE_80: 0.002 } });
const AT = Date.parse('2026-06-01T00:00:00Z');

describe('estimateRunCost', () => {
  it('is executionTime (ms) x the tier price per second', () => {
    expect(estimateRunCost({ executionTimeMs: 90_000, tier: 'AMPERE_16', pricing, at: AT })).toEqual({
      amount: 0.018,
      currency: 'USD',
      tier: 'AMPERE_16',
      seconds: 90,
    });
    expect(estimateRunCost({ executionTimeMs: 1_500, tier: 'AMPERE_80', pricing, at: AT })?.amount).toBe(
      0.003,
    );
    expect(estimateRunCost({ executionTimeMs: 0, tier: 'AMPERE_80', pricing, at: AT })?.amount).toBe(0);
  });

  it('has no estimate for a tier without a price', () => {
    expect(estimateRunCost({ executionTimeMs: 1_000, tier: 'ADA_24', pricing, at: AT })).toBeUndefined();
  });

  it('applies a discount in force, not one that expired before the run finished', () => {
    const discount = { factor: 0.75, expiresAt: AT + 1 };
    expect(
      estimateRunCost({ executionTimeMs: 100_000, tier: 'AMPERE_80', pricing, discount, at: AT }),
    ).toEqual({
      amount: 0.15,
      currency: 'USD',
      tier: 'AMPERE_80',
      seconds: 100,
      discountFactor: 0.75,
    });
    const late = estimateRunCost({
      executionTimeMs: 100_000,
      tier: 'AMPERE_80',
      pricing,
      discount,
      at: AT + 2,
    });
    expect(late).toEqual({ amount: 0.2, currency: 'USD', tier: 'AMPERE_80', seconds: 100 });
  });
});

describe('discountOf (serverlessDiscount of GraphQL myself)', () => {
  it('reads the factor and the expiration date', () => {
    expect(
      discountOf({
        serverlessDiscount: { discountFactor: 0.9, type: 'X', expirationDate: '2026-06-01T00:00:00Z' },
      }),
    ).toEqual({ factor: 0.9, expiresAt: AT });
    expect(discountOf({ serverlessDiscount: { discountFactor: 0.5 } })).toEqual({ factor: 0.5 });
  });

  it('ignores no discount, a factor outside (0, 1] and an unreadable date', () => {
    expect(discountOf({ serverlessDiscount: null })).toBeUndefined();
    expect(discountOf({ serverlessDiscount: { discountFactor: null } })).toBeUndefined();
    expect(discountOf({ serverlessDiscount: { discountFactor: 1.2 } })).toBeUndefined();
    expect(discountOf({ serverlessDiscount: { discountFactor: 0 } })).toBeUndefined();
    expect(
      discountOf({ serverlessDiscount: { discountFactor: 0.5, expirationDate: 'soon' } }),
    ).toBeUndefined();
  });
});

describe('createCostEstimator', () => {
  function accountWith(endpoints: Array<{ id: string; gpuIds: 'AMPERE_16' | 'AMPERE_80' }>, factor?: number) {
    return {
      endpoints: endpoints.map((e) => ({ ...e, name: e.id, templateId: 't' })),
      serverlessDiscount: factor === undefined ? null : { discountFactor: factor },
    } as Account;
  }

  it('reads myself once, caches it, and reads again for an endpoint it does not know', async () => {
    let reads = 0;
    let account = accountWith([{ id: 'e1', gpuIds: 'AMPERE_16' }], 0.5);
    const estimate = createCostEstimator({
      client: {
        endpoints: {
          account: async () => {
            reads++;
            return account;
          },
        },
      } as never,
      pricing,
    });
    expect(await estimate('e1', 10_000)).toMatchObject({ amount: 0.001, discountFactor: 0.5 });
    expect(await estimate('e1', 20_000)).toMatchObject({ amount: 0.002 });
    expect(reads).toBe(1);
    account = accountWith([
      { id: 'e1', gpuIds: 'AMPERE_16' },
      { id: 'e2', gpuIds: 'AMPERE_80' },
    ]);
    expect(await estimate('e2', 1_000)).toEqual({
      amount: 0.002,
      currency: 'USD',
      tier: 'AMPERE_80',
      seconds: 1,
    });
    expect(reads).toBe(2);
    expect(await estimate('gone', 1_000)).toBeUndefined();
  });

  it('checks a price table built in code: a bad one fails at creation, naming the field', async () => {
    const client = {
      endpoints: { account: async () => accountWith([{ id: 'e1', gpuIds: 'AMPERE_16' }]) },
    } as never;
    const create = (table: unknown) => () =>
      createCostEstimator({ client, pricing: table as Parameters<typeof createCostEstimator>[0]['pricing'] });
    expect(create({ perSecond: { AMPERE_16: -0.1 } })).toThrow(ConfigError);
    expect(create({ perSecond: { AMPERE_16: -0.1 } })).toThrow(
      /^pricing\.perSecond\.AMPERE_16: must be a finite number >= 0/,
    );
    expect(create({ perSecond: { AMPERE_16: Number.NaN } })).toThrow(/^pricing\.perSecond\.AMPERE_16: /);
    expect(create({ perSecond: { NOT_A_TIER: 1 } })).toThrow(
      /^pricing\.perSecond: has unknown keys NOT_A_TIER \(allowed: the GPU tiers/,
    );
    expect(create({ currency: '', perSecond: {} })).toThrow(/^pricing\.currency: must be a non-empty string/);
    expect(create({ perSecond: {}, rate: 1 })).toThrow(/^pricing: has unknown keys rate/);
    // A good one gets the schema's defaults (the currency), as SERVERLESS_PRICES does.
    const estimate = create({ perSecond: { AMPERE_16: 0.5 } })();
    expect(await estimate('e1', 2_000)).toEqual({
      amount: 1,
      currency: 'USD',
      tier: 'AMPERE_16',
      seconds: 2,
    });
  });

  it('re-reads after cacheMs, and a failed read costs the estimate only', async () => {
    let now = 0;
    let fail = false;
    let reads = 0;
    const estimate = createCostEstimator({
      client: {
        endpoints: {
          account: async () => {
            reads++;
            if (fail) throw new Error('down');
            return accountWith([{ id: 'e1', gpuIds: 'AMPERE_16' }]);
          },
        },
      } as never,
      pricing,
      cacheMs: 1_000,
      now: () => now,
    });
    expect(await estimate('e1', 1_000)).toBeDefined();
    now = 1_001;
    fail = true;
    expect(await estimate('e1', 1_000)).toBeUndefined();
    expect(reads).toBe(2);
  });
});

describe('SERVERLESS_PRICES and the metrics variables', () => {
  it('parses a price table and the listeners', () => {
    expect(
      loadObservabilityConfig({
        SERVERLESS_PRICES: '{"currency":"EUR","perSecond":{"ADA_24":0.0003}}',
        WORKER_METRICS_PORT: '0',
        TEMPORAL_METRICS_BIND: '0.0.0.0:9000',
      }),
    ).toEqual({
      pricing: { currency: 'EUR', perSecond: { ADA_24: 0.0003 } },
      metrics: { port: 0, host: '127.0.0.1' },
      temporalMetricsBind: '0.0.0.0:9000',
    });
    expect(loadObservabilityConfig({})).toEqual({});
  });

  it.each([
    [
      '{"perSecond":{"AMPERE_16":-1}}',
      'SERVERLESS_PRICES.perSecond.AMPERE_16',
      'must be a finite number >= 0',
    ],
    ['{"perSecond":{"H100":1}}', 'SERVERLESS_PRICES.perSecond', ''],
    ['{"perSecond":{},"tax":1}', 'SERVERLESS_PRICES', 'unknown keys tax'],
    ['not json', 'SERVERLESS_PRICES', 'must be JSON'],
  ])('names the field and the rule for %s', (value, field, rule) => {
    let error: unknown;
    try {
      loadObservabilityConfig({ SERVERLESS_PRICES: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(field);
    expect((error as Error).message).toContain(rule);
  });

  it('refuses a bad port or bind address', () => {
    expect(() => loadObservabilityConfig({ WORKER_METRICS_PORT: '70000' })).toThrow(
      /WORKER_METRICS_PORT.*integer port/,
    );
    expect(() => loadObservabilityConfig({ TEMPORAL_METRICS_BIND: 'nowhere' })).toThrow(
      /TEMPORAL_METRICS_BIND.*host:port/,
    );
  });
});
