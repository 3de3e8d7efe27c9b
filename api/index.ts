// The public surface of the client; modules not listed here are its internals.
export { DEFAULT_RETRY_429, type Retry429Policy, retry429Schema } from './backoff';
export * from './client';
export * from './config';
export {
  ConfigError,
  ServiceError,
  type ServiceErrorInit,
  type ServiceErrorKind,
  ValidationError,
} from './errors';
export { jobRequestBody } from './jobs';
export {
  BATCH_ITEM_OUTCOMES,
  type BatchItemOutcome,
  type CallOutcome,
  type LibraryMetrics,
  noopMetrics,
  type RouteHopReason,
  type RouteWithdrawalOutcome,
  type SubmitOutcome,
  type WebhookVerdict,
} from './metrics';
export {
  DEFAULT_RATE_LIMITS,
  type JobOperation,
  jobOperationSchema,
  type RateLimit,
  type RateLimits,
  type RequestPriority,
  rateLimitSchema,
  rateLimitsSchema,
} from './rate-limit';
export * from './schemas/endpoint';
export * from './schemas/job';
export { pathSegmentSchema } from './schemas/path-segment';
