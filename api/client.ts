import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import { DEFAULT_RETRY_429, type Retry429Policy, retry429Schema } from './backoff';
import { parseServiceConfig, type ServiceConfigInput } from './config';
import { ConfigError } from './errors';
import { createEndpointOperations } from './graphql';
import { createDispatcher, createTransport } from './http';
import { type CallOptions, createJobOperations } from './jobs';
import type { LibraryMetrics } from './metrics';
import {
  createRateLimiter,
  effectiveRateLimits,
  type JobOperation,
  type RateLimit,
  type RateLimits,
  rateLimitsSchema,
} from './rate-limit';
import { createRestOperations } from './rest';
import type {
  Account,
  Endpoint,
  RestCreateEndpointInput,
  RestEndpoint,
  SaveEndpointInput,
} from './schemas/endpoint';
import type {
  HealthResponse,
  JobRequestInput,
  JobStatus,
  JobSubmitted,
  PurgeResponse,
  StreamResponse,
} from './schemas/job';

export type { CallOptions } from './jobs';

export interface ServiceClientOptions {
  /** Per-operation overrides of the spec's limits (each replaces that operation's default), or false for none. */
  rateLimits?: RateLimits;
  /** Budget for retrying 429s; maxRetries 0 turns it off. */
  retry429?: Retry429Policy;
  /** A dispatcher of your own (it is not closed by close()); by default one keep-alive Agent per client. */
  dispatcher?: Dispatcher;
  /** Counts calls, outcomes and 429 delays (worker/metrics.ts); default: nothing is counted. */
  metrics?: LibraryMetrics;
}

export interface ServiceClient {
  jobs: {
    run(endpointId: string, request: JobRequestInput, options?: CallOptions): Promise<JobSubmitted>;
    runSync(
      endpointId: string,
      request: JobRequestInput,
      options?: CallOptions & { wait?: number },
    ): Promise<JobStatus>;
    /**
     * `ttl` sets the job's time to live (ahead of other looks in the rate limiter); `urgent` goes
     * there too (a look that holds more than itself while it waits, such as a workflow task);
     * `background` waits behind every other /status in the rate limiter (a look that only backs up
     * another).
     */
    status(
      endpointId: string,
      jobId: string,
      options?: CallOptions & { ttl?: number; background?: boolean; urgent?: boolean },
    ): Promise<JobStatus>;
    stream(endpointId: string, jobId: string, options?: CallOptions): Promise<StreamResponse>;
    cancel(endpointId: string, jobId: string, options?: CallOptions): Promise<JobSubmitted>;
    retry(endpointId: string, jobId: string, options?: CallOptions): Promise<JobSubmitted>;
    purgeQueue(endpointId: string, options?: CallOptions): Promise<PurgeResponse>;
    health(endpointId: string, options?: CallOptions): Promise<HealthResponse>;
  };
  endpoints: {
    save(input: SaveEndpointInput, options?: CallOptions): Promise<Endpoint>;
    list(options?: CallOptions): Promise<Endpoint[]>;
    account(options?: CallOptions): Promise<Account>;
    delete(id: string, options?: CallOptions): Promise<void>;
  };
  rest: {
    createEndpoint(body: RestCreateEndpointInput, options?: CallOptions): Promise<RestEndpoint>;
    deleteNetworkVolume(networkVolumeId: string, options?: CallOptions): Promise<void>;
  };
  /**
   * The limit this client keeps to for one operation on each endpoint (the service's, or the
   * override), undefined for none: a batch holds its /run limit across workers with it.
   */
  rateLimit(operation: JobOperation): RateLimit | undefined;
  close(): Promise<void>;
}

function option<S extends z.ZodType>(name: string, schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new ConfigError([name, ...(issue?.path.map(String) ?? [])].join('.'), issue?.message ?? 'is invalid');
}

export function createServiceClient(
  config: ServiceConfigInput,
  options: ServiceClientOptions = {},
): ServiceClient {
  const parsed = parseServiceConfig(config);
  const rateLimits = option('rateLimits', rateLimitsSchema, options.rateLimits ?? {});
  const retry429 = option('retry429', retry429Schema, options.retry429 ?? DEFAULT_RETRY_429);
  const limitsInForce = effectiveRateLimits(rateLimits);
  const transport = createTransport({
    dispatcher: options.dispatcher ?? createDispatcher(parsed.timeouts),
    ownsDispatcher: options.dispatcher === undefined,
    secrets: [parsed.apiKey],
    limiter: createRateLimiter(rateLimits),
    retry429,
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  return {
    jobs: createJobOperations(parsed, transport),
    endpoints: createEndpointOperations(parsed, transport),
    rest: createRestOperations(parsed, transport),
    rateLimit: (operation) => limitsInForce[operation],
    close: () => transport.close(),
  };
}
