import {
  createEndpoint,
  createVolume,
  type EndpointState,
  endpointState,
  type HealthBody,
  healthBody,
  updateEndpoint,
} from './endpoints';
import type { Engine } from './engine';
import { type JobState, jobState, removeJob } from './jobs';
import type { RefusedBy } from './rate-limit';
import {
  controlEndpointSchema,
  describeZodError,
  type EndpointFields,
  type FaultRuleInput,
  faultRuleSchema,
  starveOptionsSchema,
  type WebhookFaultInput,
  webhookFaultSchema,
} from './schemas';
import { type Account, addAccount, type Endpoint } from './store';
import type { WebhookDelivery } from './webhooks';

/** The in-process handle tests use to set the scene and look inside. */
export interface EmulatorControl {
  createEndpoint(
    apiKey: string,
    fields: Partial<EndpointFields> & { name: string; templateId: string },
  ): EndpointState;
  createNetworkVolume(apiKey: string, id?: string): { id: string };
  injectFault(rule: FaultRuleInput): () => void;
  webhookFaults(rule: WebhookFaultInput): () => void;
  submissions(endpointId: string): number;
  /** Requests to the endpoint the rate limits refused (429), by operation (run, status, ...). */
  throttled(endpointId: string): Record<string, number>;
  /**
   * The same refusals by operation and by the limit that refused them: the window's rate or the
   * requests in flight (`{ status: { rate: 3, concurrent: 1 } }`).
   */
  throttledBy(endpointId: string): Record<string, Partial<Record<RefusedBy, number>>>;
  webhookDeliveries(): WebhookDelivery[];
  job(jobId: string): JobState | undefined;
  /**
   * The jobs the service holds (of one endpoint, or all). `removed`: also the remembered snapshots of
   * jobs already gone (deleted at their ttl, expired, ...), as far as the tombstone limit keeps them.
   */
  jobs(endpointId?: string, options?: { removed?: boolean }): JobState[];
  endpoints(apiKey?: string): EndpointState[];
  now(): number;
  reset(): void;

  // Additions to docs/CONTRACTS.md:
  /** Moves service time forward by `ms`, firing every timer that falls due (retention, ttl...). */
  advance(ms: number): void;
  /**
   * Stops service time from following real time: from now on only `advance` moves it, so a test
   * decides when a job starts, finishes or expires (timers already due still fire). Idempotent.
   */
  freeze(): void;
  /** Lets service time follow real time again, at the time scale, from where it stands. */
  resume(): void;
  /** Changes an endpoint as a GraphQL update would (workersMin/Max, template, flashBootType...). */
  updateEndpoint(endpointId: string, changes: Partial<Omit<EndpointFields, 'id'>>): EndpointState;
  /** The /health body of an endpoint, without going through HTTP or the rate limits. */
  health(endpointId: string): HealthBody;
  /**
   * The service has no workers for the endpoint (GPUs run out) until `restoreEndpoint`, or until
   * service time `until` (as `now()` counts it): its jobs wait IN_QUEUE, /health counts the workers
   * it wants as `throttled`, jobs already running finish. Starving again replaces `until`.
   */
  starveEndpoint(endpointId: string, options?: { until?: number }): EndpointState;
  /** Ends a starvation: throttled workers cold-start and take the queued jobs in order. Idempotent. */
  restoreEndpoint(endpointId: string): EndpointState;
  /** REST creation picks the first available of gpuTypeIds; every type is available unless set here. */
  setGpuAvailability(gpuType: string, available: boolean): void;
  /** Adds an API key; a new `id` (or none) makes a new account, an existing id adds a key to it. */
  addAccount(apiKey: string, id?: string): { id: string };
}

