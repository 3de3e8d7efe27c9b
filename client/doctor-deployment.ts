/**
 * The doctor's checks of what the worker itself uses (client/doctor.ts): the service's API key and
 * endpoints, the webhook URL from outside the worker process, and the result store.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { createServiceClient } from '../api';
import { ServiceError } from '../api/errors';
import type { S3StoreOptions } from '../stores/s3-client';
import { openStores, type StoreLocation, storeName } from '../stores/store-location';
import { secretValues, type WorkerConfig } from '../worker/config';
import { type DoctorCheck, messageOf } from './doctor-check';

export async function checkService(
  config: WorkerConfig,
  endpoints: readonly string[],
): Promise<DoctorCheck[]> {
  const secrets = secretValues(config);
  const service = createServiceClient(config.service);
  const checks: DoctorCheck[] = [];
  try {
    try {
      const listed = await service.endpoints.list({ signal: AbortSignal.timeout(10_000) });
      checks.push({
        check: 'service-api-key',
        verdict: 'pass',
        detail: `the service accepts SERVERLESS_API_KEY (${listed.length} endpoint(s) on the account)`,
      });
    } catch (error) {
      const status = error instanceof ServiceError ? error.status : undefined;
      const refused = status === 401 || status === 403;
      checks.push({
        check: 'service-api-key',
        verdict: 'fail',
        detail: refused
          ? `the service refused SERVERLESS_API_KEY (${status})`
          : `cannot reach the service: ${messageOf(error, secrets)}`,
        fix: refused
          ? "set SERVERLESS_API_KEY to a valid key of the account (the console's API keys page); a read-only key cannot run jobs"
          : 'check SERVERLESS_GRAPHQL_URL and the network from the worker to the service',
      });
      return [
        ...checks,
        ...endpoints.map((id) => ({
          check: `endpoint ${id}`,
          verdict: 'skip' as const,
          detail: 'the API key does not work',
        })),
      ];
    }
    for (const id of endpoints) {
      try {
        const health = await service.jobs.health(id, { signal: AbortSignal.timeout(10_000) });
        const workers = health.workers.idle + health.workers.running;
        checks.push({
          check: `endpoint ${id}`,
          verdict: 'pass',
          detail: `healthy: ${health.workers.idle} worker(s) idle, ${health.workers.running} running; ${health.jobs.inQueue} job(s) in queue, ${health.jobs.inProgress} in progress${workers === 0 ? ' (it scales from zero on the next job)' : ''}`,
        });
      } catch (error) {
        const status = error instanceof ServiceError ? error.status : undefined;
        checks.push({
          check: `endpoint ${id}`,
          verdict: 'fail',
          detail:
            status === 404
              ? `no endpoint "${id}" on this account`
              : `health check failed: ${messageOf(error, secrets)}`,
          fix:
            status === 404
              ? 'check the endpoint id (durable-serverless endpoint list shows them, or the console)'
              : 'check SERVERLESS_API_URL and the endpoint in the console',
        });
      }
    }
    return checks;
  } finally {
    await service.close();
  }
}

export async function checkWebhook(config: WorkerConfig): Promise<DoctorCheck> {
  const { publicUrl, secret } = config.webhook;
  if (!publicUrl) {
    return {
      check: 'webhook',
      verdict: 'skip',
      detail: 'WEBHOOK_PUBLIC_URL is not set: jobs are polled, no webhook URL is handed to the service',
    };
  }
  if (!secret) {
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: 'WEBHOOK_SECRET is not set',
      fix: 'set WEBHOOK_SECRET (32 characters or more) on the worker and the gateway',
    };
  }
  try {
    const response = await request(`${publicUrl}/healthz`, {
      headersTimeout: 5_000,
      bodyTimeout: 5_000,
    });
    await response.body.dump();
    if (response.statusCode === 200) {
      return {
        check: 'webhook',
        verdict: 'pass',
        detail: `${publicUrl} answers from here (outside the worker process); WEBHOOK_SECRET is set`,
      };
    }
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: `${publicUrl}/healthz answers ${response.statusCode}, not the gateway's 200`,
      fix: 'WEBHOOK_PUBLIC_URL must lead to the gateway (its /healthz answers 200): check the proxy or ingress in front of it',
    };
  } catch (error) {
    return {
      check: 'webhook',
      verdict: 'fail',
      detail: `${publicUrl} is not reachable from here: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      fix: 'WEBHOOK_PUBLIC_URL must be the address the service can reach the gateway at (WEBHOOK_PORT, a public host or ingress), not a loopback one',
    };
  }
}

/** An S3 store: the bucket checked as the worker checks it, then a probe written and read back. */
export async function checkS3Store(
  location: StoreLocation,
  options: S3StoreOptions,
  secrets: readonly string[],
): Promise<DoctorCheck> {
  const name = storeName(location);
  try {
    const stores = await openStores(location, options);
    await stores.check();
    const probe = { doctor: randomUUID() };
    // One fixed key: each doctor run overwrites the last one's probe instead of adding objects.
    const ref = await stores.resultStore.put('durable-serverless-doctor/probe.json', probe);
    const read = (await stores.resultStore.get(ref)) as typeof probe;
    if (read.doctor !== probe.doctor) throw new Error('read back something else');
    return { check: 'store', verdict: 'pass', detail: `${name} is readable and writable` };
  } catch (error) {
    return {
      check: 'store',
      verdict: 'fail',
      detail: `${name} is not readable and writable: ${messageOf(error, secrets)}`,
      fix: 'check RESULT_STORE_URL (the bucket and prefix), RESULT_STORE_ENDPOINT and REGION, and the AWS credentials the worker has',
    };
  }
}

export function checkStore(dir: string): DoctorCheck {
  const probe = path.join(dir, `.doctor-${randomUUID()}`);
  const text = `durable-serverless doctor ${Date.now()}`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(probe, text);
    if (readFileSync(probe, 'utf8') !== text) throw new Error('read back something else');
    return { check: 'store', verdict: 'pass', detail: `${dir} is readable and writable` };
  } catch (error) {
    return {
      check: 'store',
      verdict: 'fail',
      detail: `${dir} is not readable and writable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      fix: "set RESULT_STORE_DIR (or RESULT_STORE_URL) to a directory the worker's user can write (a volume shared by every worker), or an s3:// store",
    };
  } finally {
    try {
      rmSync(probe, { force: true });
    } catch {
      // Nothing was written: the failure is reported above.
    }
  }
}
