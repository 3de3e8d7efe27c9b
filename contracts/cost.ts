/**
 * Cost estimates. The spec gives no prices and no billing API, so a job's cost is estimated from
 * what the service reports: its `executionTime` times the per-second price of its endpoint's GPU
 * tier (a table the user configures), times the account's `serverlessDiscount.discountFactor`
 * while that discount is in force. What this leaves out (cold starts, idle workers, which the
 * service bills from start to stop) is in the README.
 *
 * The pure part (schemas, `estimateRunCost`) is safe in the workflow bundle; the estimator that
 * reads the account over GraphQL runs in the worker only.
 */
import { z } from 'zod';
import type { Account, GpuId } from '../api/schemas/endpoint';
import { gpuIdSchema } from '../api/schemas/endpoint';

const priceRule = 'must be a finite number >= 0 (price per second of one worker of that tier)';

/** Price per second of one worker, per GPU tier of the spec; tiers left out have no estimate. */
export const priceTableSchema = z.partialRecord(
  gpuIdSchema,
  z.number({ error: priceRule }).finite({ error: priceRule }).min(0, { error: priceRule }),
);
export type PriceTable = z.infer<typeof priceTableSchema>;

export const pricingSchema = z.strictObject({
  /** A label only, e.g. "USD"; the estimate is in the table's unit. */
  currency: z
    .string()
    .min(1, { error: 'must be a non-empty string' })
    .max(16, { error: 'must be at most 16 characters' })
    .default('USD'),
  perSecond: priceTableSchema,
});
export type Pricing = z.infer<typeof pricingSchema>;

/** The estimate carried in a job's result and snapshot. */
export const costEstimateSchema = z.object({
  amount: z.number(),
  currency: z.string(),
  tier: gpuIdSchema,
  /** The executionTime the estimate is for, in seconds (the spec leaves the unit open: ms assumed). */
  seconds: z.number(),
  /** The discount factor applied, when one was in force. */
  discountFactor: z.number().optional(),
});
export type CostEstimate = z.infer<typeof costEstimateSchema>;

/** Estimates are rounded to a millionth, so that a sum never differs from its parts' sum by float noise. */
export function roundCost(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}

export interface Discount {
  /** The price is multiplied by it: 0.8 means 20% off. */
  factor: number;
  /** Epoch ms after which it no longer applies; absent: no end given. */
  expiresAt?: number;
}

/**
 * The discount in force, from the account's `serverlessDiscount`: only a factor in (0, 1] counts
 * (the spec does not give its range, and a factor above 1 or at 0 is more likely a misreading
 * than a price); an unreadable expiration date means no discount rather than a guessed one.
 */
export function discountOf(account: Pick<Account, 'serverlessDiscount'>): Discount | undefined {
  const given = account.serverlessDiscount;
  const factor = given?.discountFactor;
  if (typeof factor !== 'number' || !(factor > 0 && factor <= 1)) return undefined;
  const expiry = given?.expirationDate;
  if (expiry === null || expiry === undefined) return { factor };
  const expiresAt = typeof expiry === 'number' ? expiry : Date.parse(expiry);
  return Number.isFinite(expiresAt) ? { factor, expiresAt } : undefined;
}

/** One run's estimate; undefined when the tier has no price. executionTime in ms. */
export function estimateRunCost(input: {
  executionTimeMs: number;
  tier: GpuId;
  pricing: Pricing;
  discount?: Discount | undefined;
  /** When the run finished (epoch ms): a discount that expired before it does not apply. */
  at: number;
}): CostEstimate | undefined {
  const price = input.pricing.perSecond[input.tier];
  if (price === undefined || !(input.executionTimeMs >= 0)) return undefined;
  const seconds = input.executionTimeMs / 1000;
  const discount =
    input.discount && (input.discount.expiresAt === undefined || input.at <= input.discount.expiresAt)
      ? input.discount
      : undefined;
  const amount = seconds * price * (discount?.factor ?? 1);
  return {
    // Rounded to a millionth of the unit: the float noise of the product says nothing.
    amount: roundCost(amount),
    currency: input.pricing.currency,
    tier: input.tier,
    seconds,
    ...(discount ? { discountFactor: discount.factor } : {}),
  };
}

/**
 * A retried job's estimate: its earlier runs' added to the latest run's (the service reports each
 * run's executionTime as it finishes, before the /retry). Tier, currency and discount: the latest run's.
 */
export function addRunCosts(earlier: CostEstimate | undefined, latest: CostEstimate): CostEstimate {
  if (!earlier) return latest;
  return {
    ...latest,
    amount: roundCost(earlier.amount + latest.amount),
    seconds: earlier.seconds + latest.seconds,
  };
}
