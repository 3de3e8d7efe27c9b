/**
 * The worker, the gateway, the CLI and the facade's helper against a Temporal frontend that
 * demands TLS with a private CA and a server name, a client certificate (mTLS) and an API key:
 * the real dev server behind a terminating proxy (test/support/tls.ts), as a cluster sits behind
 * a load balancer or Temporal Cloud's edge. Each is configured only through Temporal's
 * environment variables, as a deployment would be.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../client/cli';
import { connectionOptions, connectTemporalClient, loadTemporalConnection } from '../../client/connection';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker, type WorkerReadyInfo } from '../../worker/run-worker';
import { webhookUrlFor } from '../../worker/webhook-token';
import { stackCheck } from '../../workflows/shared/stack-check';
import { eventually, quietTemporalRuntime } from '../support/integration';
import { removeTempDir } from '../support/temp-dir';
import { uniqueTaskQueue } from '../support/temporal';
import {
  createTestPki,
  startTlsFrontend,
  type TestPki,
  TLS_SERVER_NAME,
  type TlsFrontend,
} from '../support/tls';
import { captureLines } from '../worker/capture';

const API_KEY = 'tls-test-api-key-never-logged-0123456789';
const WEBHOOK_SECRET = 'tls-test-webhook-secret-0123456789abcdef';
const repoRoot = path.resolve(__dirname, '../..');

describe('a Temporal frontend that demands TLS, mTLS and an API key', () => {
  let pki: TestPki;
  let frontend: TlsFrontend;
  /** Every TEMPORAL_* variable a deployment sets for such a cluster (files for the certificates). */
  let tlsEnv: Record<string, string>;

  beforeAll(async () => {
    quietTemporalRuntime();
    pki = createTestPki();
    frontend = await startTlsFrontend({ target: inject('temporalAddress'), pki, apiKey: API_KEY });
    tlsEnv = {
      TEMPORAL_ADDRESS: frontend.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCertPath,
      TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCertPath,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKeyPath,
      TEMPORAL_API_KEY: API_KEY,
    };
  });
  afterAll(async () => {
    await frontend?.close();
    if (pki) removeTempDir(pki.dir);
  });

  it('a worker (runWorker) and the facade helper run a workflow through it; nothing secret is logged', async () => {
    const taskQueue = uniqueTaskQueue('tls-worker');
    const config = loadWorkerConfig({
      ...tlsEnv,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SERVERLESS_API_KEY: 'service-key',
      SERVERLESS_API_URL: 'http://127.0.0.1:9/v2',
      SERVERLESS_GRAPHQL_URL: 'http://127.0.0.1:9/graphql',
      SERVERLESS_REST_URL: 'http://127.0.0.1:9/v1',
      WORKER_HEALTH_PORT: '0',
    });
    const logs = captureLines();
    const controller = new AbortController();
    let ready!: (info: WorkerReadyInfo) => void;
    const isReady = new Promise<WorkerReadyInfo>((resolve) => {
      ready = resolve;
    });
    const running = runWorker(config, {
      signal: controller.signal,
      logger: createLogger({ destination: logs, secrets: ['service-key'] }),
      onReady: ready,
    });
    running.catch(() => undefined);
    const info = await Promise.race([isReady, running.then(() => Promise.reject(new Error('stopped')))]);

    // The facade's helper, from the same variables.
    const client = await connectTemporalClient({}, { env: tlsEnv });
    try {
      const result = await client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId: uniqueTaskQueue('tls-stack-check'),
        args: [{ name: 'tls', wait: '10 ms' }],
      });
      expect(result).toContain(`hello tls, after 10 ms from ${taskQueue}`);
      // Readiness asks the frontend too, through the same TLS connection.
      const readiness = await request(`${info.healthUrl}/readyz`);
      expect(readiness.statusCode).toBe(200);
      expect(await readiness.body.json()).toMatchObject({ temporal: 'reachable' });
    } finally {
      await client.connection.close();
      controller.abort();
      await running;
    }
    expect(frontend.counts.forwarded).toBeGreaterThan(0);
    const text = logs.text();
    expect(text).toContain('"tls":"mtls"');
    expect(text).toContain('"auth":"api-key"');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('PRIVATE KEY');
  });

  it('the CLI reads the same variables (inline PEM here) and lists jobs through it', async () => {
    let out = '';
    let err = '';
    const code = await runCli(
      ['job', 'list', '--limit', '1'],
      { out: (text) => (out += text), err: (text) => (err += text) },
      undefined,
      {
        TEMPORAL_ADDRESS: frontend.address,
        TEMPORAL_TLS_SERVER_CA_CERT_DATA: pki.read(pki.caCertPath),
        TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
        TEMPORAL_TLS_CLIENT_CERT_DATA: pki.read(pki.clientCertPath),
        TEMPORAL_TLS_CLIENT_KEY_DATA: pki.read(pki.clientKeyPath),
        TEMPORAL_API_KEY: API_KEY,
      },
    );
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(Array.isArray(JSON.parse(out))).toBe(true);
  });

  it('the standalone gateway (its entry point) signals through it', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'worker/gateway-main.ts'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...tlsEnv,
        WEBHOOK_SECRET,
        WEBHOOK_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const line = await eventually(
        () => output.split('\n').find((candidate) => candidate.includes('webhook gateway running')),
        60_000,
      );
      const { listening } = JSON.parse(line) as { listening: string };
      // 200 for a workflow that does not exist means Temporal answered "not found"; an unreachable
      // Temporal would be a 503.
      const refusedBefore = frontend.counts.refused;
      const forwardedBefore = frontend.counts.forwarded;
      const late = await request(webhookUrlFor(listening, WEBHOOK_SECRET, 'tls-no-such-workflow'), {
        method: 'POST',
        body: JSON.stringify({ id: 'job-1', status: 'COMPLETED' }),
      });
      await late.body.dump();
      expect(late.statusCode).toBe(200);
      expect(frontend.counts.forwarded).toBeGreaterThan(forwardedBefore);
      expect(frontend.counts.refused).toBe(refusedBefore);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(output).toContain('"tls":"mtls"');
    expect(output).not.toContain(API_KEY);
  });

  it("a TOML profile (Temporal CLI's file) carries the same settings: the worker, the CLI and the client connect", async () => {
    const configFile = path.join(pki.dir, 'temporal.toml');
    writeFileSync(
      configFile,
      [
        '[profile.secured]',
        `address = "${frontend.address}"`,
        `api_key = "${API_KEY}"`,
        '[profile.secured.tls]',
        `server_name = "${TLS_SERVER_NAME}"`,
        `server_ca_cert_path = "${pki.caCertPath}"`,
        `client_cert_path = "${pki.clientCertPath}"`,
        `client_key_path = "${pki.clientKeyPath}"`,
        '',
      ].join('\n'),
    );
    const profileEnv = { TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'secured' };
    const taskQueue = uniqueTaskQueue('tls-profile');
    const config = loadWorkerConfig({
      ...profileEnv,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SERVERLESS_API_KEY: 'service-key',
      SERVERLESS_API_URL: 'http://127.0.0.1:9/v2',
      SERVERLESS_GRAPHQL_URL: 'http://127.0.0.1:9/graphql',
      SERVERLESS_REST_URL: 'http://127.0.0.1:9/v1',
      WORKER_HEALTH_PORT: '0',
    });
    const controller = new AbortController();
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const running = runWorker(config, {
      signal: controller.signal,
      logger: createLogger({ destination: captureLines(), secrets: ['service-key'] }),
      onReady: () => ready(),
    });
    running.catch(() => undefined);
    await Promise.race([isReady, running.then(() => Promise.reject(new Error('stopped')))]);
    const client = await connectTemporalClient({}, { env: profileEnv });
    try {
      const result = await client.workflow.execute(stackCheck, {
        taskQueue,
        workflowId: uniqueTaskQueue('tls-profile-check'),
        args: [{ name: 'profile', wait: '10 ms' }],
      });
      expect(result).toContain(`hello profile, after 10 ms from ${taskQueue}`);
    } finally {
      await client.connection.close();
      controller.abort();
      await running;
    }
    let out = '';
    let err = '';
    const code = await runCli(
      ['job', 'list', '--limit', '1'],
      { out: (text) => (out += text), err: (text) => (err += text) },
      undefined,
      profileEnv,
    );
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(Array.isArray(JSON.parse(out))).toBe(true);
  });

  describe('each missing piece is refused', () => {
    /** Connects once with the given variables, failing fast instead of retrying for 10 s. */
    async function connectWith(env: Record<string, string>) {
      const connection = await Connection.connect({
        ...connectionOptions(loadTemporalConnection(env)),
        connectTimeout: 1_500,
      });
      await connection.close();
    }
    const without = (...names: string[]) =>
      Object.fromEntries(Object.entries(tlsEnv).filter(([name]) => !names.includes(name)));

    it('all of them: connects', async () => {
      await expect(connectWith(tlsEnv)).resolves.toBeUndefined();
    });

    it('no API key: UNAUTHENTICATED', async () => {
      const refusedBefore = frontend.counts.refused;
      await expect(connectWith(without('TEMPORAL_API_KEY'))).rejects.toThrow();
      expect(frontend.counts.refused).toBeGreaterThan(refusedBefore);
    });

    it('no client certificate: the handshake fails', async () => {
      await expect(
        connectWith(without('TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH')),
      ).rejects.toThrow();
    });

    it('a certificate from another CA: the handshake fails', async () => {
      await expect(
        connectWith({
          ...tlsEnv,
          TEMPORAL_TLS_CLIENT_CERT_PATH: pki.strangerCertPath,
          TEMPORAL_TLS_CLIENT_KEY_PATH: pki.strangerKeyPath,
        }),
      ).rejects.toThrow();
    });

    it("without the server's CA, or the server name: the server is not trusted", async () => {
      await expect(connectWith(without('TEMPORAL_TLS_SERVER_CA_CERT_PATH'))).rejects.toThrow();
      await expect(connectWith(without('TEMPORAL_TLS_SERVER_NAME'))).rejects.toThrow();
    });
  });
});
