/**
 * The CLI against the real stack: the shared dev server, the emulator over HTTP and a worker
 * wired exactly as `npm run worker` wires it (runWorker). Commands run in-process through runCli,
 * so their output and exit codes are read directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../client/cli';
import { type Emulator, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { uniqueTaskQueue } from '../support/temporal';

const API_KEY = 'cli-test-key-that-must-never-be-printed';

describe('the CLI', () => {
  let emulator: Emulator;
  let connection: Connection;
  let temporal: Client;
  let worker: Promise<void>;
  const stop = new AbortController();
  const taskQueue = uniqueTaskQueue('cli');
  const workdir = mkdtempSync(path.join(tmpdir(), 'cli-test-'));
  const address = inject('temporalAddress');
  let echoEndpoint: string;

  /** Runs one command; resolves to its exit code and what it printed. */
  async function cli(...args: string[]) {
    let out = '';
    let err = '';
    const code = await runCli(
      ['--address', address, '--task-queue', taskQueue, ...args],
      { out: (text) => (out += text), err: (text) => (err += text) },
      async () => temporal,
    );
    return { code, out, err, json: () => JSON.parse(out) };
  }

  beforeAll(async () => {
    emulator = await startEmulator({ accounts: [{ apiKey: API_KEY }], timeScale: 50 });
    echoEndpoint = emulator.control.createEndpoint(API_KEY, {
      name: 'cli-echo',
      templateId: 'echo',
      flashBootType: 'FLASHBOOT',
    }).id;
    connection = await Connection.connect({ address });
    temporal = new Client({ connection });
    const config = loadWorkerConfig(
      {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        SERVERLESS_API_KEY: API_KEY,
        SERVERLESS_API_URL: emulator.apiUrl,
        SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
        SERVERLESS_REST_URL: emulator.restUrl,
        RESULT_STORE_DIR: path.join(workdir, 'results'),
      },
      workdir,
    );
    await new Promise<void>((resolve, reject) => {
      worker = runWorker(config, {
        signal: stop.signal,
        logger: createLogger({ level: 'error', secrets: [API_KEY] }),
        onReady: () => resolve(),
      });
      worker.catch(reject);
    });
  });

  afterAll(async () => {
    stop.abort();
    await worker?.catch(() => undefined);
    await connection?.close();
    await emulator?.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  it('starts a job, waits for it and prints its output', async () => {
    const id = uniqueTaskQueue('cli-job');
    const result = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      echoEndpoint,
      '--input',
      '{"prompt":"hi"}',
      '--wait',
    );
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.json()).toMatchObject({ status: 'COMPLETED', output: { prompt: 'hi' } });
    const { jobId } = result.json();
    expect(emulator.control.job(jobId)?.status).toBe('COMPLETED');
  });

  it('shows a job snapshot, its result again, and finds it by endpoint and job id', async () => {
    const id = uniqueTaskQueue('cli-job');
    expect((await cli('job', 'start', id, '--endpoint', echoEndpoint, '--input', '{"n":1}')).json()).toEqual({
      workflowId: id,
      started: true,
    });
    const result = (await cli('job', 'result', id)).json();
    expect(result.output).toEqual({ n: 1 });
    const snapshot = (await cli('job', 'status', id)).json();
    expect(snapshot).toMatchObject({ status: 'COMPLETED', jobId: result.jobId });
    // Visibility is eventually consistent: the listing catches up within moments.
    let listed: Array<{ workflowId: string }> = [];
    for (let i = 0; i < 50 && !listed.some((entry) => entry.workflowId === id); i++) {
      listed = (await cli('job', 'list', '--job-id', result.jobId)).json();
      if (!listed.length) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(listed.map((entry) => entry.workflowId)).toEqual([id]);
    const byEndpoint = (await cli('job', 'list', '--endpoint', echoEndpoint, '--limit', '100')).json();
    expect(byEndpoint.map((entry: { workflowId: string }) => entry.workflowId)).toContain(id);
  });

  it('refuses bad input with the field and the rule, and starts nothing', async () => {
    const id = uniqueTaskQueue('cli-bad');
    const badPolicy = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      echoEndpoint,
      '--input',
      '{}',
      '--ttl',
      '5',
    );
    expect(badPolicy.code).toBe(2);
    expect(badPolicy.err).toMatch(/request\.policy\.ttl/);
    const badJson = await cli('job', 'start', id, '--endpoint', echoEndpoint, '--input', '{nope');
    expect(badJson.code).toBe(2);
    expect(badJson.err).toContain('--input: must be JSON');
    const badMode = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      echoEndpoint,
      '--input',
      '{}',
      '--mode',
      'fast',
    );
    expect(badMode.code).toBe(2);
    expect(badMode.err).toContain('--mode: must be one of async, sync, runsync');
    const badTier = await cli('endpoint', 'provision', '--spec', '{"templateId":"echo","gpuIds":"H100"}');
    expect(badTier.code).toBe(2);
    expect(badTier.err).toContain('gpuIds');
    await expect(temporal.workflow.getHandle(id).describe()).rejects.toThrow(/not found/i);
  });

  it('provisions, updates and tears down an endpoint', async () => {
    const name = `cli-endpoint-${Date.now()}`;
    const spec = JSON.stringify({
      name,
      templateId: 'echo',
      gpuIds: 'AMPERE_24',
      workersMax: 2,
      idleTimeout: 7,
    });
    const provisioned = await cli('endpoint', 'provision', '--spec', spec);
    expect(provisioned.err).toBe('');
    const { endpointId } = provisioned.json();
    expect(emulator.control.endpoints(API_KEY).find((endpoint) => endpoint.id === endpointId)).toMatchObject({
      name,
      workersMax: 2,
    });

    const updated = await cli('endpoint', 'update', endpointId, '--changes', '{"workersMax":3}');
    expect(updated.code).toBe(0);
    expect(updated.json()).toMatchObject({ id: endpointId, name, workersMax: 3, idleTimeout: 7 });

    const teardown = await cli('endpoint', 'teardown', endpointId);
    expect(teardown.code).toBe(0);
    expect(emulator.control.endpoints(API_KEY).some((endpoint) => endpoint.id === endpointId)).toBe(false);
    const phase = (await cli('endpoint', 'phase', `endpoint-teardown:${endpointId}`)).json();
    expect(phase.phase).toBe('done');
  });

  it('never prints the API key', async () => {
    const outputs = await Promise.all([
      cli('job', 'start', uniqueTaskQueue('cli-key'), '--endpoint', echoEndpoint, '--input', '{}', '--wait'),
      cli('job', 'status', 'no-such-workflow'),
      cli('--help'),
    ]);
    for (const { out, err } of outputs) expect(`${out}${err}`).not.toContain(API_KEY);
  });
});
