import type { AddressInfo } from 'node:net';
import { createControl, type EmulatorControl } from './control';
import { createEngine } from './create-engine';
import { describeZodError, type EmulatorOptions, emulatorOptionsSchema } from './schemas';
import { applySeed, loadSeed } from './seed';
import { buildServer } from './server';
import { addAccount } from './store';

export type { EmulatorControl } from './control';
export type { EndpointState, HealthBody } from './endpoints';
export type { OomInput, ScriptedInput } from './handlers';
export { oomInputSchema, scriptedInputSchema, TEMPLATES } from './handlers';
export type { JobState, StatusBody } from './jobs';
export type { JobStatusValue, RateOperation } from './limits';
export { GPU_TIERS, JOB_STATUSES, LIMITS, RATE_LIMITS } from './limits';
export type { WorkerCounts } from './queue/scheduler';
export type { RefusedBy } from './rate-limit';
export type {
  EmulatorOptions,
  EndpointFields,
  FaultOperation,
  FaultRuleInput as FaultRule,
  SeedFile,
  WebhookFaultInput as WebhookFaultRule,
} from './schemas';
export {
  emulatorOptionsSchema,
  endpointFieldsSchema,
  FAULT_OPERATIONS,
  faultRuleSchema,
  seedFileSchema,
  webhookFaultSchema,
} from './schemas';
export type { RemovalReason } from './store';
export type { WebhookDelivery } from './webhooks';

export interface Emulator {
  /** Job operations base, e.g. http://127.0.0.1:PORT/v2 */
  apiUrl: string;
  /** http://127.0.0.1:PORT/graphql */
  graphqlUrl: string;
  /** REST base, e.g. http://127.0.0.1:PORT/v1 */
  restUrl: string;
  /** Addition: the port actually bound (useful with port 0). */
  port: number;
  control: EmulatorControl;
  /** Stops serving, clears every timer and aborts webhook calls; idempotent. */
  close(): Promise<void>;
}

export const DEFAULT_API_KEY = 'test-key';

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const parsed = emulatorOptionsSchema.safeParse(options);
  if (!parsed.success) throw new Error(`invalid emulator options: ${describeZodError(parsed.error)}`);
  const resolved = parsed.data;
  const seed = resolved.seed === undefined ? undefined : loadSeed(resolved.seed);

  const engine = createEngine(resolved);
  for (const account of resolved.accounts ?? []) addAccount(engine.store, account.apiKey, account.id);
  if (seed) applySeed(engine, seed);
  if (engine.store.accounts.size === 0) addAccount(engine.store, DEFAULT_API_KEY);

  const app = buildServer(engine);
  try {
    await app.listen({ host: resolved.host, port: resolved.port });
  } catch (error) {
    engine.clock.close();
    await engine.webhooks.close();
    throw error;
  }
  const { port } = app.server.address() as AddressInfo;
  const host = urlHost(resolved.host);
  const origin = `http://${host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    apiUrl: `${origin}/v2`,
    graphqlUrl: `${origin}/graphql`,
    restUrl: `${origin}/v1`,
    port,
    control: createControl(engine),
    close() {
      closing ??= (async () => {
        engine.shutdown.abort();
        engine.clock.close();
        await engine.webhooks.close();
        await app.close();
      })();
      return closing;
    },
  };
}

/** A host clients can dial: wildcard binds are reached on loopback; IPv6 literals need brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
