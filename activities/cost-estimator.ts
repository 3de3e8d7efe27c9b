/**
 * The worker's side of cost estimates: which tier an endpoint runs and which discount is in force
 * come from GraphQL `myself`, read once and kept for `cacheMs` (an endpoint created since is read
 * again at once). A failed read costs the job its estimate, never its result.
 */
import type { ServiceClient } from '../api/client';
import type { Account, GpuId } from '../api/schemas/endpoint';
import { type CostEstimate, type Discount, discountOf, estimateRunCost, type Pricing } from './cost';

export type EstimateCost = (endpointId: string, executionTimeMs: number) => Promise<CostEstimate | undefined>;

export interface CostEstimatorOptions {
  client: Pick<ServiceClient, 'endpoints'>;
  pricing: Pricing;
  /** How long the account's endpoints and discount are reused (default 5 minutes). */
  cacheMs?: number;
  now?: () => number;
}

interface Known {
  at: number;
  tiers: Map<string, GpuId>;
  discount: Discount | undefined;
}

export function createCostEstimator(options: CostEstimatorOptions): EstimateCost {
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
      pricing: options.pricing,
      discount: account.discount,
      at: now(),
    });
  };
}
