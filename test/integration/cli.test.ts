/**
 * The CLI against the real stack: the shared dev server, the emulator over HTTP and a worker
 * wired exactly as `npm run worker` wires it (runWorker), a job on a route included. Commands run in-process through runCli,
 * so their output and exit codes are read directly.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../client/cli';
import { type Emulator, startEmulator } from '../../emulator';
import { loadWorkerConfig } from '../../worker/config';
import { createLogger } from '../../worker/logger';
import { runWorker } from '../../worker/run-worker';
import { eventually, quietTemporalRuntime } from '../support/integration';
import { createTempDir, removeTempDir } from '../support/temp-dir';
import { uniqueTaskQueue } from '../support/temporal';

const API_KEY = 'cli-test-key-that-must-never-be-printed';

// The failure test fails a workflow on purpose; the SDK would log it at WARN.
quietTemporalRuntime();

describe('the CLI', () => {
  let emulator: Emulator;
  let connection: Connection;
  let temporal: Client;
  let worker: Promise<void>;
  const stop = new AbortController();
  const taskQueue = uniqueTaskQueue('cli');
  const workdir = createTempDir('cli-test');
  const address = inject('temporalAddress');
  let echoEndpoint: string;
  let scriptedEndpoint: string;

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
    scriptedEndpoint = emulator.control.createEndpoint(API_KEY, {
      name: 'cli-scripted',
      templateId: 'scripted',
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
    removeTempDir(workdir);
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

  it('starts a job on a route: out of memory on the first endpoint, it completes on the second', async () => {
    const oomEndpoint = emulator.control.createEndpoint(API_KEY, {
      name: 'cli-oom',
      templateId: 'oom',
      gpuIds: 'AMPERE_16',
      flashBootType: 'FLASHBOOT',
    }).id;
    const id = uniqueTaskQueue('cli-route');
    const result = await cli(
      'job',
      'start',
      id,
      '--route',
      `${oomEndpoint},${scriptedEndpoint}`,
      '--capacity-failure',
      'out of memory',
      '--input',
      '{"output":"drawn","oomShare":1}',
      '--wait',
    );
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const job = result.json();
    expect(job).toMatchObject({
      status: 'COMPLETED',
      endpointId: scriptedEndpoint,
      output: 'drawn',
      hops: [{ from: oomEndpoint, to: scriptedEndpoint, reason: 'capacity-failure' }],
    });
    // The failed job on the first endpoint and the completed one on the second: one run each.
    expect(job.jobIds).toHaveLength(2);
    expect(emulator.control.job(job.jobIds[0])?.status).toBe('FAILED');
    expect(emulator.control.submissions(oomEndpoint)).toBe(1);
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

  it('tags a job (--tags), lists it by tag with its tags, and refuses a bad tag naming --tags', async () => {
    const id = uniqueTaskQueue('cli-tagged');
    const tag = `run-${id.slice(-8)}`;
    const started = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      echoEndpoint,
      '--input',
      '{"n":2}',
      '--tags',
      `${tag},nightly`,
    );
    expect(started.code).toBe(0);
    await cli('job', 'result', id);
    let listed: Array<{ workflowId: string; tags: string[] }> = [];
    for (let i = 0; i < 50 && listed.length === 0; i++) {
      listed = (await cli('job', 'list', '--tag', tag)).json();
      if (!listed.length) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(listed.map(({ workflowId, tags }) => ({ workflowId, tags }))).toEqual([
      { workflowId: id, tags: [tag, 'nightly'] },
    ]);
    const bad = await cli(
      'job',
      'start',
      uniqueTaskQueue('cli-bad-tag'),
      '--endpoint',
      echoEndpoint,
      '--input',
      '{}',
      '--tags',
      'has space',
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^error: --tags: must be 1 to 64 letters/);
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
    expect(badPolicy.err).toContain('--ttl: must be a duration between 10000 and 604800000 ms');
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
    expect(badTier.err).toContain(
      'gpuIds: must be one of AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO',
    );
    const badRetries = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      echoEndpoint,
      '--input',
      '{}',
      '--max-retries',
      'many',
    );
    expect(badRetries.code).toBe(2);
    expect(badRetries.err).toContain('--max-retries: must be an integer');
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

  /** Polls fast, so a test never waits on the schedule made for hour-long jobs. */
  const FAST = JSON.stringify({ polling: { initialInterval: 100, maxInterval: 250 } });

  /** Starts a job that runs until cancelled (a week of executionTimeout) and waits until it runs. */
  async function startHangingJob(id: string) {
    const started = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      scriptedEndpoint,
      '--input',
      '{"hang":true}',
      '--execution-timeout',
      '604800000',
      '--options',
      FAST,
    );
    expect(started.code).toBe(0);
    return eventually(async () => {
      const status = await cli('job', 'status', id);
      if (status.code !== 0) return undefined;
      const snapshot = status.json();
      // The start as the workflow's wait last saw it (the workflow records only the job's end).
      return (snapshot.live?.status ?? snapshot.status) === 'IN_PROGRESS' ? snapshot : undefined;
    });
  }

  it('exits 1 and prints the failure type when the job fails', async () => {
    const id = uniqueTaskQueue('cli-fail');
    const failed = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      scriptedEndpoint,
      '--input',
      '{"fail":"weights not found"}',
      '--options',
      FAST,
      '--wait',
    );
    expect(failed.code).toBe(1);
    expect(failed.out).toBe('');
    expect(failed.err).toMatch(/^error: JobFailed: .*weights not found/);
    // The same through `job result`, for a job that already ended.
    const again = await cli('job', 'result', id);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/^error: JobFailed: /);
  });

  it('job cancel: cancels the workflow, which cancels the remote job first', async () => {
    const id = uniqueTaskQueue('cli-cancel');
    const running = await startHangingJob(id);
    const cancelled = await cli('job', 'cancel', id);
    expect(cancelled.code).toBe(0);
    expect(cancelled.json()).toEqual({ workflowId: id, cancelRequested: true });

    const result = await cli('job', 'result', id);
    expect(result.code).toBe(1);
    expect((await temporal.workflow.getHandle(id).describe()).status.name).toBe('CANCELLED');
    expect(emulator.control.job(running.jobId)?.status).toBe('CANCELLED');
    expect((await cli('job', 'status', id)).json()).toMatchObject({
      phase: 'cancelled',
      remoteCancel: { sent: true, status: 'CANCELLED' },
    });
  });

  it("job extend-ttl: sets the remote job's ttl through the workflow, or refuses a bad value", async () => {
    const id = uniqueTaskQueue('cli-ttl');
    const running = await startHangingJob(id);
    const TWO_DAYS = 172_800_000;

    const refused = await cli('job', 'extend-ttl', id, '5');
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('ttl: must be a duration between 10000 and 604800000 ms');

    const extended = await cli('job', 'extend-ttl', id, String(TWO_DAYS));
    expect(extended.code).toBe(0);
    expect(extended.json()).toEqual({ workflowId: id, ttlRequested: TWO_DAYS });
    // The workflow sent /status?ttl=: the service counts the new ttl from submission, and so does
    // the workflow's own deadline.
    const job = await eventually(() => {
      const state = emulator.control.job(running.jobId);
      return state?.policy.ttl === TWO_DAYS ? state : undefined;
    });
    expect(job.ttlDeadline).toBe(job.submittedAt + TWO_DAYS);
    const snapshot = await eventually(async () => {
      const now = (await cli('job', 'status', id)).json();
      return now.timings.ttlDeadline === now.timings.submittedAt + TWO_DAYS ? now : undefined;
    });
    expect(snapshot.ttlExtensionError).toBeUndefined();

    expect((await cli('job', 'cancel', id)).code).toBe(0);
    expect((await cli('job', 'result', id)).code).toBe(1);
  });

  it('job result --store: reads a large output back from the result store', async () => {
    const id = uniqueTaskQueue('cli-large');
    const large = 'x'.repeat(5_000);
    const started = await cli(
      'job',
      'start',
      id,
      '--endpoint',
      scriptedEndpoint,
      '--input',
      JSON.stringify({ output: { large } }),
      '--options',
      JSON.stringify({
        outputInlineMaxBytes: 1_000,
        polling: { initialInterval: 100, maxInterval: 250 },
      }),
      '--wait',
    );
    expect(started.code).toBe(0);
    // Too large to come back inline: a reference to the worker's result store.
    expect(started.json()).not.toHaveProperty('output');
    expect(started.json().outputRef).toMatchObject({ kind: 'serverless-result-ref' });

    const resolved = await cli('job', 'result', id, '--store', path.join(workdir, 'results'));
    expect(resolved.code).toBe(0);
    expect(resolved.json().output).toEqual({ large });
    expect(resolved.json()).not.toHaveProperty('outputRef');
  });

  it('--address: connects to the Temporal frontend it names', async () => {
    const id = uniqueTaskQueue('cli-address');
    expect((await cli('job', 'start', id, '--endpoint', echoEndpoint, '--input', '{}', '--wait')).code).toBe(
      0,
    );
    // The CLI's own connection this time, to the address given on the command line.
    const dialed: string[] = [];
    const connections: Connection[] = [];
    let out = '';
    let err = '';
    try {
      const code = await runCli(
        ['--address', address, '--task-queue', taskQueue, 'job', 'status', id],
        { out: (text) => (out += text), err: (text) => (err += text) },
        async (options) => {
          dialed.push(options.address);
          const own = await Connection.connect({ address: options.address });
          connections.push(own);
          return new Client({ connection: own, namespace: options.namespace });
        },
      );
      expect(err).toBe('');
      expect(code).toBe(0);
      expect(JSON.parse(out)).toMatchObject({ status: 'COMPLETED' });
      // The flag's value (the dev server's random port), not the default 127.0.0.1:7233.
      expect(dialed).toEqual([address]);
    } finally {
      for (const own of connections) await own.close();
    }
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