export function createControl(engine: Engine): EmulatorControl {
  const { store, clock } = engine;

  const accountFor = (apiKey: string): Account => {
    const account = store.accountByKey.get(apiKey);
    if (!account) throw new Error('no account has this api key');
    return account;
  };
  const endpointFor = (endpointId: string): Endpoint => {
    const endpoint = store.endpoints.get(endpointId);
    if (!endpoint) throw new Error(`endpoint ${endpointId} not found`);
    return endpoint;
  };

  return {
    createEndpoint(apiKey, fields) {
      const account = accountFor(apiKey);
      const parsed = controlEndpointSchema.safeParse(fields);
      if (!parsed.success) throw new Error(`invalid endpoint: ${describeZodError(parsed.error)}`);
      clock.runDue();
      return endpointState(engine, createEndpoint(engine, account, parsed.data));
    },
    createNetworkVolume(apiKey, id) {
      return { id: createVolume(engine, accountFor(apiKey), id).id };
    },
    injectFault(rule) {
      const parsed = faultRuleSchema.safeParse(rule);
      if (!parsed.success) throw new Error(`invalid fault rule: ${describeZodError(parsed.error)}`);
      return engine.faults.add(parsed.data);
    },
    webhookFaults(rule) {
      const parsed = webhookFaultSchema.safeParse(rule);
      if (!parsed.success) throw new Error(`invalid webhook fault: ${describeZodError(parsed.error)}`);
      return engine.webhooks.addFault(parsed.data);
    },
    submissions: (endpointId) => store.submissions.get(endpointId) ?? 0,
    throttled(endpointId) {
      const counts: Record<string, number> = {};
      for (const [key, count] of store.throttled) {
        const [id, operation] = key.split(' ');
        if (id === endpointId && operation !== undefined)
          counts[operation] = (counts[operation] ?? 0) + count;
      }
      return counts;
    },
    throttledBy(endpointId) {
      const counts: Record<string, Partial<Record<RefusedBy, number>>> = {};
      for (const [key, count] of store.throttled) {
        const [id, operation, rule] = key.split(' ') as [string, string, RefusedBy];
        if (id !== endpointId) continue;
        const byRule = counts[operation] ?? {};
        byRule[rule] = (byRule[rule] ?? 0) + count;
        counts[operation] = byRule;
      }
      return counts;
    },
    webhookDeliveries: () => engine.webhooks.deliveries(),
    job(jobId) {
      clock.runDue();
      const job = store.jobs.get(jobId);
      if (job) return jobState(engine, job);
      return store.tombstones.get(jobId) as JobState | undefined;
    },
    jobs(endpointId, options) {
      clock.runDue();
      const source = endpointId === undefined ? store.jobs.values() : endpointFor(endpointId).jobs.values();
      const live = [...source].map((job) => jobState(engine, job));
      if (!options?.removed) return live;
      const gone = [...store.tombstones.values()] as JobState[];
      return [...live, ...gone.filter((job) => endpointId === undefined || job.endpointId === endpointId)];
    },
    endpoints(apiKey) {
      clock.runDue();
      const source = apiKey === undefined ? store.endpoints.values() : accountFor(apiKey).endpoints.values();
      return [...source].map((endpoint) => endpointState(engine, endpoint));
    },
    now: () => clock.now(),
    reset() {
      clock.runDue();
      for (const endpoint of store.endpoints.values()) {
        // Queued jobs first, so a freed worker finds nothing left to start.
        for (const job of [...endpoint.queue.values()]) removeJob(engine, job, 'reset');
        for (const job of [...endpoint.jobs.values()]) removeJob(engine, job, 'reset');
      }
      store.tombstones.clear();
      store.submissions.clear();
      store.throttled.clear();
      engine.faults.clear();
      engine.webhooks.clear();
      engine.rateLimiter.reset();
      for (const endpoint of store.endpoints.values()) engine.scheduler.restore(endpoint);
    },
    advance(ms) {
      clock.advance(ms);
    },
    freeze() {
      clock.runDue();
      clock.freeze();
    },
    resume() {
      clock.resume();
    },
    updateEndpoint(endpointId, changes) {
      clock.runDue();
      const endpoint = endpointFor(endpointId);
      const account = store.accounts.get(endpoint.accountId)!;
      const merged = controlEndpointSchema.safeParse({ ...endpoint.fields, ...changes });
      if (!merged.success) throw new Error(`invalid endpoint: ${describeZodError(merged.error)}`);
      const { id: _ignored, ...values } = merged.data;
      return endpointState(engine, updateEndpoint(engine, account, endpoint, values));
    },
    health(endpointId) {
      clock.runDue();
      return healthBody(engine, endpointFor(endpointId));
    },
    starveEndpoint(endpointId, options = {}) {
      clock.runDue();
      const endpoint = endpointFor(endpointId);
      const parsed = starveOptionsSchema(clock.now()).safeParse(options);
      if (!parsed.success) throw new Error(`invalid starvation: ${describeZodError(parsed.error)}`);
      engine.scheduler.starve(endpoint, parsed.data.until ?? null);
      return endpointState(engine, endpoint);
    },
    restoreEndpoint(endpointId) {
      clock.runDue();
      const endpoint = endpointFor(endpointId);
      engine.scheduler.restore(endpoint);
      return endpointState(engine, endpoint);
    },
    setGpuAvailability(gpuType, available) {
      store.gpuAvailability.set(gpuType, available);
    },
    addAccount(apiKey, id) {
      return { id: addAccount(store, apiKey, id).id };
    },
  };
}
