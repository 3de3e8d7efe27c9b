/**
 * The worker's side of cost estimates: which tier an endpoint runs and which discount is in force
 * come from GraphQL `myself`, read once and kept for `cacheMs` (an endpoint created since is read
 * again at once). A failed read costs the job its estimate, never its result.
 */
import type { z } from 'zod';
import type { ServiceClient } from '../api/client';
import { ConfigError } from '../api/errors';
import type { Account, GpuId } from '../api/schemas/endpoint';
import {
  type CostEstimate,
  type Discount,
  discountOf,
  estimateRunCost,
  type Pricing,
  pricingSchema,
} from '../contracts/cost';

export type EstimateCost = (endpointId: string, executionTimeMs: number) => Promise<CostEstimate | undefined>;

export interface CostEstimatorOptions {
  client: Pick<ServiceClient, 'endpoints'>;
  /** Checked here: a table built in code never went through SERVERLESS_PRICES's parse. */
  pricing: z.input<typeof pricingSchema>;
  /** How long the account's endpoints and discount are reused (default 5 minutes). */
  cacheMs?: number;
  now?: () => number;
}

interface Known {
  at: number;
  tiers: Map<string, GpuId>;
  discount: Discount | undefined;
}

/**
 * A price table as pricingSchema reads it; a bad one is a ConfigError naming the field under
 * `root` (`pricing.perSecond.AMPERE_16`) and the rule, never quoting the value.
 */
export function parsePricing(value: unknown, root = 'pricing'): Pricing {
  const result = pricingSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = [root, ...(issue?.path.map(String) ?? [])].join('.');
  const rule =
    issue?.code === 'unrecognized_keys'
      ? `has unknown keys ${issue.keys.join(', ')} (allowed: ${issue.path.length === 0 ? 'currency, perSecond' : 'the GPU tiers of the spec'})`
      : (issue?.message ?? 'is invalid');
  throw new ConfigError(where, rule);
}

export function createCostEstimator(options: CostEstimatorOptions): EstimateCost {
  const pricing = parsePricing(options.pricing);
  const cacheMs = options.cacheMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  let known: Known | undefined;
  let reading: Promise<Known> | undefined;

  const read = (): Promise<Known> => {
    reading ??= options.client.endpoints
      .account()
      .then((account: Account) => {
        known = {
          at: now(),
          tiers: new Map(account.endpoints.map((endpoint) => [endpoint.id, endpoint.gpuIds])),
          discount: discountOf(account),
        };
        return known;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };

  return async (endpointId, executionTimeMs) => {
    let account = known && now() - known.at < cacheMs ? known : undefined;
    if (!account?.tiers.has(endpointId)) {
      try {
        account = await read();
      } catch {
        return undefined;
      }
    }
    const tier = account.tiers.get(endpointId);
    if (!tier) return undefined;
    return estimateRunCost({
      executionTimeMs,
      tier,
      pricing,
      discount: account.discount,
      at: now(),
    });
  };
}
